/**
 * Device commands to The Things Stack: encoding in the device type's format, the push request
 * checked by a local stand-in of the downlink queue endpoint on loopback, and the command actor's
 * lifecycle on a simulated clock — retries with backoff on 429/503/unreachable, no retry of a 4xx.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TtsDownlink, ttsDeviceId, ttsPushUrl } from '../../../adapters/lpwan/TtsDownlink.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { CommandActors, type AcceptedCommand } from '../../../engine/actors/CommandActors.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { encodeDeviceCommand } from '../../../engine/lpwan/encodeDeviceCommand.ts';
import { lpwanNetworkOf } from '../../../engine/commands/lpwanNetworkOf.ts';
import { checkDownlink } from '../../../engine/commands/validateCommand.ts';
import { StaticLpwanApplications } from '../../../engine/lpwan/StaticLpwanApplications.ts';
import type { DeviceWithAssets } from '../../../engine/ports/registry.ts';
import type { CommandView } from '../../../schemas/commands.ts';
import { FakeTts } from '../../support/fakeTts.ts';
import { waitFor } from '../../support/tmp.ts';
import { thrownBy } from '../../support/fleetErrors.ts';

const API_KEY = 'NNSXS.TESTKEY0123456789.ABCDEFGHIJKLMNOPQRSTUVWXYZ';

const script = {
  sense: [{ asset: 'temperature', value: { byte: 0, bytelength: 2, signed: true, calculation: 'val / 100' } }],
  actuate: [
    { const: 0xa5, field: { byte: 0 } },
    { asset: 'valve', field: { byte: 1, type: 'boolean' } },
    { asset: 'interval', field: { byte: 2, bytelength: 2, calculation: 'val / 60' } },
  ],
};

function device(id: string, network: DeviceWithAssets['network'], payload?: DeviceWithAssets['payload']): DeviceWithAssets {
  return { id, groundId: 'g'.repeat(22), name: id, title: id, description: '', network, payload, createdAt: 0, assets: [] };
}

const devices = new Map<string, DeviceWithAssets>([
  ['binary', device('binary', { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED0000001', applicationId: 'fleet-app' } }, { format: 'binary', conversion: script })],
  ['cbor', device('cbor', { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED0000002', applicationId: 'fleet-app' } }, { format: 'cbor' })],
  ['plain', device('plain', { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED0000003', applicationId: 'fleet-app' } })],
  ['loriot', device('loriot', { networkId: 'loriot', data: { devEui: '0004A30B001C0530' } }, { format: 'cayenne' })],
  ['nodown', device('nodown', { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED0000004', applicationId: 'quiet-app' } }, { format: 'cbor' })],
  ['senseonly', device('senseonly', { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED0000005', applicationId: 'fleet-app' } }, { format: 'binary', conversion: { sense: script.sense } })],
]);
const registry = { getDevice: async (id: string) => devices.get(id) };

let tts: FakeTts;
let applications: StaticLpwanApplications;

test.before(async () => {
  tts = await FakeTts.start(API_KEY);
  applications = new StaticLpwanApplications({
    applications: [
      { networkId: 'thethingsnetwork', applicationId: 'fleet-app', secret: 'webhook-secret-000000000001', downlink: { baseUrl: `${tts.base}/`, webhookId: 'fleetstream', apiKey: API_KEY, fPort: 10, priority: 'HIGH' } },
      { networkId: 'thethingsnetwork', applicationId: 'quiet-app', secret: 'webhook-secret-000000000002' },
    ],
  });
});

test.after(async () => {
  await tts.close();
});

const flush = () => new Promise((r) => setImmediate(r));
let n = 0;
const command = (deviceId: string, assets: Record<string, unknown>): AcceptedCommand =>
  ({ id: `cmd-${++n}`, deviceId, kind: 'device', assets, at: '2026-01-01T00:00:00.000Z', issuer: 'test' });

function actorsWith(clock: SimulatedClock, downlink: TtsDownlink, changes: string[] = []) {
  return new CommandActors({ clock, downlink, retryBaseMs: 1000, retryMaxMs: 8000, onChange: (v: Readonly<CommandView>) => changes.push(`${v.status}${v.code ? `:${v.code}` : ''}`) });
}

async function settled(actors: CommandActors, deviceId: string, id: string, status: string): Promise<CommandView> {
  await waitFor(() => actors.recent(deviceId).find((v) => v.id === id)?.status === status, 5000, `${id} ${status}`);
  return actors.recent(deviceId).find((v) => v.id === id)!;
}

test('encodeDeviceCommand: actuate block, Cayenne LPP, CBOR, and what cannot be encoded', () => {
  const binary = devices.get('binary')!.payload;
  assert.equal([...encodeDeviceCommand(binary, { valve: true, interval: 5 })], [0xa5, 0xff, 0x01, 0x2c]);
  assert.equal([...encodeDeviceCommand({ format: 'cayenne' }, { digital_out_4: 1 })], [0x04, 0x01, 0x01]);
  assert.equal([...encodeDeviceCommand({ format: 'cbor' }, { LED: true })], [0xa1, 0x63, 0x4c, 0x45, 0x44, 0xf5]);
  assert.equal([...encodeDeviceCommand(undefined, { LED: true })], [0xa1, 0x63, 0x4c, 0x45, 0x44, 0xf5], 'no format: CBOR');
  assert.equal([...encodeDeviceCommand({ format: 'json' }, { LED: true })], [0xa1, 0x63, 0x4c, 0x45, 0x44, 0xf5], 'json uplinks: CBOR downlinks');
  const refused = (f: () => unknown, pattern: RegExp) => {
    const error = thrownBy(f);
    assert.is(error.code, 'VALIDATION_FAILED');
    assert.match(error.message, pattern);
  };
  refused(() => encodeDeviceCommand(devices.get('senseonly')!.payload, { valve: true }), /no actuate block/);
  refused(() => encodeDeviceCommand(binary, { valve: true }), /interval/);
  refused(() => encodeDeviceCommand(binary, { valve: true, interval: 1e9 }), /range|fit/);
  refused(() => encodeDeviceCommand({ format: 'cbor' }, { text: 'x'.repeat(300) }), /at most 242/);
});

test('asset commands leave through the network for LoRaWAN devices only; what can be known before one is queued', () => {
  const on = (networkId: string | undefined) => lpwanNetworkOf({ network: networkId === undefined ? undefined : { networkId, data: {} } })?.id;
  assert.equal(['thethingsnetwork', 'loriot', 'thingpark', 'mythings', 'lattelecom', 'tc'].map(on), ['thethingsnetwork', 'loriot', 'thingpark', 'mythings', 'lattelecom', 'tc']);
  assert.equal(['tmobilenl', 'orangebe', 'nowhere', undefined].map(on), [undefined, undefined, undefined, undefined], 'cellular, unknown and unbound devices keep MQTT');
  const check = (id: string, assets: Record<string, unknown>, asset?: string) => {
    const decision = checkDownlink(devices.get(id)!, assets, asset);
    return decision.ok ? 'ok' : `${decision.code}: ${decision.reason}`;
  };
  assert.is(check('cbor', { LED: true }, 'LED'), 'ok');
  assert.is(check('binary', { valve: true, interval: 5 }), 'ok');
  assert.match(check('binary', { valve: true }, 'valve'), /^VALIDATION_FAILED: an asset command to a LoRaWAN device goes out as a device command holding only "valve": .*interval/);
  assert.match(check('senseonly', { valve: true }), /^VALIDATION_FAILED: .*no actuate block/);
  assert.match(check('cbor', { text: 'x'.repeat(300) }, 'text'), /^VALIDATION_FAILED: .*at most 242/);
  assert.match(check('loriot', { digital_out_1: 1 }, 'digital_out_1'), /^NO_DOWNLINK: device loriot is on loriot, which takes no downlinks; LPWAN commands go over thethingsnetwork only/);
  // Only the network and the type are known here: missing downlink settings fail the command later (NO_DOWNLINK).
  assert.is(check('nodown', { LED: true }), 'ok');
  assert.is(checkDownlink({ id: 'mqtt', assets: [] }, { anything: 'x'.repeat(300) }).ok, true, 'a device on no network is not checked here');
  assert.is(checkDownlink({ id: 'cell', assets: [], network: { networkId: 'tmobilenl', data: {} }, payload: { format: 'binary', conversion: { sense: script.sense } } }, { valve: true }).ok, true);
});

test('The Things Stack device ids and push URLs', () => {
  assert.is(ttsDeviceId({}, '70B3D57ED0000001'), 'eui-70b3d57ed0000001');
  assert.is(ttsDeviceId({ deviceIdTemplate: 'sensor-{DEVEUI}' }, '70b3d57ed0000001'), 'sensor-70B3D57ED0000001');
  assert.is(
    ttsPushUrl({ baseUrl: 'https://eu1.cloud.thethings.network//', webhookId: 'wh1', apiKey: 'k' }, 'app1', 'dev1'),
    'https://eu1.cloud.thethings.network/api/v3/as/applications/app1/webhooks/wh1/devices/dev1/down/push',
  );
});

test('a device command is pushed with the API key, the configured port and priority, and the encoded bytes in base64', async () => {
  const clock = new SimulatedClock(0);
  const actors = actorsWith(clock, new TtsDownlink({ devices: registry, applications, clock }));
  const c = command('binary', { valve: true, interval: 5 });
  actors.submit(c);
  const view = await settled(actors, 'binary', c.id, 'delivered');
  assert.is(view.attempts, 1);
  const pushed = tts.queued.at(-1)!;
  assert.equal(pushed, {
    applicationId: 'fleet-app', webhookId: 'fleetstream', deviceId: 'eui-70b3d57ed0000001', fPort: 10,
    bytes: [0xa5, 0xff, 0x01, 0x2c], frmPayload: 'pf8BLA==', priority: 'HIGH', correlationIds: [`fleetstream:command:${c.id}`],
  });
  const cbor = command('cbor', { LED: true });
  actors.submit(cbor);
  await settled(actors, 'cbor', cbor.id, 'delivered');
  assert.is(tts.queued.at(-1)!.frmPayload, Buffer.from([0xa1, 0x63, 0x4c, 0x45, 0x44, 0xf5]).toString('base64'));
  actors.stop();
});

test('429 and 503 are retried after a Clock-driven backoff, then the downlink is delivered', async () => {
  const clock = new SimulatedClock(0);
  const changes: string[] = [];
  const actors = actorsWith(clock, new TtsDownlink({ devices: registry, applications, clock }), changes);
  const before = tts.requests.length;
  const queuedBefore = tts.queued.length;
  tts.script.push(
    { status: 429, body: { code: 8, message: 'error:pkg/ratelimit:rate_limit_exceeded (rate limit exceeded)' }, headers: { 'retry-after': '1' } },
    { status: 503, body: { code: 14, message: 'unavailable' } },
  );
  const c = command('binary', { valve: false, interval: 1 });
  actors.submit(c);
  await waitFor(() => tts.requests.length === before + 1 && actors.recent('binary')[0].status === 'queued', 5000, 'first attempt requeued');
  assert.match(actors.recent('binary')[0].reason ?? '', /429.*rate limit exceeded/);
  clock.advance(999);
  await flush();
  assert.is(tts.requests.length, before + 1, 'no retry before the backoff');
  clock.advance(1);
  await waitFor(() => tts.requests.length === before + 2 && actors.recent('binary')[0].status === 'queued', 5000, 'second attempt requeued');
  clock.advance(1999);
  await flush();
  assert.is(tts.requests.length, before + 2, 'the backoff doubled');
  clock.advance(1);
  const view = await settled(actors, 'binary', c.id, 'delivered');
  assert.is(view.attempts, 3);
  assert.equal(changes, ['queued', 'sent', 'queued', 'sent', 'queued', 'sent', 'delivered']);
  assert.equal(tts.requests.slice(before).map((r) => r.status), [429, 503, 200]);
  assert.is(tts.queued.length, queuedBefore + 1);
  assert.equal(tts.queued.at(-1)!.bytes, [0xa5, 0x00, 0x00, 0x3c]);
  actors.stop();
});

test('a 400 from The Things Stack fails the command with its reason and is not retried', async () => {
  const clock = new SimulatedClock(0);
  const actors = actorsWith(clock, new TtsDownlink({ devices: registry, applications, clock }));
  const before = tts.requests.length;
  tts.script.push({ status: 400, body: { code: 3, message: 'error:pkg/networkserver:application_downlink_too_long (application downlink too long)' } });
  const c = command('binary', { valve: true, interval: 2 });
  actors.submit(c);
  const view = await settled(actors, 'binary', c.id, 'failed');
  assert.is(view.code, 'DOWNLINK_REFUSED');
  assert.match(view.reason!, /400: error:pkg\/networkserver:application_downlink_too_long/);
  clock.advance(3_600_000);
  await flush();
  assert.is(tts.requests.length, before + 1);
  actors.stop();
});

test('a wrong API key (401) fails for good too', async () => {
  const clock = new SimulatedClock(0);
  const wrongKey = new StaticLpwanApplications({ applications: [{ networkId: 'thethingsnetwork', applicationId: 'fleet-app', secret: 'webhook-secret-000000000001', downlink: { baseUrl: tts.base, webhookId: 'fleetstream', apiKey: 'NNSXS.WRONG' } }] });
  const actors = actorsWith(clock, new TtsDownlink({ devices: registry, applications: wrongKey, clock }));
  const c = command('cbor', { LED: false });
  actors.submit(c);
  const view = await settled(actors, 'cbor', c.id, 'failed');
  assert.is(view.code, 'DOWNLINK_REFUSED');
  assert.match(view.reason!, /401: error:pkg\/auth:token_invalid/);
  actors.stop();
});

test('devices without a The Things Stack downlink, unknown devices and commands that do not encode fail at once', async () => {
  const clock = new SimulatedClock(0);
  const actors = actorsWith(clock, new TtsDownlink({ devices: registry, applications, clock }));
  const before = tts.requests.length;
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ['loriot', { digital_out_1: 1 }, 'NO_DOWNLINK', /on loriot/],
    ['nodown', { LED: true }, 'NO_DOWNLINK', /no downlink settings for thethingsnetwork application quiet-app/],
    ['missing', { LED: true }, 'UNKNOWN_DEVICE', /not found/],
    ['senseonly', { valve: true }, 'VALIDATION_FAILED', /no actuate block/],
  ];
  for (const [deviceId, assets, code, reason] of cases) {
    const c = command(deviceId, assets);
    actors.submit(c);
    const view = await settled(actors, deviceId, c.id, 'failed');
    assert.is(view.code, code, deviceId);
    assert.match(view.reason!, reason);
  }
  assert.is(tts.requests.length, before, 'nothing was sent');
  actors.stop();
});

test('an unreachable network server and one that does not answer in time are retriable', async () => {
  const clock = new SimulatedClock(0);
  const closed = await FakeTts.start(API_KEY);
  const base = closed.base;
  await closed.close();
  const unreachable = new StaticLpwanApplications({ applications: [{ networkId: 'thethingsnetwork', applicationId: 'fleet-app', secret: 'webhook-secret-000000000001', downlink: { baseUrl: base, webhookId: 'fleetstream', apiKey: API_KEY } }] });
  const down = new TtsDownlink({ devices: registry, applications: unreachable, clock });
  const error = await down.send({ commandId: 'x', deviceId: 'cbor', assets: { LED: true }, at: '2026-01-01T00:00:00Z' }).then(() => undefined, (e: unknown) => e);
  assert.instance(error, FleetError);
  assert.is((error as FleetError).code, 'UNAVAILABLE');
  assert.ok((error as FleetError).retriable);

  // A server that takes the request and never answers: the Clock-driven deadline aborts it.
  const { createServer } = await import('node:http');
  const silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  let arrived = 0;
  silent.on('request', () => { arrived++; });
  const slowApps = new StaticLpwanApplications({ applications: [{ networkId: 'thethingsnetwork', applicationId: 'fleet-app', secret: 'webhook-secret-000000000001', downlink: { baseUrl: `http://127.0.0.1:${(silent.address() as { port: number }).port}`, webhookId: 'fleetstream', apiKey: API_KEY } }] });
  const slow = new TtsDownlink({ devices: registry, applications: slowApps, clock, timeoutMs: 5000 });
  const pending = slow.send({ commandId: 'y', deviceId: 'cbor', assets: { LED: true }, at: '2026-01-01T00:00:00Z' }).then(() => undefined, (e: unknown) => e);
  await waitFor(() => arrived === 1, 5000, 'request reached the silent server');
  clock.advance(5000);
  const timeout = await pending;
  assert.is((timeout as FleetError).code, 'TIMEOUT');
  assert.ok((timeout as FleetError).retriable);
  silent.closeAllConnections();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
});

test.run();
