/**
 * The one admission step in isolation: the verdict rules (admission/admitUplink.ts), what an
 * admitted uplink carries on the log and how the engine reads it back (envelope.ts), and the
 * edge-facing UplinkAdmission (ids, refusals recorded, accepted uplinks appended with the decision).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Encoder } from 'cbor-x';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { admitUplink, carried, outputOf } from '../../../engine/uplink/admission/admitUplink.ts';
import { compileDevice } from '../../../engine/uplink/admission/compileDevice.ts';
import { processUplink } from '../../../engine/uplink/admission/processUplink.ts';
import { decodeEnvelope, encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { UplinkAdmission } from '../../../engine/uplink/UplinkAdmission.ts';
import { UplinkIngest, type UplinkSubmission } from '../../../engine/uplink/UplinkIngest.ts';
import { fakeIngest } from '../../support/fakeIngest.ts';
import type { AdmissionOutcome } from '../../../engine/ports/uplinkAdmission.ts';
import type { Log, ProducerRecord } from '../../../engine/ports/log.ts';
import type { DeviceInfo } from '../../../engine/ports/directory.ts';
import type { UplinkEnvelope } from '../../../schemas/messages.ts';
import { deviceActors } from '../../../engine/actors/DeviceActors.ts';
import { UplinkPipeline } from '../../../engine/uplink/pipeline/UplinkPipeline.ts';

/** After every `at` of this suite (an `at` more than a day ahead of the receive time is refused). */
const RECEIVED = Date.UTC(2030, 0, 1);

const info: DeviceInfo = {
  id: 'd1',
  assets: [
    { id: 'a1', name: 't', is: 'sensor', profile: { type: 'number', maximum: 100 } },
    { id: 'a2', name: 'door', is: 'sensor', profile: { type: 'boolean' } },
  ],
};
const device = compileDevice(info);
const text = (s: string) => new TextEncoder().encode(s);
const envelope = (body: string, asset?: string): UplinkEnvelope => ({
  id: 'u1', channel: 'http', contentType: 'json', deviceId: 'd1', receivedAt: RECEIVED, body: text(body), ...(asset ? { asset } : {}),
});

test('verdict: whole-message problems and a refused asset state are refused; a device state with one good entry is accepted with the rest dropped', () => {
  for (const [body, asset, code] of [
    ['{"t":', undefined, 'MALFORMED_JSON'],
    ['[1]', undefined, 'INVALID_STATE'],
    ['{"value": 500}', 't', 'PROFILE_VIOLATION'],
    ['{"value": 1, "at": 5}', 't', 'INVALID_AT'],
    ['{"nope": {"value": 1}}', undefined, 'UNKNOWN_ASSET'],
    ['{"t": {"value": 500}, "door": {"value": 3}}', undefined, 'PROFILE_VIOLATION'],
  ] as const) {
    const a = admitUplink(envelope(body, asset), device);
    assert.is(a.verdict, 'refused', body);
    if (a.verdict === 'refused') assert.is(a.rejections[0].code, code, body);
  }
  const a = admitUplink(envelope('{"t": {"value": 21.5}, "door": {"value": "x"}, "nope": {"value": 1}}'), device);
  assert.is(a.verdict, 'accepted');
  if (a.verdict !== 'accepted') return;
  assert.equal(a.rows.map((r) => [r.asset, r.value, r.ts]), [['t', 21.5, RECEIVED]]);
  assert.equal(a.dropped.map((r) => [r.asset, r.code]), [['door', 'PROFILE_VIOLATION'], ['nope', 'UNKNOWN_ASSET']]);
  assert.ok(admitUplink(envelope('{}'), device).verdict === 'accepted', 'an empty device state yields nothing and refuses nothing');
});

test('carried on the log: the engine rebuilds exactly the admitted rows and drops from the envelope', () => {
  const a = admitUplink(envelope('{"t": {"value": 7, "at": "2026-01-01T00:00:00Z"}, "nope": {"value": {"deep": [1, "x"]}}}'), device);
  if (a.verdict !== 'accepted') throw new Error('expected accepted');
  const wire = encodeEnvelope({ ...envelope(''), id: 'u9', admitted: carried(a) });
  const read = decodeEnvelope(wire);
  assert.ok(read.admitted !== undefined);
  const out = outputOf(read as UplinkEnvelope & { admitted: NonNullable<UplinkEnvelope['admitted']> });
  assert.equal(out.rows, [{ deviceId: 'd1', asset: 't', ts: Date.UTC(2026, 0, 1), receivedAt: RECEIVED, value: 7, uplinkId: 'u9' }]);
  assert.equal(out.rejections.map((r) => [r.asset, r.code]), [['nope', 'UNKNOWN_ASSET']]);
  assert.is(decodeEnvelope(encodeEnvelope(envelope('{}'))).admitted, undefined, 'records without admission stay without');
});

test('a batch: readings without at are numbered per asset and time in item order, the same by admission and by the engine reading the log', () => {
  const body = JSON.stringify([
    { t: { value: 1 }, door: { value: true } },
    { t: { value: 2 } },
    { t: { value: 3, at: '2026-01-01T00:00:00Z' }, door: { value: false } },
    { t: { value: 4 } },
  ]);
  const a = admitUplink(envelope(body), device);
  if (a.verdict !== 'accepted') throw new Error('expected accepted');
  const numbered = a.rows.map((r) => [r.asset, r.value, r.ts, r.seq ?? 0]);
  const T = Date.UTC(2026, 0, 1);
  assert.equal(numbered, [['t', 1, RECEIVED, 0], ['door', true, RECEIVED, 0], ['t', 2, RECEIVED, 1], ['t', 3, T, 0], ['door', false, RECEIVED, 1], ['t', 4, RECEIVED, 2]]);
  assert.equal(a.dropped, []);
  const read = decodeEnvelope(encodeEnvelope({ ...envelope(''), admitted: carried(a) }));
  const out = outputOf(read as UplinkEnvelope & { admitted: NonNullable<UplinkEnvelope['admitted']> });
  assert.equal(out.rows.map((r) => [r.asset, r.value, r.ts, r.seq ?? 0]), numbered);
  // A record without the decision: the device actor admits the body itself, to the same rows.
  const actor = { rows: [] as typeof a.rows, rejections: [] };
  processUplink(envelope(body), device, actor);
  assert.equal(actor.rows, a.rows);
  // Larger batches number through a map: the same numbers.
  const many = admitUplink(envelope(JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ t: { value: i }, ...(i % 2 ? { door: { value: true } } : {}) })))), device);
  if (many.verdict !== 'accepted') throw new Error('expected accepted');
  assert.equal(many.rows.filter((r) => r.asset === 't').map((r) => r.seq ?? 0), Array.from({ length: 20 }, (_, i) => i));
  assert.equal(many.rows.filter((r) => r.asset === 'door').map((r) => r.seq ?? 0), Array.from({ length: 10 }, (_, i) => i));
});

test('a batch: an asset at an explicit at an earlier item already holds is refused DUPLICATE_READING with its index; one whole-duplicate batch still stores the first', () => {
  const body = JSON.stringify([
    { t: { value: 1, at: '2026-01-01T00:00:00Z' } },
    { t: { value: 1, at: '2026-01-01T01:00:00+01:00' }, door: { value: true, at: '2026-01-01T00:00:00Z' } },
    { t: { value: 2, at: '2026-01-01T00:00:00.001Z' } },
    { t: { value: 3, at: null } },
  ]);
  const a = admitUplink(envelope(body), device);
  if (a.verdict !== 'accepted') throw new Error('expected accepted');
  assert.equal(a.rows.map((r) => [r.asset, r.value, r.seq ?? 0]), [['t', 1, 0], ['door', true, 0], ['t', 2, 0], ['t', 3, 0]]);
  assert.equal(a.dropped.map((r) => [r.item, r.asset, r.code]), [[1, 't', 'DUPLICATE_READING']]);
  assert.match(a.dropped[0].reason, /^item 1: item 0 already holds a reading of asset "t" at 2026-01-01T00:00:00.000Z/);
  // Items out of time order: an earlier time comes back after a later one.
  const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();
  const late = admitUplink(envelope(JSON.stringify([
    { t: { value: 1, at: at(5) } }, { t: { value: 2, at: at(1) }, door: { value: true, at: at(5) } }, { t: { value: 3, at: at(5) } }, { t: { value: 4, at: at(1) } }, { door: { value: false, at: at(5) } },
  ])), device);
  if (late.verdict !== 'accepted') throw new Error('expected accepted');
  assert.equal(late.rows.map((r) => r.value), [1, 2, true]);
  assert.equal(late.dropped.map((r) => [r.item, r.asset, r.code, r.reason.match(/already holds/) ? r.reason.slice(0, 16) : r.reason]), [
    [2, 't', 'DUPLICATE_READING', 'item 2: item 0 a'], [3, 't', 'DUPLICATE_READING', 'item 3: item 1 a'], [4, 'door', 'DUPLICATE_READING', 'item 4: item 1 a'],
  ]);
  // An explicit at equal to the receive time and a reading without at: two readings, numbered.
  const same = admitUplink(envelope(JSON.stringify([{ t: { value: 1, at: new Date(RECEIVED).toISOString() } }, { t: { value: 2 } }])), device);
  if (same.verdict !== 'accepted') throw new Error('expected accepted');
  assert.equal(same.rows.map((r) => [r.value, r.ts, r.seq ?? 0]), [[1, RECEIVED, 0], [2, RECEIVED, 1]]);
  // A state sent once, not in a batch, is never a duplicate; nor is a reading without at.
  assert.is(admitUplink(envelope('{"t": {"value": 1, "at": "2026-01-01T00:00:00Z"}}'), device).verdict, 'accepted');
});

test('a forged record whose carried value is not storable is malformed as a whole (a dead letter, never a poisoned insert)', () => {
  const codec = new Encoder({ useRecords: false, mapsAsObjects: true, variableMapSize: true } as ConstructorParameters<typeof Encoder>[0]);
  const forge = (value: unknown, ts: unknown = 5) => new Uint8Array(codec.encode({
    id: 'u1', channel: 'http', contentType: 'json', deviceId: 'd1', receivedAt: 1, body: new Uint8Array(0),
    admitted: { states: [['t', ts, value]], dropped: [] },
  }));
  for (const [value, ts] of [[Number.NaN, 5], [Number.POSITIVE_INFINITY, 5], [new Uint8Array([1]), 5], [{ a: [Number.NaN] }, 5], [1, 1.5], [1, 'x']] as const) {
    try {
      decodeEnvelope(forge(value, ts));
      assert.unreachable(`${String(value)} at ${String(ts)}`);
    } catch (error) {
      assert.instance(error, FleetError);
      assert.is((error as FleetError).code, 'MALFORMED_PAYLOAD');
    }
  }
});

function harness(options: { failAppend?: FleetError; compile?: (i: DeviceInfo) => ReturnType<typeof compileDevice> } = {}) {
  const clock = new SimulatedClock(5_000);
  const appended: UplinkSubmission[] = [];
  const dead: { envelope: UplinkEnvelope; codes: string[] }[] = [];
  let n = 0;
  const admission = new UplinkAdmission({
    clock,
    newId: () => `id${++n}`,
    compile: options.compile,
    ingest: fakeIngest(async (s) => {
      if (options.failAppend) throw options.failAppend;
      appended.push(s);
    }),
    deadLetters: { add: async (e, r) => { dead.push({ envelope: e, codes: r.map((x) => x.code) }); } },
  });
  return { admission, appended, dead, clock };
}

const submission = (body: string, asset?: string): UplinkSubmission => ({ channel: 'mqtt', contentType: 'json', deviceId: 'd1', body: text(body), ...(asset ? { asset } : {}) });

test('UplinkAdmission: accepted uplinks are appended once with the decision; refused ones only recorded, under the id they were answered with', async () => {
  const h = harness();
  const ok = await h.admission.admit(info, submission('{"t": {"value": 3}, "x": {"value": 1}}'));
  assert.equal([ok.status, ok.uplinkId, ok.receivedAt], ['accepted', 'id1', 5_000]);
  assert.is(h.appended.length, 1);
  assert.equal(h.appended[0].admitted, { states: [['t', 5_000, 3]], dropped: [['x', 'UNKNOWN_ASSET', h.appended[0].admitted!.dropped[0][2]]] });
  const bad = await h.admission.admit(info, submission('{"value": "hot"}', 't'));
  assert.equal([bad.status, bad.uplinkId], ['refused', 'id2']);
  assert.is(h.appended.length, 1, 'nothing appended for a refusal');
  assert.equal(h.dead.map((d) => [d.envelope.id, d.envelope.channel, d.codes]), [['id2', 'mqtt', ['PROFILE_VIOLATION']]]);
  const channel = await h.admission.refuse({ ...submission(''), deviceId: '' }, { code: 'UNKNOWN_DEVICE', reason: 'no such device' });
  assert.is(channel.status, 'refused');
  assert.equal(h.dead.at(-1)!.codes, ['UNKNOWN_DEVICE']);
  assert.is(h.appended.length, 1, 'the channel refusal appended nothing either');
});

test('UplinkAdmission: a refused body that views a larger buffer (an edge\'s read chunk) is recorded as a copy of its own bytes, not with the whole buffer', async () => {
  const h = harness();
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const bytes = Buffer.from('{"value": "hot"}');
  bytes.copy(chunk, 1000);
  const view = chunk.subarray(1000, 1000 + bytes.length);
  const refused = await h.admission.admit(info, { channel: 'mqtt', contentType: 'json', deviceId: 'd1', asset: 't', body: view });
  assert.is(refused.status, 'refused');
  const kept = h.dead[0].envelope.body;
  assert.equal(Buffer.from(kept), bytes, 'the same bytes');
  assert.is(kept.buffer.byteLength, bytes.length, 'in a buffer of their own');
});

test('UplinkAdmission: a log that cannot take the uplink is thrown as it is (503 / not acknowledged); an uncompilable device refuses, it does not throw', async () => {
  const busy = harness({ failAppend: new FleetError('BACKPRESSURE', 'full', { detail: { retryAfter: 1 } }) });
  try {
    await busy.admission.admit(info, submission('{"t": {"value": 1}}'));
    assert.unreachable('expected BACKPRESSURE');
  } catch (error) {
    assert.is((error as FleetError).code, 'BACKPRESSURE');
  }
  assert.is(busy.dead.length, 0, 'a retriable failure is no refusal');
  const broken = harness({ compile: () => { throw new Error('profile does not compile'); } });
  const out = await broken.admission.admit(info, submission('{"t": {"value": 1}}'));
  assert.equal([out.status, out.status === 'refused' ? out.rejections[0].code : ''], ['refused', 'PROCESSING_FAILED']);
});

test('UplinkAdmission.admitThen over the real ingest: the outcomes admit() gives, called back once and never synchronously', async () => {
  const clock = new SimulatedClock(5_000);
  const written: ProducerRecord[] = [];
  let failNext: Error | undefined;
  const log = {
    async append(_topic: string, records: ProducerRecord[]) {
      if (failNext) throw failNext;
      written.push(...records);
      return records.map((_, i) => ({ partition: 0, offset: written.length - records.length + i }));
    },
  };
  const dead: string[][] = [];
  let n = 0;
  const admission = new UplinkAdmission({
    clock,
    newId: () => `id${++n}`,
    ingest: new UplinkIngest({ log, clock }),
    deadLetters: { add: async (_e, r) => { dead.push(r.map((x) => x.code)); } },
  });
  const admitThen = (body: string, asset?: string) => new Promise<{ error: unknown; outcome?: AdmissionOutcome; calls: number }>((resolve) => {
    let returned = false;
    let calls = 0;
    admission.admitThen(info, submission(body, asset), (error, outcome) => {
      assert.ok(returned, 'called back after admitThen returned');
      calls++;
      setImmediate(() => resolve({ error, outcome, calls }));
    });
    returned = true;
  });
  const ok = await admitThen('{"t": {"value": 3}, "x": {"value": 1}}');
  assert.equal([ok.error, ok.calls, ok.outcome?.status, ok.outcome?.uplinkId], [undefined, 1, 'accepted', 'id1']);
  assert.equal(ok.outcome?.status === 'accepted' ? ok.outcome.dropped.map((d) => d.code) : [], ['UNKNOWN_ASSET']);
  assert.is(written.length, 1);
  assert.equal(decodeEnvelope(written[0].value).admitted?.states, [['t', 5_000, 3]]);
  const bad = await admitThen('{"value": "hot"}', 't');
  assert.equal([bad.error, bad.calls, bad.outcome?.status], [undefined, 1, 'refused']);
  assert.equal(dead, [['PROFILE_VIOLATION']]);
  assert.is(written.length, 1, 'nothing appended for a refusal');
  failNext = new FleetError('UNAVAILABLE', 'log away', { retriable: true });
  const away = await admitThen('{"t": {"value": 4}}');
  assert.equal([away.outcome, away.calls, (away.error as FleetError).code], [undefined, 1, 'UNAVAILABLE']);
  assert.is(dead.length, 1, 'a retriable failure is no refusal');
});

test('UplinkAdmission compiles a device object once, and again when the edge hands it a changed one', async () => {
  let compiles = 0;
  const h = harness({ compile: (i) => { compiles++; return compileDevice(i); } });
  for (let i = 0; i < 5; i++) await h.admission.admit(info, submission('{"t": {"value": 1}}'));
  assert.is(compiles, 1);
  const changed: DeviceInfo = { ...info, assets: [...info.assets, { id: 'a3', name: 'h', is: 'sensor', profile: {} }] };
  const out = await h.admission.admit(changed, submission('{"h": {"value": 1}}'));
  assert.equal([compiles, out.status], [2, 'accepted']);
});

test('the engine keeps a device\'s order: an admitted uplink waits behind that device\'s unadmitted ones still loading', async () => {
  const clock = new SimulatedClock(0);
  let release!: (d: DeviceInfo) => void;
  const loaded = new Promise<DeviceInfo>((r) => { release = r; });
  const emitted: string[] = [];
  const pipeline = new UplinkPipeline({
    log: {} as Log,
    rows: { append: async (rows) => { emitted.push(`${rows[0].uplinkId}:${rows.map((r) => r.value).join(',')}`); }, flush: async () => {} },
    undecided: deviceActors({ directory: { getDevice: () => loaded }, compile: (i) => compileDevice(i), clock }),
    clock,
  });
  const admitted = (id: string, value: number): UplinkEnvelope => ({ ...envelope(''), id, admitted: { states: [['t', 1, value]], dropped: [] } });
  pipeline.dispatch({ envelope: admitted('a0', 0), partition: 0, offset: 0 });
  assert.equal(emitted, ['a0:0'], 'no actor needed while none holds work');
  pipeline.dispatch({ envelope: { ...envelope('{"t": {"value": 1}}'), id: 'raw1' }, partition: 0, offset: 1 });
  pipeline.dispatch({ envelope: admitted('a2', 2), partition: 0, offset: 2 });
  assert.equal(emitted, ['a0:0'], 'the admitted uplink waits behind the loading one');
  release(info);
  await loaded;
  await new Promise((r) => setImmediate(r));
  assert.equal(emitted, ['a0:0', 'raw1:1', 'a2:2']);
  pipeline.actors.stop();
});

test.run();
