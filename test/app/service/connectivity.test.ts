/**
 * Device connectivity on the composed service (embedded: PGlite, local log, chDB; real HTTP and a
 * real MQTT client): `lastSeenAt` after HTTP and MQTT uplinks, `connected` while an MQTT client is
 * connected, and the ground's silent devices (`?silentFor=`) by pages, with hostile durations
 * refused. Across edges and after a crash: test/app/distributed/connectivity-distributed.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import { createService, type Service } from '../../../app/createService.ts';
import { loadConfig } from '../../../app/loadConfig.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { loopbackConfig } from '../../support/loopbackConfig.ts';
import { sendJson } from '../../support/sendJson.ts';

const tmp = tempDir('connectivity');
let service: Service;
let base = '';
let userToken = '';
let groundId = '';
let userId = '';

interface DeviceView { id: string; createdAt: number; lastSeenAt?: number; connected?: boolean }
interface Page { items: Array<{ id: string; lastSeenAt?: number }>; next?: string }

test.before(async () => {
  service = await createService({ logger: silentLogger, config: loopbackConfig(tmp.dir) });
  base = `http://127.0.0.1:${service.httpPort}`;
  const user = await service.registry.createUser({ name: 'u' });
  userToken = user.token;
  userId = user.entity.id;
  groundId = (await service.registry.createGround({ name: 'g', userId: user.entity.id })).id;
});

test.after(async () => {
  await service.stop();
  tmp.remove();
});

async function createDevice(name: string, ground = groundId): Promise<{ id: string; token: string }> {
  const res = await sendJson(`${base}/ground/${ground}/devices`, 'POST', userToken, { name, assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
  assert.is(res.status, 201);
  return await res.json() as { id: string; token: string };
}

async function view(deviceId: string, token = userToken): Promise<DeviceView> {
  const res = await fetch(`${base}/device/${deviceId}`, { headers: { authorization: `Bearer ${token}` } });
  assert.is(res.status, 200);
  return await res.json() as DeviceView;
}

async function httpUplink(device: { id: string; token: string }, value: number): Promise<void> {
  const res = await sendJson(`${base}/device/${device.id}/asset/t/state`, 'PUT', device.token, { value });
  assert.is(res.status, 202);
}

async function list(query: string, ground = groundId): Promise<Response> {
  return fetch(`${base}/ground/${ground}/devices?${query}`, { headers: { authorization: `Bearer ${userToken}` } });
}

test('lastSeenAt appears after an HTTP uplink and moves forward with the next; connected is false without a session', async () => {
  const device = await createDevice('http-one');
  const fresh = await view(device.id);
  assert.not.ok('lastSeenAt' in fresh, 'never seen');
  assert.is(fresh.connected, false);

  const before = Date.now();
  await httpUplink(device, 1);
  await waitFor(async () => (await view(device.id)).lastSeenAt !== undefined, 15_000, 'lastSeenAt after an HTTP uplink');
  const first = (await view(device.id)).lastSeenAt!;
  assert.ok(first >= before && first <= Date.now(), 'the receive time');

  await waitFor(() => Date.now() > first, 1000, 'the clock to move');
  await httpUplink(device, 2);
  await waitFor(async () => (await view(device.id)).lastSeenAt! > first, 15_000, 'lastSeenAt moving forward');
  const own = await view(device.id, device.token);
  assert.ok(own.lastSeenAt! > first, 'the device reads it with its own token too');
});

test('connected while a real MQTT client is connected, false once it disconnects; an MQTT uplink moves lastSeenAt', async () => {
  const device = await createDevice('mqtt-one');
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: device.token, password: device.token, reconnectPeriod: 0 });
  try {
    await waitFor(async () => (await view(device.id)).connected === true, 10_000, 'connected while the client is');
    const before = Date.now();
    await client.publishAsync(`device/${device.id}/asset/t/state`, JSON.stringify({ value: 5 }), { qos: 1 });
    await waitFor(async () => ((await view(device.id)).lastSeenAt ?? 0) >= before, 15_000, 'lastSeenAt after an MQTT uplink');
    const first = (await view(device.id)).lastSeenAt!;
    await waitFor(() => Date.now() > first, 1000, 'the clock to move');
    await client.publishAsync(`device/${device.id}/asset/t/state`, JSON.stringify({ value: 6 }), { qos: 1 });
    await waitFor(async () => (await view(device.id)).lastSeenAt! > first, 15_000, 'lastSeenAt moving forward over MQTT');
    assert.is((await view(device.id)).connected, true);
  } finally {
    await client.endAsync();
  }
  await waitFor(async () => (await view(device.id)).connected === false, 10_000, 'not connected after the disconnect');
});

test('?silentFor= lists the silent devices, longest silent first, by pages, and not a talking one', async () => {
  // A ground of its own: no device of the other tests crosses the cutoff while the pages are read.
  const ground = (await service.registry.createGround({ name: 'silence', userId })).id;
  const silentA = await createDevice('silent-a', ground);
  const silentB = await createDevice('silent-b', ground);
  const talking = await createDevice('talking', ground);
  const created = Date.now();
  // Every device of the ground is at least 8 s old, then one talks (lastSeenAt lags up to five
  // seconds on the embedded registry: the talking device is listed after PT8S only if its uplink
  // took 3 s more to be recorded).
  await waitFor(() => Date.now() >= created + 8100, 9000, 'eight seconds to pass');
  await httpUplink(talking, 3);
  await waitFor(async () => ((await view(talking.id)).lastSeenAt ?? 0) >= created + 8100, 15_000, 'the talking device seen');

  const res = await list('silentFor=PT8S', ground);
  assert.is(res.status, 200);
  const all = (await res.json() as Page).items.map((d) => d.id);
  assert.equal(all, [silentA.id, silentB.id], 'the silent devices, longest silent first (never seen: from creation)');
  assert.not.ok(all.includes(talking.id), 'the talking device is not');

  const paged: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 20; pages++) {
    const page = await (await list(`silentFor=PT8S&limit=1${cursor === undefined ? '' : `&cursor=${cursor}`}`, ground)).json() as Page;
    assert.ok(page.items.length <= 1);
    paged.push(...page.items.map((d) => d.id));
    cursor = page.next;
    if (cursor === undefined) break;
  }
  assert.equal(paged, all, 'pages of one walk the same list');
  const none = await (await list('silentFor=P1D', ground)).json() as Page;
  assert.equal(none.items, [], 'nothing has been silent a day');
  const plain = await (await list('', ground)).json() as Page;
  assert.equal(plain.items.map((d) => d.id), [silentA.id, silentB.id, talking.id], 'without silentFor: every device, oldest first, as before');
});

test('?silentFor= that is not a duration this service reads is a 422 naming query.silentFor', async () => {
  for (const value of ['garbage', 'P1M', 'P1Y', '-PT1H', 'PT-1H', 'P', 'PT', 'PT0S', 'P0D', 'P99999999999999D', 'P3661D', 'PT\uFF11H', 'PT\u0661H', '', `PT1H${'0'.repeat(80)}`, 'PT1H ', '1h']) {
    const res = await list(`silentFor=${encodeURIComponent(value)}`);
    assert.is(res.status, 422, `silentFor=${JSON.stringify(value)}`);
    assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
    const problem = await res.json() as { code: string; errors?: Array<{ path: string }> };
    assert.is(problem.code, 'VALIDATION_FAILED');
    assert.ok(problem.errors?.some((e) => e.path === 'query.silentFor'), `names query.silentFor for ${JSON.stringify(value)}: ${JSON.stringify(problem)}`);
  }
  const twice = await list('silentFor=PT1H&silentFor=PT2H');
  assert.ok(twice.status === 200 || twice.status === 422, 'a repeated parameter is read or refused, never a 500');
});

test('MQTT_EDGE_LEASE_MS / --mqtt-edge-lease-ms: the edge lease, ms; bad values are refused', () => {
  assert.is(loadConfig({}, {}).mqtt.edgeLeaseMs, undefined, 'default: 30 s (engine/connectivity/EdgePresence.ts)');
  assert.is(loadConfig({}, { MQTT_EDGE_LEASE_MS: '1500' }).mqtt.edgeLeaseMs, 1500);
  assert.is(loadConfig({ 'mqtt-edge-lease-ms': '60000' }, { MQTT_EDGE_LEASE_MS: '1500' }).mqtt.edgeLeaseMs, 60_000);
  for (const value of ['0', '299', '-1', '1.5', '3600001']) {
    assert.throws(() => loadConfig({ 'mqtt-edge-lease-ms': value }, {}), /invalid configuration/, value);
  }
  assert.throws(() => loadConfig({ 'mqtt-edge-lease-ms': 'x' }, {}), undefined, 'not a number');
});

test.run();
