import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { decodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { ProducerRecord, RecordPosition } from '../../../engine/ports/log.ts';
import { UplinkIngest, type UplinkSubmission } from '../../../engine/uplink/UplinkIngest.ts';
import { rejection } from '../../support/fleetErrors.ts';

/** A log whose appends settle when the test says so. */
class ManualLog {
  calls: { topic: string; records: ProducerRecord[]; settle(error?: unknown): void }[] = [];
  append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
    return new Promise((resolve, reject) => {
      this.calls.push({ topic, records, settle: (error) => (error === undefined ? resolve(records.map((_, i) => ({ partition: 0, offset: i }))) : reject(error)) });
    });
  }
}

const tick = () => new Promise((r) => setImmediate(r));

function submission(deviceId: string, text = '{"a":{"value":1}}'): UplinkSubmission {
  return { channel: 'http', contentType: 'json', deviceId, body: new TextEncoder().encode(text) };
}

test('stamps id and receive time, encodes the envelope, keys it by device, resolves only once durable', async () => {
  const log = new ManualLog();
  const clock = new SimulatedClock(1_700_000_000_000);
  let n = 0;
  const ingest = new UplinkIngest({ log, clock, newId: () => `id${n++}` });
  let settled = false;
  const done = ingest.append({ ...submission('dev1'), asset: 'temperature' }).then((r) => { settled = true; return r; });
  await tick();
  assert.is(log.calls.length, 1);
  const { topic, records } = log.calls[0];
  assert.is(topic, 'uplinks');
  assert.is(records[0].key, 'dev1');
  assert.is(records[0].timestamp, 1_700_000_000_000);
  const env = decodeEnvelope(records[0].value);
  assert.equal({ ...env, body: new TextDecoder().decode(env.body) }, {
    id: 'id0', channel: 'http', contentType: 'json', deviceId: 'dev1', asset: 'temperature', receivedAt: 1_700_000_000_000, body: '{"a":{"value":1}}',
  });
  assert.is(settled, false, 'not before the log confirms');
  assert.is(ingest.pending, 1);
  log.calls[0].settle();
  assert.equal(await done, { id: 'id0', receivedAt: 1_700_000_000_000 });
  assert.is(ingest.pending, 0);
});

test('group commit: while appends are in flight, arrivals wait and go out together', async () => {
  const log = new ManualLog();
  const ingest = new UplinkIngest({ log, clock: new SimulatedClock(), maxConcurrentAppends: 1, maxBatch: 3 });
  const all = Array.from({ length: 6 }, (_, i) => ingest.append(submission(`d${i}`)));
  await tick();
  assert.equal(log.calls.map((c) => c.records.length), [1], 'the first goes alone');
  log.calls[0].settle();
  await tick();
  assert.equal(log.calls.map((c) => c.records.length), [1, 3], 'then a batch of at most maxBatch');
  log.calls[1].settle();
  await tick();
  assert.equal(log.calls.map((c) => c.records.length), [1, 3, 2]);
  assert.equal(log.calls[2].records.map((r) => r.key), ['d4', 'd5'], 'arrival order kept');
  log.calls[2].settle();
  assert.is((await Promise.all(all)).length, 6);
});

test('over maxPending: BACKPRESSURE at once (retriable, with a Retry-After hint); room again once durable', async () => {
  const log = new ManualLog();
  const ingest = new UplinkIngest({ log, clock: new SimulatedClock(), maxPending: 2, retryAfterSeconds: 3 });
  const a = ingest.append(submission('d'));
  const b = ingest.append(submission('d'));
  const refused = await rejection(ingest.append(submission('d')));
  assert.is(refused.code, 'BACKPRESSURE');
  assert.is(refused.retriable, true);
  assert.is(refused.status, 503);
  assert.equal(refused.detail, { retryAfter: 3 });
  await tick();
  assert.is(log.calls.reduce((n, c) => n + c.records.length, 0), 2, 'the refused uplink never reached the log');
  for (const c of log.calls) c.settle();
  await Promise.all([a, b]);
  const c = ingest.append(submission('d'));
  await tick();
  log.calls[log.calls.length - 1].settle();
  await c;
});

test('log failures: transient ones stay retriable, anything else is internal (never a client 4xx)', async () => {
  const log = new ManualLog();
  const ingest = new UplinkIngest({ log, clock: new SimulatedClock() });
  const cases: [unknown, string][] = [
    [new FleetError('UNAVAILABLE', 'broker down'), 'UNAVAILABLE'],
    [new FleetError('TIMEOUT', 'slow'), 'TIMEOUT'],
    [new Error('EIO'), 'UNAVAILABLE'],
    [new FleetError('NOT_FOUND', 'unknown topic uplinks'), 'INTERNAL'],
    [new FleetError('CLOSED', 'log closed'), 'CLOSED'],
  ];
  for (const [error, code] of cases) {
    const p = ingest.append(submission('d'));
    await tick();
    log.calls[log.calls.length - 1].settle(error);
    assert.is((await rejection(p)).code, code);
  }
  assert.is(ingest.pending, 0);
});

test('close(): refuses new uplinks, waits for accepted ones', async () => {
  const log = new ManualLog();
  const ingest = new UplinkIngest({ log, clock: new SimulatedClock() });
  const accepted = ingest.append(submission('d'));
  await tick();
  let closed = false;
  const closing = ingest.close().then(() => { closed = true; });
  assert.is((await rejection(ingest.append(submission('d')))).code, 'CLOSED');
  await tick();
  assert.is(closed, false);
  log.calls[0].settle();
  await accepted;
  await closing;
  assert.is(closed, true);
});

test('a submission the envelope schema refuses is rejected without touching the log', async () => {
  const log = new ManualLog();
  const ingest = new UplinkIngest({ log, clock: new SimulatedClock() });
  const bad = { channel: 'carrier-pigeon', contentType: 'json', deviceId: 'd', body: new Uint8Array() } as unknown as UplinkSubmission;
  const error = await rejection(ingest.append(bad));
  assert.is(error.status >= 500, true);
  assert.is(log.calls.length, 0);
  assert.is(ingest.pending, 0);
});

test('appendThen: the same append without a promise: called back once, never synchronously, when durable or refused', async () => {
  const log = new ManualLog();
  const clock = new SimulatedClock(1_700_000_000_000);
  const ingest = new UplinkIngest({ log, clock, newId: () => 'idA', maxPending: 1 });
  const calls: (string | undefined)[] = [];
  let returned = false;
  const envelope = ingest.appendThen(submission('dev1'), (failure) => {
    assert.ok(returned, 'not called before appendThen returned');
    calls.push(failure?.code ?? 'durable');
  });
  returned = true;
  assert.equal([envelope?.id, envelope?.receivedAt], ['idA', 1_700_000_000_000]);
  await tick();
  assert.equal(calls, [], 'not before the log made it durable');
  // Over maxPending: refused, through the callback, with the same hint as append().
  let full: FleetError | undefined;
  ingest.appendThen(submission('dev2'), (failure) => (full = failure));
  assert.is(full, undefined, 'not synchronously');
  await tick();
  assert.equal([full!.code, full!.retriable, full!.detail], ['BACKPRESSURE', true, { retryAfter: 1 }]);
  log.calls[0].settle();
  await tick();
  assert.equal(calls, ['durable']);
  assert.equal(decodeEnvelope(log.calls[0].records[0].value).id, 'idA');
  // A schema the envelope refuses, and a closed ingest: refused through the callback too.
  let bad: FleetError | undefined;
  assert.is(ingest.appendThen({ ...submission('dev3'), channel: 'carrier-pigeon' as never }, (failure) => (bad = failure)), undefined, 'no envelope for what the schema refuses');
  assert.is(bad, undefined, 'not synchronously');
  await tick();
  assert.is(bad?.code, 'INTERNAL');
  await ingest.close();
  let closed: FleetError | undefined;
  assert.is(ingest.appendThen(submission('dev4'), (failure) => (closed = failure)), undefined);
  await tick();
  assert.is(closed?.code, 'CLOSED');
  assert.is(log.calls.length, 1, 'only the accepted uplink reached the log');
});

test.run();
