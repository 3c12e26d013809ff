/**
 * UplinkPipeline's onStored hook: called with an uplink's rows only after the row sink resolved
 * (durable), never for rejected values, and shielded from the hook's own errors; and, through the
 * engine's StateBatcher inserting at once at low load, no live event for a state whose insert failed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { MemoryDirectory } from '../../../engine/ports/directory.ts';
import type { FleetError } from '../../../engine/kernel/errors.ts';
import { UplinkPipeline, type RowSink } from '../../../engine/uplink/pipeline/UplinkPipeline.ts';
import { StateBatcher } from '../../../engine/uplink/pipeline/StateBatcher.ts';
import { LivePublisher } from '../../../engine/live/LivePublisher.ts';
import { FleetError as Failure } from '../../../engine/kernel/errors.ts';
import type { ProducerRecord } from '../../../engine/ports/log.ts';
import { deviceActors } from '../../../engine/actors/DeviceActors.ts';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { Topics, type StateRow } from '../../../schemas/messages.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { encodeEnvelopeCborX } from '../../support/reference/envelopeCborX.ts';

const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** Holds appended rows until release() — a store that has not made them durable yet. */
class GatedSink implements RowSink {
  held: { rows: readonly StateRow[]; resolve(): void }[] = [];
  async append(rows: readonly StateRow[]): Promise<void> {
    await new Promise<void>((resolve) => this.held.push({ rows, resolve }));
  }
  async flush(): Promise<void> {}
  release(): void {
    for (const h of this.held.splice(0)) h.resolve();
  }
}

test('onStored sees rows only once the sink resolved, and not rejected values', async () => {
  const tmp = tempDir('pipeline-stored');
  const log = createLocalLog({ dir: `${tmp.dir}/log` });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 2 }, { name: Topics.deadLetters, partitions: 1 }]);
  const directory = new MemoryDirectory();
  directory.put({ id: 'd1', assets: [{ id: 'a1', name: 't', is: 'sensor', profile: { type: 'number' } }] });
  const sink = new GatedSink();
  const seen: StateRow[][] = [];
  const errors: FleetError[] = [];
  let calls = 0;
  const pipeline = new UplinkPipeline({
    log, rows: sink, undecided: deviceActors({ directory, clock: systemClock }), clock: systemClock, commitIntervalMs: 20,
    onStored(rows) {
      calls++;
      seen.push([...rows]);
      if (calls === 1) throw new Error('hook failure');
    },
    onError: (e) => errors.push(e),
  });
  await pipeline.start();
  try {
    const envs = [
      { id: 'u1', channel: 'mqtt' as const, contentType: 'json' as const, deviceId: 'd1', receivedAt: 1000, body: json({ t: { value: 1 } }) },
      { id: 'u2', channel: 'mqtt' as const, contentType: 'json' as const, deviceId: 'd1', receivedAt: 1001, body: json({ t: { value: 'x' } }) },
      { id: 'u3', channel: 'mqtt' as const, contentType: 'json' as const, deviceId: 'd1', receivedAt: 1002, body: json({ t: { value: 3 } }) },
    ];
    await log.append(Topics.uplinks, envs.map((e) => ({ key: e.deviceId, value: encodeEnvelope(e) })));
    await waitFor(() => sink.held.length === 2, 5000, 'two row batches held');
    assert.is(calls, 0, 'nothing reported before the sink resolved');
    sink.release();
    await waitFor(() => calls === 2, 5000, 'two onStored calls');
    assert.equal(seen.map((rows) => rows.map((r) => [r.uplinkId, r.value])), [[['u1', 1]], [['u3', 3]]]);
    assert.is(errors.length, 1, 'the hook failure is reported');
    assert.is(errors[0].code, 'INTERNAL');
    assert.is(pipeline.failure, undefined, 'a hook failure does not stop the pipeline');
  } finally {
    await pipeline.stop();
    await log.close();
    tmp.remove();
  }
});

test('a forged record whose carried state could not be stored is dead-lettered at the log boundary; the uplinks around it are stored', async () => {
  const tmp = tempDir('pipeline-forged');
  const log = createLocalLog({ dir: `${tmp.dir}/log` });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 1 }, { name: Topics.deadLetters, partitions: 1 }]);
  const stored: StateRow[] = [];
  const dead: string[] = [];
  const pipeline = new UplinkPipeline({
    log, rows: { append: async (rows) => { stored.push(...rows); }, flush: async () => {} }, undecided: deviceActors({ directory: new MemoryDirectory(), clock: systemClock }), clock: systemClock, commitIntervalMs: 20,
    onDeadLetters: (letters) => { dead.push(...letters.map((l) => `${l.code}:${l.envelope.deviceId}`)); },
  });
  await pipeline.start();
  try {
    const admitted = (id: string, value: unknown) => ({
      id, channel: 'http' as const, contentType: 'json' as const, deviceId: 'd1', receivedAt: 1000, body: new Uint8Array(0),
      admitted: { states: [['t', 1000, value]] as [string, number, unknown][], dropped: [] },
    });
    // encodeEnvelope refuses a value no store could hold; a forger's writer (cbor-x) does not, and the reader does.
    const records = [admitted('u1', 1), admitted('u2', Number.NaN), admitted('u3', 3)].map((e) => ({ key: 'd1', value: (Number.isNaN(e.admitted.states[0][2]) ? encodeEnvelopeCborX : encodeEnvelope)(e) }));
    await log.append(Topics.uplinks, records);
    await waitFor(() => stored.length === 2 && dead.length === 1, 5000, 'two stored, one dead letter');
    assert.equal(stored.map((r) => [r.uplinkId, r.value]), [['u1', 1], ['u3', 3]]);
    assert.equal(dead, ['MALFORMED_PAYLOAD:d1']);
    assert.is(pipeline.failure, undefined);
  } finally {
    await pipeline.stop();
    await log.close();
    tmp.remove();
  }
});

test('a state whose store insert failed is not shown live; one whose insert succeeded after a retry is, after it', async () => {
  const tmp = tempDir('pipeline-live-store-failure');
  const log = createLocalLog({ dir: `${tmp.dir}/log` });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 1 }, { name: Topics.deadLetters, partitions: 1 }]);
  const directory = new MemoryDirectory();
  directory.put({ id: 'd1', assets: [{ id: 'a1', name: 't', is: 'sensor', profile: { type: 'number' } }] });
  const steps: string[] = [];
  // The store: an insert holding value 1 fails once (retriable), one holding value 2 always fails.
  const attempts = new Map<unknown, number>();
  const store = {
    async append(rows: readonly StateRow[]): Promise<void> {
      for (const row of rows) attempts.set(row.value, (attempts.get(row.value) ?? 0) + 1);
      if (rows.some((r) => r.value === 2)) throw new Failure('UNAVAILABLE', 'the store refused the insert');
      if (rows.some((r) => r.value === 1) && attempts.get(1) === 1) throw new Failure('UNAVAILABLE', 'the store is restarting');
      steps.push(`stored ${rows.map((r) => r.value).join(',')}`);
    },
  };
  const batcher = new StateBatcher({ store, clock: systemClock, maxDelayMs: 60_000, immediateRows: 1000, retryInitialMs: 1, maxRetries: 2 });
  const shown: ProducerRecord[] = [];
  const live = new LivePublisher({
    log: { append: async (_topic, records) => { shown.push(...records); return records.map(() => ({ partition: 0, offset: 0 })); } },
    clock: systemClock, topic: 'live',
  });
  const errors: FleetError[] = [];
  const pipeline = new UplinkPipeline({
    log, rows: batcher, undecided: deviceActors({ directory, clock: systemClock }), clock: systemClock, commitIntervalMs: 20,
    onStored(rows) {
      steps.push(`shown ${rows.map((r) => r.value).join(',')}`);
      live.states(rows);
    },
    onError: (e) => errors.push(e),
  });
  await pipeline.start();
  try {
    const env = (id: string, value: number) => ({ id, channel: 'mqtt' as const, contentType: 'json' as const, deviceId: 'd1', receivedAt: 1000, body: json({ t: { value } }) });
    await log.append(Topics.uplinks, [{ key: 'd1', value: encodeEnvelope(env('u1', 1)) }]);
    // The batch delay is a minute: the state is stored, then shown, because nothing else was being inserted.
    await waitFor(() => shown.length === 1, 5000, 'the first state shown');
    assert.equal(steps, ['stored 1', 'shown 1'], 'shown only after its insert succeeded (the failed attempt showed nothing)');
    assert.is(attempts.get(1), 2);
    await log.append(Topics.uplinks, [{ key: 'd1', value: encodeEnvelope(env('u2', 2)) }]);
    await waitFor(() => pipeline.failure !== undefined, 5000, 'the insert given up');
    await live.flush();
    assert.is(attempts.get(2), 3, 'tried, then retried twice');
    assert.equal(steps, ['stored 1', 'shown 1'], 'the state whose insert failed is not shown');
    assert.is(shown.length, 1);
    assert.match(new TextDecoder().decode(shown[0].value), /"value":1/);
    assert.is(live.published, 1);
    assert.ok(errors.some((e) => e.code === 'UNAVAILABLE'), 'the failure is reported');
  } finally {
    await pipeline.stop().catch(() => undefined);
    await live.close();
    await log.close();
    tmp.remove();
  }
});

test.run();
