/**
 * Canonical strings, the `at` window and LPWAN replays through every channel of the embedded
 * service (HTTP, MQTT, The Things Stack and LORIOT webhooks), reading back what was stored.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encode } from 'cbor-x';
import mqtt from 'mqtt';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { activateOverHttp, requestJson, type Activated } from '../../support/lpwanStack.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const LORIOT_SECRET = 'canonical-loriot-secret-0001';
const TTS_SECRET = 'canonical-tts-secret-00000001';
const tmp = tempDir('canonical-channels');
let service: Service;
let base = '';
let user = { token: '' };
let device = { id: '', token: '' };
let loriot: Activated;
let tts: Activated;

const COMPOSED = '\u00C4rger';
const DECOMPOSED = 'A\u0308rger';
const LABEL_PROFILE = { type: 'string', enum: [COMPOSED, 'ok'] };

test.before(async () => {
  ({ service, base } = await startEmbeddedService({
    dir: tmp.dir,
    applications: [
      { networkId: 'loriot', applicationId: 'BE7A00AD', secret: LORIOT_SECRET },
      { networkId: 'thethingsnetwork', applicationId: 'canon-app', secret: TTS_SECRET },
    ],
  }));
  const u = await service.registry.createUser({ name: 'canonical' });
  const ground = await service.registry.createGround({ name: 'canonical', userId: u.entity.id });
  user = { token: u.token };
  const created = await service.registry.createDevice({
    groundId: ground.id, name: 'thermo',
    assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }, { name: 'label', is: 'sensor', profile: LABEL_PROFILE }, { name: 'note', is: 'sensor' }],
  });
  device = { id: created.device.id, token: created.token };
  const definition = { assets: [{ name: 'label', is: 'sensor', profile: LABEL_PROFILE }, { name: 't', is: 'sensor', profile: { type: 'number' } }], payload: { format: 'cbor' } };
  loriot = await activateOverHttp(base, service.registry, definition, { networkId: 'loriot', data: { devEui: '0004A30B00C0FFEE' } }, 'canon-loriot');
  tts = await activateOverHttp(base, service.registry, definition, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED0C0FFEE', applicationId: 'canon-app' } }, 'canon-tts');
});

test.after(async () => {
  await service?.stop();
  tmp.remove();
});

const get = (path: string, token = user.token) => requestJson(base, 'GET', path, { token });
const put = (path: string, body: string | Uint8Array, contentType = 'application/json') =>
  fetch(base + path, { method: 'PUT', headers: { authorization: `Bearer ${device.token}`, 'content-type': contentType }, body })
    .then(async (r) => ({ status: r.status, json: await r.json() as Record<string, any> }));
const states = async (deviceId: string, asset: string, token = user.token) =>
  ((await get(`/device/${deviceId}/asset/${asset}/states?limit=100`, token)).json?.items ?? []) as Array<{ value: unknown; at: string }>;
const rejections = async (deviceId: string, token = user.token) => ((await get(`/device/${deviceId}/rejections`, token)).json?.items ?? []) as Array<Record<string, string>>;

function loriotRx(eui: string, fcnt: number, ts: number, body: unknown) {
  return { cmd: 'rx', EUI: eui, ts, fcnt, port: 1, ack: false, data: Buffer.from(encode(body)).toString('hex') };
}
function ttsUp(devEui: string, fCnt: number, receivedAt: string, body: unknown, extra: Record<string, unknown> = {}) {
  return {
    end_device_ids: { device_id: 'canon', dev_eui: devEui, application_ids: { application_id: 'canon-app' } },
    correlation_ids: [`as:up:${devEui}${fCnt}`],
    received_at: receivedAt,
    uplink_message: { f_port: 1, f_cnt: fCnt, frm_payload: Buffer.from(encode(body)).toString('base64'), received_at: receivedAt, ...extra },
  };
}
const webhook = (network: 'loriot' | 'thethingsnetwork', body: unknown) => fetch(`${base}/lpwan/${network}/uplink`, {
  method: 'POST', headers: { authorization: network === 'loriot' ? `Bearer ${LORIOT_SECRET}` : TTS_SECRET, 'content-type': 'application/json' },
  body: typeof body === 'string' ? body : JSON.stringify(body),
}).then(async (r) => ({ status: r.status, json: await r.json() as Record<string, any> }));

// ---- canonical strings ----

test('HTTP: a lone surrogate in a string value is refused (INVALID_TEXT); a decomposed string is stored in NFC and meets the profile', async () => {
  const lone = await put(`/device/${device.id}/asset/note/state`, '{"value": "bad \\ud800 half"}');
  assert.equal([lone.status, lone.json.code], [422, 'INVALID_TEXT']);
  assert.match(lone.json.detail ?? lone.json.title ?? JSON.stringify(lone.json), /surrogate/);
  const nested = await put(`/device/${device.id}/state`, '{"note": {"value": {"k\\udc00": 1}}, "t": {"value": 1}}');
  assert.is(nested.status, 202);
  assert.equal(nested.json.rejected.map((r: { code: string; asset: string }) => [r.asset, r.code]), [['note', 'INVALID_TEXT']]);
  const twin = await put(`/device/${device.id}/asset/label/state`, JSON.stringify({ value: DECOMPOSED }));
  assert.is(twin.status, 202, 'the profile checks the canonical string');
  await waitFor(async () => (await states(device.id, 'label')).length === 1, 10_000, 'label stored');
  assert.equal((await states(device.id, 'label')).map((s) => s.value), [COMPOSED]);
  assert.equal((await states(device.id, 'note')).length, 0, 'nothing with a lone surrogate was stored');
});

test('MQTT: the same rules: lone surrogate refused and recorded, decomposed stored composed', async () => {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: device.token, password: device.token, reconnectPeriod: 0 });
  try {
    await client.publishAsync(`device/${device.id}/asset/note/state`, '{"value": "\\udfff"}', { qos: 1 });
    await client.publishAsync(`device/${device.id}/state`, JSON.stringify({ note: { value: { [DECOMPOSED]: DECOMPOSED } } }), { qos: 1 });
    const rows = await rejections(device.id);
    assert.equal([rows[0].code, rows[0].channel, rows[0].asset], ['INVALID_TEXT', 'mqtt', 'note']);
    await waitFor(async () => (await states(device.id, 'note')).length === 1, 10_000, 'note stored');
    assert.equal((await states(device.id, 'note'))[0].value, { [COMPOSED]: COMPOSED }, 'keys and strings inside an object are NFC too');
  } finally {
    await client.endAsync(true);
  }
});

test('LPWAN (CBOR payloads): decomposed strings stored composed; text that is not UTF-8 is refused', async () => {
  const now = Date.now();
  const r = await webhook('loriot', loriotRx('0004A30B00C0FFEE', 1, now, { label: DECOMPOSED }));
  assert.equal([r.status, r.json.status], [202, 'accepted']);
  const t = await webhook('thethingsnetwork', ttsUp('70B3D57ED0C0FFEE', 1, new Date(now).toISOString(), { label: DECOMPOSED }));
  assert.equal([t.status, t.json.status], [202, 'accepted']);
  // CBOR text holding a surrogate's (CESU-8) bytes: not UTF-8, so not a string at all.
  const cesu = Buffer.from([0xa1, 0x65, ...Buffer.from('label'), 0x63, 0xed, 0xa0, 0x80]);
  const bad = await webhook('loriot', { cmd: 'rx', EUI: '0004A30B00C0FFEE', ts: now, fcnt: 2, port: 1, data: cesu.toString('hex') });
  assert.equal([bad.json.status, bad.json.code], ['dropped', 'MALFORMED_CBOR']);
  await waitFor(async () => (await states(loriot.deviceId, 'label', loriot.userToken)).length === 1, 10_000, 'loriot stored');
  await waitFor(async () => (await states(tts.deviceId, 'label', tts.userToken)).length === 1, 10_000, 'tts stored');
  assert.is((await states(loriot.deviceId, 'label', loriot.userToken))[0].value, COMPOSED);
  assert.is((await states(tts.deviceId, 'label', tts.userToken))[0].value, COMPOSED);
});

test('HTTP registry edge: a device named with a BOM or an NFC twin of an existing name', async () => {
  const g = await service.registry.createUser({ name: 'namer' });
  const ground = await service.registry.createGround({ name: 'names', userId: g.entity.id });
  const post = (name: string) => requestJson(base, 'POST', `/ground/${ground.id}/devices`, { token: g.token, json: { name } });
  const first = await post(`\uFEFF${DECOMPOSED}`);
  assert.is(first.status, 201);
  assert.is(first.json.name, COMPOSED);
  const twin = await post(COMPOSED);
  assert.equal([twin.status, twin.json.code], [409, 'CONFLICT']);
  const long = await post(`\uFEFF${'x'.repeat(128)}`);
  assert.equal([long.status, long.json.name], [201, 'x'.repeat(128)], 'the length rule counts the canonical name');
  const bom = await post('\uFEFF');
  assert.equal([bom.status, bom.json.code], [422, 'VALIDATION_FAILED']);
  const lone = await post('x\uD800'); // JSON.stringify writes it as the escape \ud800
  assert.equal([lone.status, lone.json.code], [422, 'VALIDATION_FAILED']);
});

test('HTTP activation edge: a hardware id is checked and stored canonical; its NFC twin is a second code → 409', async () => {
  const partner = await service.registry.createPartner({ name: 'canon-partner' });
  await service.registry.publishDeviceType(partner.entity.id, 'unit', { assets: [] });
  const create = (id: string) => requestJson(base, 'POST', `/partner/${partner.entity.id}/activations`, {
    token: partner.token,
    json: { description: 'unit', hardware: { id }, options: [{ description: '', device: { type: `${partner.entity.id}/unit` }, network: { networkId: 'orangebe', data: {} } }] },
  });
  const first = await create(`\uFEFF${DECOMPOSED}${'h'.repeat(123)}`);
  assert.is(first.status, 201, first.text);
  assert.is(first.json.hardware.id, `${COMPOSED}${'h'.repeat(123)}`);
  const twin = await create(`${COMPOSED}${'h'.repeat(123)}`);
  assert.equal([twin.status, twin.json.code], [409, 'CONFLICT']);
  const lone = await create('mac-\uD800');
  assert.equal([lone.status, lone.json.code], [422, 'VALIDATION_FAILED']);
  const invisible = await create('mac\u200B01');
  assert.equal([invisible.status, invisible.json.code], [422, 'VALIDATION_FAILED']);
});

// ---- the `at` window ----

const DAY = 86_400_000;

test('HTTP and MQTT: at more than a day ahead or before 1970 is INVALID_AT with a reason; nothing stored', async () => {
  const ahead = new Date(Date.now() + 2 * DAY).toISOString();
  const far = await put(`/device/${device.id}/asset/t/state`, JSON.stringify({ value: 101, at: ahead }));
  assert.equal([far.status, far.json.code], [422, 'INVALID_AT']);
  assert.match(JSON.stringify(far.json), /ms ahead of the receive time/);
  const past = await put(`/device/${device.id}/asset/t/state`, JSON.stringify({ value: 102, at: '1969-07-20T20:17:40Z' }));
  assert.equal([past.status, past.json.code], [422, 'INVALID_AT']);
  assert.match(JSON.stringify(past.json), /before 1970-01-01/);
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: device.token, password: device.token, reconnectPeriod: 0 });
  try {
    await client.publishAsync(`device/${device.id}/asset/t/state`, JSON.stringify({ value: 103, at: '2999-01-01T00:00:00Z' }), { qos: 1 });
  } finally {
    await client.endAsync(true);
  }
  const rows = await rejections(device.id);
  assert.equal([rows[0].code, rows[0].channel, rows[0].asset], ['INVALID_AT', 'mqtt', 't']);
  const values = (await states(device.id, 't')).map((s) => s.value);
  assert.not.ok(values.includes(101) || values.includes(102) || values.includes(103), `stored: ${JSON.stringify(values)}`);
});

test("LPWAN: LORIOT's ts and The Things Stack's received_at outside the window drop the uplink as INVALID_AT", async () => {
  const ahead = Date.now() + 2 * DAY;
  const l = await webhook('loriot', loriotRx('0004A30B00C0FFEE', 40, ahead, { t: 40 }));
  assert.equal([l.status, l.json.status, l.json.code], [202, 'dropped', 'INVALID_AT']);
  assert.match(l.json.reason, /the receive time the network reported/);
  const t = await webhook('thethingsnetwork', ttsUp('70B3D57ED0C0FFEE', 40, '1969-12-31T00:00:00Z', { t: 40 }));
  assert.equal([t.status, t.json.status, t.json.code], [202, 'dropped', 'INVALID_AT']);
  const tAhead = await webhook('thethingsnetwork', ttsUp('70B3D57ED0C0FFEE', 41, new Date(ahead).toISOString(), { t: 41 }));
  assert.equal([tAhead.json.status, tAhead.json.code], ['dropped', 'INVALID_AT']);
  await waitFor(async () => (await rejections(tts.deviceId, tts.userToken)).filter((r) => r.code === 'INVALID_AT').length === 2, 10_000, 'tts rejections');
  assert.equal((await rejections(loriot.deviceId, loriot.userToken)).filter((r) => r.code === 'INVALID_AT').map((r) => r.channel), ['lpwan']);
  assert.equal((await states(loriot.deviceId, 't', loriot.userToken)).length, 0);
  assert.equal((await states(tts.deviceId, 't', tts.userToken)).length, 0);
});

// ---- LPWAN: repeated deliveries and simulated uplinks ----

test('LPWAN: a The Things Stack webhook and a LORIOT rx delivered twice are stored once, answered with one uplink id', async () => {
  const t0 = Date.now() - 60_000;
  const ttsMessage = ttsUp('70B3D57ED0C0FFEE', 77, new Date(t0).toISOString(), { t: 77 });
  const first = await webhook('thethingsnetwork', ttsMessage);
  const second = await webhook('thethingsnetwork', ttsMessage);
  assert.equal([first.status, first.json.status, first.json.repeated], [202, 'accepted', undefined]);
  assert.equal(second.json, { ...first.json, repeated: true });
  const rx = loriotRx('0004A30B00C0FFEE', 77, t0, { t: 77 });
  const l1 = await webhook('loriot', rx);
  const l2 = await webhook('loriot', rx);
  assert.equal(l2.json, { ...l1.json, repeated: true });
  // The same frame counter at another network time is another frame (the counter was reset).
  const reset = await webhook('loriot', loriotRx('0004A30B00C0FFEE', 77, t0 + 1000, { t: 78 }));
  assert.is(reset.json.status, 'accepted');
  assert.is.not(reset.json.uplinkId, l1.json.uplinkId);
  await waitFor(async () => (await states(loriot.deviceId, 't', loriot.userToken)).length === 2, 10_000, 'loriot states');
  await waitFor(async () => (await states(tts.deviceId, 't', tts.userToken)).length === 1, 10_000, 'tts state');
  await new Promise((r) => setTimeout(r, 200));
  assert.equal((await states(tts.deviceId, 't', tts.userToken)).map((s) => s.value), [77]);
  assert.equal((await states(loriot.deviceId, 't', loriot.userToken)).map((s) => s.value), [78, 77]);
});

test('LPWAN: a dropped message delivered twice is one rejection; a simulated The Things Stack uplink is ignored, never stored', async () => {
  const t0 = Date.now() - 30_000;
  const bad = { ...loriotRx('0004A30B00C0FFEE', 90, t0, {}), data: '0' };
  const b1 = await webhook('loriot', bad);
  const b2 = await webhook('loriot', bad);
  assert.equal([b1.json.status, b1.json.code], ['dropped', 'MALFORMED_PAYLOAD']);
  assert.equal(b2.json, { ...b1.json, repeated: true });
  await waitFor(async () => (await rejections(loriot.deviceId, loriot.userToken)).some((r) => r.uplinkId === b1.json.uplinkId), 10_000, 'rejection');
  assert.is((await rejections(loriot.deviceId, loriot.userToken)).filter((r) => r.uplinkId === b1.json.uplinkId).length, 1);

  const simulated = await webhook('thethingsnetwork', { ...ttsUp('70B3D57ED0C0FFEE', 91, new Date(t0).toISOString(), { t: 91 }), simulated: true });
  assert.equal([simulated.status, simulated.json.status], [202, 'ignored']);
  assert.match(simulated.json.reason, /simulated/);
  await new Promise((r) => setTimeout(r, 300));
  assert.not.ok((await states(tts.deviceId, 't', tts.userToken)).some((s) => s.value === 91), 'a simulated uplink is not a measurement');
  assert.not.ok((await rejections(tts.deviceId, tts.userToken)).some((r) => /simulated/.test(r.reason)), 'nor a rejection');
});

test.run();
