/**
 * End to end through the composition root (app/createService.ts, embedded adapters: PGlite, local
 * log, chDB): devices activated on `thethingsnetwork` and `loriot` over the HTTP activation routes,
 * webhook uplinks in both formats over real HTTP, states read back over HTTP with the network's
 * time, a decode failure in the device's rejections, and a device command pushed to a local
 * stand-in of The Things Stack's downlink queue.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Service } from '../app/createService.ts';
import { Topics } from '../schemas/messages.ts';
import { startEmbeddedService } from './support/embeddedService.ts';
import { FakeTts } from './support/fakeTts.ts';
import { activateOverHttp, requestJson } from './support/lpwanStack.ts';
import { tempDir, waitFor } from './support/tmp.ts';

const TTS_SECRET = 'e2e-tts-webhook-secret-0001';
const LORIOT_SECRET = 'e2e-loriot-output-secret-01';
const API_KEY = 'NNSXS.E2EKEY.0123456789ABCDEF';

const tmp = tempDir('lpwan-e2e');
let tts: FakeTts;
let service: Service;
let base = '';
const logs: string[] = [];

const valveType = {
  assets: [
    { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
    { name: 'humidity', is: 'sensor', profile: { type: 'number' } },
    { name: 'valve', is: 'actuator', profile: { type: 'boolean' } },
    { name: 'interval', is: 'actuator', profile: { type: 'integer', minimum: 1, maximum: 1000 } },
  ],
  payload: {
    format: 'binary',
    conversion: {
      sense: [
        { asset: 'temperature', value: { byte: 0, bytelength: 2, signed: true, calculation: 'val / 100' } },
        { asset: 'humidity', value: { byte: 2, calculation: 'val / 2' } },
      ],
      actuate: [
        { const: 165, field: { byte: 0 } },
        { asset: 'valve', field: { byte: 1, type: 'boolean' } },
        { asset: 'interval', field: { byte: 2, bytelength: 2, calculation: 'val / 60' } },
      ],
    },
  },
};

const cayenneType = {
  assets: [{ name: 'temperature_1', is: 'sensor', profile: { type: 'number' } }, { name: 'digital_in_2', is: 'sensor', profile: { type: 'number' } }],
  payload: { format: 'cayenne' },
};

test.before(async () => {
  tts = await FakeTts.start(API_KEY);
  ({ service, base } = await startEmbeddedService({
    dir: tmp.dir,
    applications: [
      { networkId: 'thethingsnetwork', applicationId: 'greenhouse', secret: TTS_SECRET, downlink: { baseUrl: tts.base, webhookId: 'fleetstream', apiKey: API_KEY, fPort: 15 } },
      { networkId: 'loriot', applicationId: 'BE7A0001', secret: LORIOT_SECRET },
    ],
    log: { level: 'warn', write: (line) => { logs.push(line); } },
  }));
});

test.after(async () => {
  await service?.stop();
  await tts.close();
  tmp.remove();
});

const post = (network: string, secret: string, body: unknown) =>
  fetch(`${base}/lpwan/${network}/uplink`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    .then(async (r) => ({ status: r.status, json: await r.json() as Record<string, string> }));

test('activation → The Things Stack webhook → states in chDB at the network time; LORIOT too; a decode failure in the rejections', async () => {
  const device = await activateOverHttp(base, service.registry, valveType, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED005E2A1', applicationId: 'greenhouse' } }, 'greenhouse-unit-7');
  const up = await post('thethingsnetwork', TTS_SECRET, {
    end_device_ids: { device_id: 'eui-70b3d57ed005e2a1', application_ids: { application_id: 'greenhouse' }, dev_eui: '70B3D57ED005E2A1' },
    received_at: '2025-06-01T09:00:00.900Z',
    uplink_message: { f_port: 2, f_cnt: 10, frm_payload: Buffer.from([0xff, 0x38, 0x7d]).toString('base64'), received_at: '2025-06-01T09:00:00.512345Z' },
  });
  assert.is(up.status, 202);
  assert.equal([up.json.status, up.json.deviceId], ['accepted', device.deviceId]);
  const get = (path: string) => requestJson(base, 'GET', path, { token: device.userToken });
  await waitFor(async () => (await get(`/device/${device.deviceId}/state`)).json?.humidity !== undefined, 20_000, 'states stored');
  const state = (await get(`/device/${device.deviceId}/state`)).json;
  assert.equal(state.temperature, { value: -2, at: '2025-06-01T09:00:00.512Z' });
  assert.equal(state.humidity, { value: 62.5, at: '2025-06-01T09:00:00.512Z' });
  const history = (await get(`/device/${device.deviceId}/asset/temperature/states`)).json.items;
  assert.is(history.length, 1);

  const lora = await activateOverHttp(base, service.registry, cayenneType, { networkId: 'net2', data: { devEui: '0004A30B001C0531' } }, 'loriot-unit-3');
  const rx = await post('loriot', LORIOT_SECRET, { cmd: 'rx', EUI: '0004A30B001C0531', ts: 1748768400123, fcnt: 3, port: 1, ack: false, data: '0167ff9c' });
  assert.equal([rx.status, rx.json.status, rx.json.deviceId], [202, 'accepted', lora.deviceId]);
  const getLora = (path: string) => requestJson(base, 'GET', path, { token: lora.userToken });
  await waitFor(async () => (await getLora(`/device/${lora.deviceId}/state`)).json?.temperature_1 !== undefined, 20_000, 'LORIOT state stored');
  assert.equal((await getLora(`/device/${lora.deviceId}/state`)).json.temperature_1, { value: -10, at: new Date(1748768400123).toISOString() });

  const bad = await post('thethingsnetwork', TTS_SECRET, {
    end_device_ids: { device_id: 'eui-70b3d57ed005e2a1', application_ids: { application_id: 'greenhouse' }, dev_eui: '70B3D57ED005E2A1' },
    uplink_message: { f_port: 2, frm_payload: 'AQ==' },
  });
  assert.equal([bad.json.status, bad.json.code], ['dropped', 'DECODE_FAILED'], 'refused at the webhook, recorded like any refusal');
  await waitFor(async () => ((await get(`/device/${device.deviceId}/rejections`)).json?.items ?? []).length > 0, 20_000, 'rejection listed');
  const [rejection] = (await get(`/device/${device.deviceId}/rejections`)).json.items;
  assert.equal([rejection.code, rejection.uplinkId, rejection.channel], ['DECODE_FAILED', bad.json.uplinkId, 'lpwan']);

  const unknown = await post('thethingsnetwork', TTS_SECRET, {
    end_device_ids: { device_id: 'stranger', application_ids: { application_id: 'greenhouse' }, dev_eui: '70B3D57ED0FFFFFF' },
    uplink_message: { f_port: 2, frm_payload: 'AQID' },
  });
  assert.equal([unknown.status, unknown.json.status, unknown.json.code], [202, 'dropped', 'UNKNOWN_DEVICE']);
  assert.is((await post('loriot', TTS_SECRET, { cmd: 'rx', EUI: '0004A30B001C0531', data: '00' })).status, 401);
});

test('a device command on topic commands for a thethingsnetwork device is validated, encoded by the actuate block and pushed to The Things Stack', async () => {
  const device = await activateOverHttp(base, service.registry, valveType, { networkId: 'net1', data: { devEui: '70B3D57ED005E2B2', applicationId: 'greenhouse' } }, 'greenhouse-unit-8');
  // The service's own command actors and pipeline carry it (app/createService.ts wires TtsDownlink).
  const actors = service.commands!;
  const publish = (id: string, assets: Record<string, unknown>) => service.log.append(Topics.commands, [{
    key: device.deviceId,
    value: new TextEncoder().encode(JSON.stringify({ id, deviceId: device.deviceId, assets, issuer: 'app:e2e', issuedAt: Date.now() })),
  }]);
  await publish('cmd-e2e-sensor', { temperature: 3 });
  await publish('cmd-e2e-1', { valve: true, interval: 10 });
  await waitFor(() => actors.recent(device.deviceId)[0]?.status === 'delivered', 10_000, 'delivered');
  assert.equal(tts.queued.at(-1), {
    applicationId: 'greenhouse', webhookId: 'fleetstream', deviceId: 'eui-70b3d57ed005e2b2', fPort: 15,
    bytes: [0xa5, 0xff, 0x02, 0x58], frmPayload: 'pf8CWA==', priority: 'NORMAL', correlationIds: ['fleetstream:command:cmd-e2e-1'],
  });
  let refused: Array<{ code: string; uplinkId: string; channel: string }> = [];
  await waitFor(async () => {
    refused = await service.store.rejections.recent(device.deviceId);
    return refused.some((r) => r.channel === 'command');
  }, 10_000, 'refused command recorded');
  assert.equal(refused.filter((r) => r.channel === 'command').map((r) => [r.uplinkId, r.code]), [['cmd-e2e-sensor', 'NOT_ACTUATOR']], 'sensors take no commands');
  assert.is(tts.queued.length, 1, 'nothing was pushed for the refused command');
});

test.run();
