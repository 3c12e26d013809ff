/**
 * The embedded service with two edge workers (`fleetstream start --edge-workers 2`, no Kafka,
 * ClickHouse server or PostgreSQL): the primary holds the local log, chDB and PGlite and serves
 * them to its workers; the workers share the HTTP port, and the primary hands each MQTT connection
 * to the worker of its client id. Through the real CLI: the admin socket, uplinks stored whichever
 * worker takes them, a live stream fed by uplinks through the other worker, commands reaching MQTT
 * devices on either worker, client-id ownership and persistent sessions, packets sent right after
 * CONNECT by many clients at once (none lost in the hand-over), revocation closing a
 * connection and a stream on whichever worker holds them, the rate limit (per worker), /metrics
 * adding the workers up, and a clean stop.
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import mqtt, { type MqttClient } from 'mqtt';
import mqttPacket from 'mqtt-packet';
import { partitionFor } from '../../../engine/ports/log.ts';
import { freePort, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { sendJson } from '../../support/sendJson.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;
const tmp = tempDir('edge-workers');
const dataDir = join(tmp.dir, 'data');
const embeddedEnv = { DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', DATA_DIR: dataDir, HTTP_HOST: '127.0.0.1', MQTT_HOST: '127.0.0.1' };
let service!: FleetProcess;
let base = '';
let mqttPort = 0;
let metricsPort = 0;
let userToken = '';
let groundId = '';
const clients: MqttClient[] = [];

interface Device { id: string; token: string }

function admin(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, 'admin', ...args], { env: { ...process.env, ...embeddedEnv } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

async function createDevice(name: string): Promise<Device> {
  const res = await sendJson(`${base}/ground/${groundId}/devices`, 'POST', userToken, { name, assets: [
    { name: 'level', is: 'actuator', profile: { type: 'integer' } },
    { name: 'temp', is: 'sensor', profile: { type: 'number' } },
  ] });
  assert.is(res.status, 201, await res.clone().text());
  const body = (await res.json()) as { id: string; token: string };
  return { id: body.id, token: body.token };
}

async function connect(device: Device, clientId: string, options: { clean?: boolean } = {}): Promise<{ client: MqttClient; received: unknown[]; sessionPresent: boolean }> {
  const received: unknown[] = [];
  const client = mqtt.connect(`mqtt://127.0.0.1:${mqttPort}`, { username: device.token, password: device.token, clientId, clean: options.clean ?? true, reconnectPeriod: 0, protocolVersion: 4 });
  clients.push(client);
  const connack = await new Promise<{ sessionPresent: boolean }>((resolve, reject) => {
    client.once('connect', (packet) => resolve(packet));
    client.once('error', reject);
  });
  client.on('message', (_topic, payload) => received.push((JSON.parse(payload.toString()) as { value: unknown }).value));
  return { client, received, sessionPresent: connack.sessionPresent };
}

/** `promise`, or a failure naming `what` after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);
}

const putState = (device: Device, value: number) => fetch(`${base}/device/${device.id}/state`, {
  method: 'PUT', headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify({ temp: { value } }),
});

test.before(async () => {
  metricsPort = await freePort();
  mqttPort = await freePort();
  service = await startFleet({
    name: 'embedded', role: 'all', args: ['--edge-workers', '2', '--rate-limit-per-second', '2', '--rate-limit-burst', '30'],
    env: { ...embeddedEnv, HTTP_PORT: String(await freePort()), MQTT_PORT: String(mqttPort), METRICS_PORT: String(metricsPort) },
  });
  base = `http://127.0.0.1:${service.httpPort}`;
});

test.after(async () => {
  for (const c of clients) c.end(true);
  await service?.stop();
  tmp.remove();
});

test('two workers and the primary; the admin socket is the primary\'s', async () => {
  const workers = service.output().split('\n').filter((l) => l.includes('"msg":"edge worker started"'));
  assert.is(workers.length, 2, service.output().slice(-2000));
  const run = await admin('quickstart', '--json', '--data-dir', dataDir);
  assert.is(run.code, 0, run.stderr);
  ({ userToken, groundId } = JSON.parse(run.stdout) as { userToken: string; groundId: string });
});

test('while no worker has a live stream or feed, the primary builds no live events', async () => {
  const device = await createDevice('unwatched');
  const unwatched = async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return Number(/^fleetstream_live_events_unwatched_total (\d+)/m.exec(metrics)?.[1] ?? NaN);
  };
  const before = await unwatched();
  for (let i = 1; i <= 3; i++) assert.is((await putState(device, i)).status, 202);
  await waitFor(async () => (await unwatched()) >= before + 3, 20_000, 'three stored states counted as unwatched');
});

test('uplinks through either worker are stored, and a live stream on one worker gets those taken by the other', async () => {
  const device = await createDevice('sensor');
  const stream = await within(fetch(`${base}/device/${device.id}/live`, { headers: { authorization: `Bearer ${userToken}`, accept: 'text/event-stream' } }), 10_000, 'the live stream');
  assert.is(stream.status, 200);
  const reader = stream.body!.getReader();
  let text = '';
  const reading = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += new TextDecoder().decode(value);
    }
  })();
  // New connections each: the workers take them in turn.
  for (let i = 1; i <= 6; i++) assert.is((await putState(device, i)).status, 202);
  await waitFor(() => [1, 2, 3, 4, 5, 6].every((v) => text.includes(`"value":${v}`)), 20_000, 'six states on the stream');
  const latest = await (await fetch(`${base}/device/${device.id}/asset/temp/state`, { headers: { authorization: `Bearer ${userToken}` } })).json() as { state: { value: number } };
  assert.is(latest.state.value, 6);
  await within(reader.cancel(), 5000, 'closing the stream');
  await within(reading.catch(() => undefined), 5000, 'the stream closed');
});

test('commands reach MQTT devices on either worker; client-id ownership and persistent sessions hold', async () => {
  const devices = await Promise.all(Array.from({ length: 6 }, (_, i) => createDevice(`dimmer-${i}`)));
  const ids = devices.map((d) => `dimmer-${d.id}`);
  assert.equal(new Set(ids.map((id) => partitionFor(id, 2))).size, 2, 'the client ids map to both workers');
  const sessions = await within(Promise.all(devices.map((d, i) => connect(d, ids[i]))), 10_000, 'six connections');
  await within(Promise.all(sessions.map((s, i) => s.client.subscribeAsync(`device/${devices[i].id}/asset/+/command`, { qos: 1 }))), 10_000, 'six subscriptions');
  for (const [i, d] of devices.entries()) assert.is((await sendJson(`${base}/device/${d.id}/asset/level/command`, 'PUT', userToken, { value: i + 10 })).status, 202);
  await waitFor(() => sessions.every((s, i) => s.received.includes(i + 10)), 20_000, 'a command at each device');

  // A second connection with the same client id takes the session over: the first is closed.
  const closed = new Promise<void>((resolve) => sessions[0].client.once('close', () => resolve()));
  const second = await within(connect(devices[0], ids[0]), 10_000, 'the second connection');
  await within(closed, 10_000, 'the first connection closed');
  assert.ok(second.client.connected);

  // A persistent session: a command sent while the device is away arrives when it comes back.
  const away = await within(connect(devices[1], `${ids[1]}-p`, { clean: false }), 10_000, 'a persistent session');
  await within(away.client.subscribeAsync(`device/${devices[1].id}/asset/+/command`, { qos: 1 }), 10_000, 'its subscription');
  sessions[1].client.end(true);
  await within(new Promise<void>((resolve) => away.client.end(false, {}, () => resolve())), 10_000, 'leaving it');
  assert.is((await sendJson(`${base}/device/${devices[1].id}/asset/level/command`, 'PUT', userToken, { value: 77 })).status, 202);
  const back = await within(connect(devices[1], `${ids[1]}-p`, { clean: false }), 10_000, 'coming back');
  assert.ok(back.sessionPresent, 'the session is kept by the worker of its client id');
  await waitFor(() => back.received.includes(77), 20_000, 'the command that waited');

  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const connections = Number(/^fleetstream_mqtt_connections (\d+)/m.exec(metrics)?.[1]);
  assert.is(connections, clients.filter((c) => c.connected).length, 'the MQTT connections of both workers');
});

test('packets a client sends right after CONNECT, before its CONNACK, reach the worker with the connection, however many connect at once', async () => {
  const device = await createDevice('eager');
  const generate = (packet: object) => mqttPacket.generate(packet as mqttPacket.Packet, { protocolVersion: 4 });
  const answers = async (i: number): Promise<string[]> => {
    const socket = tcpConnect({ host: '127.0.0.1', port: mqttPort });
    const parser = mqttPacket.parser({ protocolVersion: 4 });
    const seen: string[] = [];
    parser.on('packet', (packet) => seen.push(packet.cmd));
    socket.on('data', (chunk) => parser.parse(chunk));
    try {
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      socket.write(generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 60, clientId: `eager-${device.id}-${i}`, username: device.token }));
      // Each in a write of its own, after the CONNECT has left: the primary may read them before it has handed the socket over.
      for (const packet of [
        { cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `device/${device.id}/asset/+/command`, qos: 1 }] },
        { cmd: 'publish', topic: `device/${device.id}/state`, qos: 1, messageId: 2, payload: JSON.stringify({ temp: { value: i } }) },
        { cmd: 'pingreq' },
      ]) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        socket.write(generate(packet));
      }
      await waitFor(() => seen.length >= 4, 10_000, `connection ${i}: CONNACK, SUBACK, PUBACK and PINGRESP (${seen.join(', ')})`);
      return seen;
    } finally {
      socket.destroy();
    }
  };
  const all = await Promise.all(Array.from({ length: 40 }, (_, i) => answers(i)));
  for (const seen of all) assert.equal([...seen].sort(), ['connack', 'pingresp', 'puback', 'suback']);
  // Every acknowledged publish is stored.
  await waitFor(async () => {
    const stored = await (await fetch(`${base}/device/${device.id}/asset/temp/states?limit=100`, { headers: { authorization: `Bearer ${userToken}` } })).json() as { items: Array<{ value: number }> };
    return new Set(stored.items.map((s) => s.value)).size === 40;
  }, 20_000, 'the 40 states stored');
});

test('deleting a device closes its MQTT connection and its live stream on whichever worker holds them', async () => {
  const devices = await Promise.all([createDevice('doomed-a'), createDevice('doomed-b')]);
  const ids = devices.map((d) => `doomed-${d.id}`);
  const sessions = await within(Promise.all(devices.map((d, i) => connect(d, ids[i]))), 10_000, 'two connections');
  const closed = sessions.map((s) => new Promise<void>((resolve) => s.client.once('close', () => resolve())));
  const started = Date.now();
  for (const d of devices) assert.is((await fetch(`${base}/device/${d.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${userToken}` } })).status, 204);
  await within(Promise.all(closed), 10_000, 'both closed');
  assert.ok(Date.now() - started < 3000, `closed after ${Date.now() - started} ms`);
});

test('the rate limit holds on a worker: a burst over it on one connection is refused with 429 and Retry-After', async () => {
  const device = await createDevice('chatty');
  // One keep-alive connection: one worker, whose buckets count it.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const answers: Array<{ status: number; retryAfter: string | undefined }> = [];
  for (let i = 0; i < 60; i++) {
    answers.push(await new Promise((resolve, reject) => {
      const body = JSON.stringify({ temp: { value: i } });
      const req = request(`${base}/device/${device.id}/state`, {
        method: 'PUT', agent, headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined }));
      });
      req.on('error', reject);
      req.end(body);
    }));
  }
  agent.destroy();
  const refused = answers.filter((r) => r.status === 429);
  // Burst 30 at 2 per second: about half of 60 quick requests.
  assert.ok(refused.length >= 20 && refused.length <= 31, `refused ${refused.length} of 60`);
  assert.ok(refused.every((r) => r.retryAfter !== undefined));
});

test('SIGTERM drains the workers and the primary, exit 0', async () => {
  const { code } = await service.stop();
  assert.is(code, 0, service.output().slice(-3000));
});

test.run();
