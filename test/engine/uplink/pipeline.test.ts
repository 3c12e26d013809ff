/**
 * The uplink pipeline on the embedded adapters: local log → device actors → chDB, offsets
 * committed only after the states are durable, rejections on the dead-letter topic.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encode as cborEncode } from 'cbor-x';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { decodeDeadLetter, encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { MemoryDirectory } from '../../../engine/ports/directory.ts';
import type { Log, LogRecord } from '../../../engine/ports/log.ts';
import type { StateStore } from '../../../engine/ports/store.ts';
import { StateBatcher } from '../../../engine/uplink/pipeline/StateBatcher.ts';
import { UplinkPipeline } from '../../../engine/uplink/pipeline/UplinkPipeline.ts';
import { deviceActors } from '../../../engine/actors/DeviceActors.ts';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { Topics, type UplinkEnvelope } from '../../../schemas/messages.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const tmp = tempDir('pipeline');
let log: Log;
let store: StateStore;
const directory = new MemoryDirectory();
const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

const profiles = {
  temperature: { type: 'number', minimum: -50, maximum: 100 },
  humidity: { type: 'integer', minimum: 0, maximum: 100 },
  on: { type: 'boolean' },
  label: { type: 'string' },
};
for (let d = 0; d < 10; d++) {
  directory.put({
    id: `dev${d}`,
    assets: Object.entries(profiles).map(([name, profile]) => ({ id: `a-${d}-${name}`, name, is: 'sensor' as const, profile })),
  });
}

function envelope(n: number, deviceId: string, body: Uint8Array, extra: Partial<UplinkEnvelope> = {}): UplinkEnvelope {
  return { id: `u${n}`, channel: 'http', contentType: 'json', deviceId, receivedAt: 1_900_000_000_000 + n, body, ...extra };
}

async function appendUplinks(envelopes: UplinkEnvelope[]): Promise<void> {
  await log.append(Topics.uplinks, envelopes.map((e) => ({ key: e.deviceId, value: encodeEnvelope(e) })));
}

function pipeline(): { pipeline: UplinkPipeline; batcher: StateBatcher } {
  const batcher = new StateBatcher({ store, clock: systemClock, maxRows: 500, maxDelayMs: 20 });
  const p = new UplinkPipeline({ log, rows: batcher, undecided: deviceActors({ directory, clock: systemClock }), clock: systemClock, group: 'engine', commitIntervalMs: 20 });
  return { pipeline: p, batcher };
}

async function readAll(topic: string, group: string, expected: number): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  const consumer = log.consumer({ group, topics: [topic], onBatch: async (b) => { records.push(...b.records); } });
  await consumer.start();
  await waitFor(() => records.length >= expected, 10_000, `${expected} records on ${topic}`);
  await consumer.stop();
  return records;
}

test.before(async () => {
  log = createLocalLog({ dir: `${tmp.dir}/log` });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 4 }, { name: Topics.deadLetters, partitions: 1 }]);
  store = createChdbStore({ dir: `${tmp.dir}/chdb` });
  await store.init();
});

test.after(async () => {
  await log.close();
  await store.close();
  tmp.remove();
});

test('device states of many devices flow into the store in order, with rejections dead-lettered', async () => {
  const envelopes: UplinkEnvelope[] = [];
  let n = 0;
  for (let round = 0; round < 20; round++) {
    for (let d = 0; d < 10; d++) {
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, round)).toISOString();
      envelopes.push(envelope(n++, `dev${d}`, json({
        temperature: { value: round + d / 10, at },
        humidity: { value: round, at },
        on: { value: round % 2 === 0, at },
        label: { value: `r${round}`, at },
      })));
    }
  }
  // CBOR simplified form, an asset state, and rejected input of several kinds.
  envelopes.push(envelope(n++, 'dev0', new Uint8Array(cborEncode({ temperature: 55.5, humidity: 7 })), { contentType: 'cbor', receivedAt: 1_800_000_000_000 }));
  envelopes.push(envelope(n++, 'dev1', json({ value: 'hello', at: '2027-01-01T00:00:00Z' }), { asset: 'label' }));
  envelopes.push(envelope(n++, 'dev2', json({ temperature: { value: 500 }, humidity: { value: 1 } }))); // one bad, one good
  envelopes.push(envelope(n++, 'nobody', json({ temperature: { value: 1 } })));
  envelopes.push(envelope(n++, 'dev3', new TextEncoder().encode('{"temperature":')));
  await appendUplinks(envelopes);
  // A record that is not an envelope at all.
  await log.append(Topics.uplinks, [{ key: 'dev4', value: new Uint8Array([0xff, 0x00, 0x13]) }]);

  const { pipeline: p, batcher } = pipeline();
  await p.start();
  await waitFor(() => p.stats.received === envelopes.length + 1, 10_000, 'all uplinks received');
  await p.drained();
  await p.stop();
  await batcher.close();

  for (let d = 0; d < 10; d++) {
    const history = await store.history({ deviceId: `dev${d}`, asset: 'humidity', limit: 1000, order: 'asc' });
    const expected = d === 0 ? [...Array.from({ length: 20 }, (_, r) => r), 7] : d === 2 ? [...Array.from({ length: 20 }, (_, r) => r), 1] : Array.from({ length: 20 }, (_, r) => r);
    assert.equal(history.map((h) => h.value).sort((a, b) => (a as number) - (b as number)), expected.sort((a, b) => a - b), `humidity history of dev${d}`);
  }
  const latest0 = await store.latest('dev0');
  const temperature0 = latest0.find((s) => s.asset === 'temperature');
  assert.is(temperature0?.value, 55.5, 'the CBOR state (newest receive time) is the latest');
  assert.is(temperature0?.ts, 1_800_000_000_000, 'missing at → receive time');
  const label1 = (await store.latest('dev1')).find((s) => s.asset === 'label');
  assert.equal(label1?.value, 'hello');
  assert.is(label1?.ts, Date.parse('2027-01-01T00:00:00Z'));
  assert.equal((await store.history({ deviceId: 'dev2', asset: 'temperature', limit: 1000 })).length, 20, 'out-of-range temperature not stored');
  assert.equal(await store.latest('nobody'), []);

  const letters = (await readAll(Topics.deadLetters, 'check-dead', 4)).map((r) => decodeDeadLetter(r.value));
  const codes = letters.map((l) => `${l.envelope.deviceId}:${l.code}:${l.asset ?? ''}`).sort();
  assert.equal(codes, ['dev2:PROFILE_VIOLATION:temperature', 'dev3:MALFORMED_JSON:', 'dev4:MALFORMED_PAYLOAD:', 'nobody:UNKNOWN_DEVICE:']);
  for (const letter of letters) assert.ok(letter.reason.length > 0, 'every dead letter carries a reason');

  let committed = 0;
  for (let partition = 0; partition < 4; partition++) committed += await log.committed('engine', Topics.uplinks, partition);
  assert.is(committed, envelopes.length + 1, 'every record committed after it was durable');
});

test('a restarted pipeline resumes after the committed offsets and a replay adds no duplicates', async () => {
  const { pipeline: p, batcher } = pipeline();
  await p.start();
  await appendUplinks([envelope(9001, 'dev5', json({ humidity: { value: 99, at: '2026-06-01T00:00:00Z' } }))]);
  await waitFor(() => p.stats.received === 1, 10_000, 'the new uplink');
  await p.drained();
  await p.stop();
  await batcher.close();
  assert.is(p.stats.received, 1, 'only the new record is delivered');

  // Replay the same uplink id (as after a crash before the commit): queries show it once.
  const again = pipeline();
  await appendUplinks([envelope(9001, 'dev5', json({ humidity: { value: 99, at: '2026-06-01T00:00:00Z' } }))]);
  await again.pipeline.start();
  await waitFor(() => again.pipeline.stats.received === 1, 10_000, 'the replayed uplink');
  await again.pipeline.drained();
  await again.pipeline.stop();
  await again.batcher.close();
  const h = await store.history({ deviceId: 'dev5', asset: 'humidity', from: Date.parse('2026-06-01T00:00:00Z'), limit: 10 });
  assert.is(h.length, 1);
  assert.is(h[0].value, 99);
});

test('a batch the store refuses for good fails the pipeline, and nothing past it is committed', async () => {
  const errors: FleetError[] = [];
  const refusing = { append: async () => { throw new FleetError('INVALID_STATE', 'refused by the store'); } };
  const batcher = new StateBatcher({ store: refusing, clock: systemClock, maxRows: 500, maxDelayMs: 5, maxRetries: 0 });
  const p = new UplinkPipeline({ log, rows: batcher, undecided: deviceActors({ directory, clock: systemClock }), clock: systemClock, group: 'engine-refused', commitIntervalMs: 10, onError: (e) => errors.push(e) });
  await p.start();
  await appendUplinks([envelope(9100, 'dev6', json({ humidity: { value: 3 } }))]);
  await waitFor(() => errors.length > 0, 10_000, 'the failure');
  assert.is(p.failure?.code, 'INVALID_STATE');
  assert.is(errors[0].message, 'refused by the store');
  await new Promise((resolve) => setTimeout(resolve, 50));
  let committed = 0;
  for (let partition = 0; partition < 4; partition++) committed += await log.committed('engine-refused', Topics.uplinks, partition);
  assert.is(committed, 0);
  await p.stop();
  await batcher.close();
});

test.run();
