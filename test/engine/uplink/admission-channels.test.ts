/**
 * Every channel through the one admission step (engine/uplink/UplinkAdmission.ts), against the
 * embedded service (app/createService.ts): good and bad uplinks over HTTP, MQTT and an LPWAN
 * webhook; afterwards the stored states and the recorded refusals are read back over HTTP. A refusal
 * is recorded the same way whichever channel it came from, and the engine stores what admission
 * decided without decoding any body again.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { activateOverHttp, requestJson } from '../../support/lpwanStack.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const LORIOT_SECRET = 'admission-loriot-secret-0001';
const tmp = tempDir('admission-channels');
let service: Service;
let base = '';
let user = { token: '', groundId: '' };
let device = { id: '', token: '' };

test.before(async () => {
  ({ service, base } = await startEmbeddedService({ dir: tmp.dir, applications: [{ networkId: 'loriot', applicationId: 'BE7A00AD', secret: LORIOT_SECRET }] }));
  const u = await service.registry.createUser({ name: 'admission' });
  const ground = await service.registry.createGround({ name: 'admission', userId: u.entity.id });
  user = { token: u.token, groundId: ground.id };
  const created = await service.registry.createDevice({
    groundId: ground.id, name: 'thermo',
    assets: [{ name: 't', is: 'sensor', profile: { type: 'number', maximum: 100 } }, { name: 'door', is: 'sensor', profile: { type: 'boolean' } }],
  });
  device = { id: created.device.id, token: created.token };
});

test.after(async () => {
  await service?.stop();
  tmp.remove();
});

const get = (path: string) => requestJson(base, 'GET', path, { token: user.token });
const rejections = async (deviceId = device.id) => ((await get(`/device/${deviceId}/rejections`)).json?.items ?? []) as Array<Record<string, string>>;
const put = (path: string, body: string, contentType = 'application/json') =>
  fetch(base + path, { method: 'PUT', headers: { authorization: `Bearer ${device.token}`, 'content-type': contentType }, body })
    .then(async (r) => ({ status: r.status, json: await r.json() as Record<string, any> }));

test('HTTP: an accepted device state stores its good entries and records the dropped one; a refused asset state is 422 and recorded', async () => {
  const ok = await put(`/device/${device.id}/state`, JSON.stringify({ t: { value: 21.5, at: '2026-01-01T00:00:00Z' }, nope: { value: 1 } }));
  assert.is(ok.status, 202);
  assert.equal(ok.json.rejected, [{ asset: 'nope', code: 'UNKNOWN_ASSET', reason: ok.json.rejected[0].reason }]);
  const refused = await put(`/device/${device.id}/asset/t/state`, JSON.stringify({ value: 1000 }));
  assert.equal([refused.status, refused.json.code], [422, 'PROFILE_VIOLATION']);
  assert.type(refused.json.uplinkId, 'string', 'the problem names the uplink its rejection is listed under');
  const malformed = await put(`/device/${device.id}/state`, '{"t":');
  assert.equal([malformed.status, malformed.json.code], [400, 'MALFORMED_JSON']);

  await waitFor(async () => (await rejections()).length >= 3, 10_000, 'three HTTP rejections');
  const rows = await rejections();
  const byUplink = (id: string) => rows.filter((r) => r.uplinkId === id).map((r) => [r.code, r.channel, r.asset ?? '']);
  assert.equal(byUplink(ok.json.uplinkId), [['UNKNOWN_ASSET', 'http', 'nope']]);
  assert.equal(byUplink(refused.json.uplinkId), [['PROFILE_VIOLATION', 'http', 't']]);
  assert.equal(byUplink(malformed.json.uplinkId), [['MALFORMED_JSON', 'http', '']]);
  await waitFor(async () => (await get(`/device/${device.id}/asset/t/states`)).json?.items?.length === 1, 10_000, 'stored');
  assert.equal((await get(`/device/${device.id}/asset/t/states`)).json.items.map((s: { value: number }) => s.value), [21.5]);
});

test('MQTT: a refused publish is recorded like an HTTP refusal; an accepted one is stored', async () => {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: device.token, password: device.token, reconnectPeriod: 0 });
  try {
    const before = (await rejections()).length;
    await client.publishAsync(`device/${device.id}/asset/door/state`, JSON.stringify({ value: 'open' }), { qos: 1 });
    await client.publishAsync(`device/${device.id}/state`, JSON.stringify({ door: { value: true, at: '2026-01-01T00:01:00Z' } }), { qos: 1 });
    const rows = await rejections();
    assert.is(rows.length, before + 1, 'recorded before the PUBACK');
    assert.equal([rows[0].code, rows[0].channel, rows[0].asset], ['PROFILE_VIOLATION', 'mqtt', 'door']);
    await waitFor(async () => (await get(`/device/${device.id}/asset/door/states`)).json?.items?.length === 1, 10_000, 'door stored');
  } finally {
    await client.endAsync(true);
  }
});

test('LPWAN: an undecodable payload is dropped with its code and recorded; a good one is stored at the network time', async () => {
  const lora = await activateOverHttp(base, service.registry, {
    assets: [{ name: 'temperature_1', is: 'sensor', profile: { type: 'number' } }],
    payload: { format: 'cayenne' },
  }, { networkId: 'loriot', data: { devEui: '0004A30B001CAD01' } }, 'admission-unit');
  const post = (data: string, fcnt: number) => fetch(`${base}/lpwan/loriot/uplink`, {
    method: 'POST', headers: { authorization: `Bearer ${LORIOT_SECRET}`, 'content-type': 'application/json' },
    body: JSON.stringify({ cmd: 'rx', EUI: '0004A30B001CAD01', ts: 1767225600000 + fcnt, fcnt, port: 1, ack: false, data }),
  }).then(async (r) => ({ status: r.status, json: await r.json() as Record<string, string> }));
  const bad = await post('01ff00', 1);
  assert.equal([bad.status, bad.json.status, bad.json.code], [202, 'dropped', 'DECODE_FAILED']);
  const good = await post('0167ff9c', 2);
  assert.equal([good.status, good.json.status], [202, 'accepted']);
  const lpwanRejections = async () => ((await requestJson(base, 'GET', `/device/${lora.deviceId}/rejections`, { token: lora.userToken })).json?.items ?? []) as Array<Record<string, string>>;
  await waitFor(async () => (await lpwanRejections()).length === 1, 10_000, 'LPWAN rejection');
  const [row] = await lpwanRejections();
  assert.equal([row.code, row.channel, row.uplinkId], ['DECODE_FAILED', 'lpwan', bad.json.uplinkId]);
  await waitFor(async () => (await requestJson(base, 'GET', `/device/${lora.deviceId}/state`, { token: lora.userToken })).json?.temperature_1 !== undefined, 10_000, 'stored');
  const state = (await requestJson(base, 'GET', `/device/${lora.deviceId}/state`, { token: lora.userToken })).json.temperature_1;
  assert.equal(state, { value: -10, at: new Date(1767225600002).toISOString() });
});

test('the engine stored what admission decided: no device actor was needed to decode a body', async () => {
  const { actors, stats } = service.pipeline!;
  assert.ok(stats.admittedDirect >= 3, `admitted uplinks handed straight to the store: ${stats.admittedDirect}`);
  assert.is(actors.created, 0, 'no actor loaded a device to decode an admitted uplink');
});

test.run();
