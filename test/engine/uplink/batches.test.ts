/**
 * Batches (issue: devices buffer readings offline; gateways speak for several devices): an array
 * of device states in one HTTP or MQTT message, CBOR too, and a gateway's request for several
 * devices of its ground — good and bad items mixed, oversized batches, a device outside the ground.
 * What is appended (the admitted states carried on the log) and what is recorded are checked.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encode as cborEncode } from 'cbor-x';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import type { Registry } from '../../../engine/ports/registry.ts';
import { MAX_BATCH_STATES } from '../../../engine/uplink/admission/processUplink.ts';
import { EdgeHarness } from '../../support/edgeHarness.ts';
import { MqttStack } from '../../support/mqttStack.ts';
import { waitFor } from '../../support/tmp.ts';

let registry: Registry;
let h: EdgeHarness;

test.before(async () => {
  registry = await createPgliteRegistry();
  // Received after every `at` of this suite (admission refuses one more than a day ahead of the receive time).
  h = await EdgeHarness.start({ registry, limits: { maxBodyBytes: 1 << 20 }, clockStart: Date.UTC(2026, 0, 2) });
});

test.after(async () => {
  await h.close();
  await registry.close();
});

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();
const statesOf = (uplinkId: string) => h.appended.find((e) => e.id === uplinkId)?.admitted?.states ?? [];

test('an HTTP batch of device states: each item admitted on its own, bad items dropped with their index, good ones carried', async () => {
  const s = await h.seed();
  const batch = [
    { temperature: { value: 20, at: at(0) }, door: { value: false, at: at(0) } },
    { temperature: { value: 'warm', at: at(1) } },
    'not a state',
    { temperature: { value: 21, at: at(2) }, window: { value: 1 } },
  ];
  const r = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: batch });
  assert.is(r.status, 202);
  assert.equal(r.json.rejected.map((x: { item: number; asset?: string; code: string }) => [x.item, x.asset, x.code]), [
    [1, 'temperature', 'PROFILE_VIOLATION'],
    [2, undefined, 'INVALID_STATE'],
    [3, 'window', 'UNKNOWN_ASSET'],
  ]);
  assert.match(r.json.rejected[1].reason, /^item 2: /);
  assert.equal(statesOf(r.json.uplinkId), [
    ['temperature', Date.UTC(2026, 0, 1, 0, 0), 20], ['door', Date.UTC(2026, 0, 1, 0, 0), false], ['temperature', Date.UTC(2026, 0, 1, 0, 2), 21],
  ]);
  await h.intake.deadLetters.flush();
  const recorded = h.rejections.rows.filter((x) => x.deviceId === s.deviceId);
  assert.is(recorded.length, 0, 'dropped items of an accepted batch are recorded by the engine, from the log');
});

test('a batch none of whose items yields a state is refused (422) and recorded; an empty batch stores nothing', async () => {
  const s = await h.seed();
  const r = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: [{ temperature: { value: 'x' } }, 5] });
  assert.equal([r.status, r.json.code], [422, 'PROFILE_VIOLATION']);
  assert.equal(r.json.errors.length, 2);
  await h.intake.deadLetters.flush();
  assert.equal(h.rejections.rows.filter((x) => x.uplinkId === r.json.uplinkId).map((x) => x.code), ['PROFILE_VIOLATION', 'INVALID_STATE']);
  const empty = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: [] });
  assert.is(empty.status, 202);
  assert.equal(statesOf(empty.json.uplinkId), []);
});

test(`a batch over ${MAX_BATCH_STATES} items is refused whole with PAYLOAD_TOO_LARGE; the limit itself passes`, async () => {
  const s = await h.seed();
  const item = { temperature: { value: 1 } };
  const over = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: Array.from({ length: MAX_BATCH_STATES + 1 }, () => item) });
  assert.equal([over.status, over.json.code], [413, 'PAYLOAD_TOO_LARGE']);
  const full = await h.request('PUT', `/device/${s.deviceId}/state`, {
    token: s.deviceToken,
    json: Array.from({ length: MAX_BATCH_STATES }, (_, i) => ({ temperature: { value: i, at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString() } })),
  });
  assert.is(full.status, 202);
  assert.is(statesOf(full.json.uplinkId).length, MAX_BATCH_STATES);
});

test('a CBOR batch: an array of device state maps (full and simplified forms)', async () => {
  const s = await h.seed();
  const body = cborEncode([{ temperature: 19.5 }, { temperature: { value: 20.5 }, door: true }, { door: 'ajar' }]);
  const r = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, body: new Uint8Array(body), contentType: 'application/cbor' });
  assert.is(r.status, 202);
  assert.equal(statesOf(r.json.uplinkId).map(([a, , v]) => [a, v]), [['temperature', 19.5], ['temperature', 20.5], ['door', true]]);
  assert.equal(r.json.rejected.map((x: { item: number; code: string }) => [x.item, x.code]), [[2, 'PROFILE_VIOLATION']]);
});

test('a gateway sends for several devices of its ground; a device of another ground or none is refused and nothing is recorded for it', async () => {
  const a = await h.seed();
  const second = await registry.createDevice({ groundId: a.groundId, name: 'second', assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }] });
  const foreign = await h.seed();
  const body = {
    [a.deviceId]: [{ temperature: { value: 1, at: at(0) } }, { temperature: { value: 2, at: at(1) } }],
    [second.device.id]: { temperature: { value: 'hot' } },
    [foreign.deviceId]: { temperature: { value: 3 } },
    ['A'.repeat(22)]: { temperature: { value: 4 } },
  };
  const r = await h.request('POST', `/ground/${a.groundId}/states`, { token: a.userToken, json: body });
  assert.is(r.status, 202);
  const results = r.json.results as Array<{ deviceId: string; status: string; code?: string; uplinkId?: string }>;
  assert.equal(results.map((x) => [x.deviceId, x.status, x.code]), [
    [a.deviceId, 'accepted', undefined],
    [second.device.id, 'refused', 'PROFILE_VIOLATION'],
    [foreign.deviceId, 'refused', 'UNKNOWN_DEVICE'],
    ['A'.repeat(22), 'refused', 'UNKNOWN_DEVICE'],
  ]);
  assert.equal(statesOf(results[0].uplinkId!).map(([, , v]) => v), [1, 2]);
  assert.ok(!h.appended.some((e) => e.deviceId === foreign.deviceId), 'nothing appended for the foreign device');
  await h.intake.deadLetters.flush();
  assert.equal(h.rejections.rows.filter((x) => x.deviceId === second.device.id).map((x) => x.code), ['PROFILE_VIOLATION']);
  assert.equal(h.rejections.rows.filter((x) => x.deviceId === foreign.deviceId), [], 'a gateway cannot write into another ground');

  // The gateway device itself may send for its ground, not for another one.
  const asDevice = await h.request('POST', `/ground/${a.groundId}/states`, { token: a.deviceToken, json: { [second.device.id]: { temperature: { value: 5 } } } });
  assert.equal([asDevice.status, asDevice.json.results[0].status], [202, 'accepted']);
  const elsewhere = await h.request('POST', `/ground/${foreign.groundId}/states`, { token: a.deviceToken, json: { [foreign.deviceId]: { temperature: { value: 5 } } } });
  assert.equal([elsewhere.status, elsewhere.json.code], [403, 'FORBIDDEN']);
  const stranger = await h.request('POST', `/ground/${a.groundId}/states`, { token: foreign.userToken, json: {} });
  assert.equal([stranger.status, stranger.json.code], [403, 'FORBIDDEN']);
});

test('a gateway request: malformed, the wrong shape or too many devices is refused whole', async () => {
  const a = await h.seed();
  const post = (json: unknown) => h.request('POST', `/ground/${a.groundId}/states`, { token: a.userToken, json });
  assert.equal((await post([1, 2])).json.code, 'INVALID_STATE');
  const tooMany = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`${String(i).padStart(22, 'x')}`, {}]));
  const r = await post(tooMany);
  assert.equal([r.status, r.json.code], [413, 'PAYLOAD_TOO_LARGE']);
  const raw = await h.request('POST', `/ground/${a.groundId}/states`, { token: a.userToken, body: '{"x":', contentType: 'application/json' });
  assert.equal([raw.status, raw.json.code], [400, 'MALFORMED_JSON']);
});

test('MQTT: a batch published on device/<id>/state is stored item by item', async () => {
  const m = await MqttStack.start({ pipeline: true });
  try {
    const dev = await m.device('buffered', [{ name: 't', profile: { type: 'number' } }]);
    const client = await m.connect(dev.token);
    const batch = Array.from({ length: 50 }, (_, i) => ({ t: { value: i, at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() } }));
    await client.publishAsync(`device/${dev.deviceId}/state`, JSON.stringify(batch), { qos: 1 });
    await waitFor(async () => (await m.store!.history({ deviceId: dev.deviceId, asset: 't', limit: 100 })).length === 50, 10_000, 'fifty states');
    const values = (await m.store!.history({ deviceId: dev.deviceId, asset: 't', limit: 100, order: 'asc' })).map((r) => r.value);
    assert.equal(values, batch.map((b) => b.t.value));
  } finally {
    await m.stop();
  }
});

test.run();
