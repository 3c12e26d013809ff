/**
 * End to end through the composition root (app/createService.ts, embedded adapters: PGlite, local
 * log, chDB): devices activated on `thethingsnetwork` and `loriot` over the HTTP activation routes,
 * webhook uplinks in both formats over real HTTP, states read back over HTTP with the network's
 * time, a decode failure in the device's rejections, a device command pushed to a local
 * stand-in of The Things Stack's downlink queue, and asset commands to LoRaWAN devices going out
 * the same way, as a device command holding that one asset (spec §4.4).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Service } from '../../../app/createService.ts';
import { Topics } from '../../../schemas/messages.ts';
import { createDeviceOverHttp, startEmbeddedService } from '../../support/embeddedService.ts';
import { FakeTts } from '../../support/fakeTts.ts';
import { activateOverHttp, requestJson } from '../../support/lpwanStack.ts';
import { greenhouseSensorType, valveActuate, valveActuators } from '../../support/lpwanDeviceTypes.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const TTS_SECRET = 'e2e-tts-webhook-secret-0001';
const LORIOT_SECRET = 'e2e-loriot-output-secret-01';
const API_KEY = 'NNSXS.E2EKEY.0123456789ABCDEF';

const tmp = tempDir('lpwan-e2e');
let tts: FakeTts;
let service: Service;
let base = '';
const logs: string[] = [];

const valveType = {
  assets: [...greenhouseSensorType.assets, ...valveActuators],
  payload: { format: 'binary', conversion: { ...greenhouseSensorType.payload.conversion, actuate: valveActuate() } },
};

/** The valve alone encodes: the actuate block gives `interval` a default. */
const relayType = {
  assets: [greenhouseSensorType.assets[0], ...valveActuators],
  payload: { format: 'binary', conversion: { sense: [greenhouseSensorType.payload.conversion.sense[0]], actuate: valveActuate(10) } },
};

const cborType = {
  assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }, { name: 'interval', is: 'actuator', profile: { type: 'integer', minimum: 1, maximum: 1000 } }],
  payload: { format: 'cbor' },
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

type Lifecycle = { id: string; kind: string; asset?: string; value: unknown; status: string; code?: string; reason?: string; transitions: { status: string }[] };

async function commandOf(deviceId: string, token: string, id: string): Promise<Lifecycle | undefined> {
  const list = await requestJson(base, 'GET', `/device/${deviceId}/commands`, { token });
  return (list.json?.items as Lifecycle[] | undefined)?.find((c) => c.id === id);
}

async function settledCommand(deviceId: string, token: string, id: string, status: string): Promise<Lifecycle> {
  let last: Lifecycle | undefined;
  try {
    await waitFor(async () => (last = await commandOf(deviceId, token, id))?.status === status, 10_000, `${id} ${status}`);
  } catch (error) {
    throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
  }
  return last!;
}

test('an asset command over HTTP to a thethingsnetwork device goes out as a device command holding that asset, encoded by the actuate block, and its lifecycle reaches delivered', async () => {
  const device = await activateOverHttp(base, service.registry, relayType, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED005E2C3', applicationId: 'greenhouse' } }, 'greenhouse-relay-1');
  const put = (path: string, json: unknown) => requestJson(base, 'PUT', path, { token: device.userToken, json });
  const before = tts.queued.length;
  const issued = await put(`/device/${device.deviceId}/asset/valve/command`, { value: true });
  assert.is(issued.status, 202, issued.text);
  const asset = await settledCommand(device.deviceId, device.userToken, issued.json.id, 'delivered');
  assert.equal([asset.kind, asset.asset, asset.value], ['asset', 'valve', true], 'listed as the asset command it was issued as');
  assert.equal(asset.transitions.map((t) => t.status), ['queued', 'sent', 'delivered']);
  assert.is(tts.queued.length, before + 1);
  assert.equal(tts.queued.at(-1), {
    applicationId: 'greenhouse', webhookId: 'fleetstream', deviceId: 'eui-70b3d57ed005e2c3', fPort: 15,
    bytes: [0xa5, 0xff, 0x02, 0x58], frmPayload: 'pf8CWA==', priority: 'NORMAL', correlationIds: [`fleetstream:command:${issued.json.id}`],
  });

  // The device command with the same value: the same bytes, the same final status.
  const same = await put(`/device/${device.deviceId}/command`, { valve: true });
  assert.is(same.status, 202, same.text);
  const deviceCommand = await settledCommand(device.deviceId, device.userToken, same.json.id, 'delivered');
  assert.equal(deviceCommand.transitions.map((t) => t.status), asset.transitions.map((t) => t.status));
  assert.equal(tts.queued.at(-1)!.bytes, [0xa5, 0xff, 0x02, 0x58]);

  // By asset id (spec §4.3 `asset/<AssetID>/command`).
  const valveId = (await service.registry.getDevice(device.deviceId))!.assets.find((a) => a.name === 'valve')!.id;
  const byId = await put(`/asset/${valveId}/command`, { value: false });
  assert.is(byId.status, 202, byId.text);
  await settledCommand(device.deviceId, device.userToken, byId.json.id, 'delivered');
  assert.equal(tts.queued.at(-1)!.bytes, [0xa5, 0x00, 0x02, 0x58]);
  assert.equal(tts.queued.at(-1)!.correlationIds, [`fleetstream:command:${byId.json.id}`]);
});

test('an asset command to a CBOR thethingsnetwork device goes out as the CBOR map {asset: value}', async () => {
  const device = await activateOverHttp(base, service.registry, cborType, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED005E2D4', applicationId: 'greenhouse' } }, 'greenhouse-cbor-1');
  const issued = await requestJson(base, 'PUT', `/device/${device.deviceId}/asset/interval/command`, { token: device.userToken, json: { value: 42 } });
  assert.is(issued.status, 202, issued.text);
  await settledCommand(device.deviceId, device.userToken, issued.json.id, 'delivered');
  // a1 (map of 1) 68 "interval" 18 2a (42)
  assert.equal(tts.queued.at(-1)!.bytes, [0xa1, 0x68, ...Buffer.from('interval'), 0x18, 0x2a]);
  assert.is(tts.queued.at(-1)!.deviceId, 'eui-70b3d57ed005e2d4');
});

test('asset commands to LoRaWAN devices that cannot take them are refused at once; nothing reaches the network', async () => {
  const relay = await activateOverHttp(base, service.registry, relayType, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED005E2E5', applicationId: 'greenhouse' } }, 'greenhouse-relay-2');
  const needsBoth = await activateOverHttp(base, service.registry, valveType, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED005E2E6', applicationId: 'greenhouse' } }, 'greenhouse-valve-9');
  const senseOnly = await activateOverHttp(base, service.registry, { ...relayType, payload: { format: 'binary', conversion: { sense: relayType.payload.conversion.sense } } }, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED005E2E7', applicationId: 'greenhouse' } }, 'greenhouse-sense-1');
  const loriot = await activateOverHttp(base, service.registry, cborType, { networkId: 'loriot', data: { devEui: '0004A30B001C0532' } }, 'loriot-unit-4');
  const before = tts.requests.length;
  const cases: [typeof relay, string, unknown, number, string, RegExp][] = [
    [relay, '/asset/temperature/command', { value: 1 }, 422, 'NOT_ACTUATOR', /sensor/],
    [relay, '/asset/interval/command', { value: 5000 }, 422, 'PROFILE_VIOLATION', /interval/],
    [relay, '/asset/interval/command', { value: 'soon' }, 422, 'PROFILE_VIOLATION', /interval/],
    [relay, '/asset/interval/command', { value: 5 }, 422, 'VALIDATION_FAILED', /holding only "interval".*no value for asset 'valve'/],
    [needsBoth, '/asset/valve/command', { value: true }, 422, 'VALIDATION_FAILED', /holding only "valve".*no value for asset 'interval'/],
    [senseOnly, '/asset/valve/command', { value: true }, 422, 'VALIDATION_FAILED', /no actuate block/],
    [senseOnly, '/command', { valve: true }, 422, 'VALIDATION_FAILED', /no actuate block/],
    [loriot, '/asset/interval/command', { value: 5 }, 501, 'NO_DOWNLINK', /loriot/],
    [loriot, '/command', { interval: 5 }, 501, 'NO_DOWNLINK', /loriot/],
  ];
  for (const [device, path, json, status, code, reason] of cases) {
    const r = await requestJson(base, 'PUT', `/device/${device.deviceId}${path}`, { token: device.userToken, json });
    assert.is(r.status, status, `${path} ${JSON.stringify(json)}: ${r.text}`);
    assert.is(r.headers.get('content-type'), 'application/problem+json');
    assert.is(r.json.code, code, path);
    assert.match(r.json.detail, reason);
    assert.equal((await requestJson(base, 'GET', `/device/${device.deviceId}/commands`, { token: device.userToken })).json.items, [], 'nothing queued');
  }
  assert.is(tts.requests.length, before, 'nothing was pushed');
});

test('asset commands on topic commands: a thethingsnetwork device\'s goes out as a device command, a LORIOT device\'s fails as a device command does, a device without a network still waits for MQTT', async () => {
  const relay = await activateOverHttp(base, service.registry, relayType, { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED005E2F8', applicationId: 'greenhouse' } }, 'greenhouse-relay-3');
  const loriot = await activateOverHttp(base, service.registry, cborType, { networkId: 'loriot', data: { devEui: '0004A30B001C0533' } }, 'loriot-unit-5');
  const plain = await createDeviceOverHttp(service, base, [{ name: 'valve', is: 'actuator', profile: { type: 'boolean' } }]);
  const publish = (deviceId: string, id: string, asset: string, value: unknown) => service.log.append(Topics.commands, [{
    key: deviceId,
    value: new TextEncoder().encode(JSON.stringify({ id, deviceId, asset, value, issuer: 'app:e2e', issuedAt: Date.now() })),
  }]);
  const before = tts.queued.length;
  await publish(relay.deviceId, 'cmd-e2e-asset-tts', 'valve', false);
  await publish(loriot.deviceId, 'cmd-e2e-asset-loriot', 'interval', 20);
  await publish(plain.id, 'cmd-e2e-asset-mqtt', 'valve', true);
  await settledCommand(relay.deviceId, relay.userToken, 'cmd-e2e-asset-tts', 'delivered');
  assert.equal(tts.queued.at(-1)!.bytes, [0xa5, 0x00, 0x02, 0x58], 'valve off, interval at its default');
  assert.equal(tts.queued.at(-1)!.correlationIds, ['fleetstream:command:cmd-e2e-asset-tts']);
  const failed = await settledCommand(loriot.deviceId, loriot.userToken, 'cmd-e2e-asset-loriot', 'failed');
  assert.is(failed.code, 'NO_DOWNLINK');
  assert.match(failed.reason!, /on loriot/);
  // A device on no network: MQTT as before, queued until a connection of the device subscribes.
  await waitFor(async () => (await commandOf(plain.id, plain.userToken, 'cmd-e2e-asset-mqtt'))?.status === 'queued', 10_000, 'MQTT command listed');
  await new Promise((r) => setTimeout(r, 300));
  const waiting = await commandOf(plain.id, plain.userToken, 'cmd-e2e-asset-mqtt');
  assert.is(waiting!.status, 'queued');
  assert.match(waiting!.reason ?? '', /not connected or not subscribed/);
  assert.is(tts.queued.length, before + 1, 'only the thethingsnetwork device\'s command was pushed');
});

test.run();
