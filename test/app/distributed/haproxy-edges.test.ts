/**
 * Two edges behind HAProxy, as compose.yaml runs them: deploy/haproxy/haproxy.cfg itself (its
 * addresses set to this test's loopback ports, test/support/haproxyProcess.ts) in front of two
 * `--role edge` processes and an engine on Kafka, PostgreSQL and the ClickHouse server. Through
 * HAProxy only: HTTP uplinks reach both edges and are stored; an SSE stream and a WebSocket receive
 * a state; MQTT 5 and 3.1.1 devices are spread over both edges by client id (a reconnecting device
 * finds its session), their states are stored and commands issued over HTTP reach them. After
 * SIGKILL of an edge, HAProxy's check takes it out and new connections and requests go to the other.
 *
 * Runs when KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL_TEST are set and `haproxy` is on PATH;
 * its own topic prefix, ClickHouse database and PostgreSQL schema are removed afterwards.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import mqttPacket from 'mqtt-packet';
import { openRegistry } from '../../../app/openPorts.ts';
import { suite, test, unless, withEnv } from '../../support/suite.ts';
import { clickhouse, delay, freePort, removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { HaproxyProcess, haproxyMissing } from '../../support/haproxyProcess.ts';
import { openSse, openWs } from '../../support/liveClients.ts';
import { raw, type Raw } from '../../support/rawMqtt.ts';
import { sample } from '../../support/prometheusText.ts';
import { sendJson } from '../../support/sendJson.ts';
import { waitFor } from '../../support/tmp.ts';

const PARTITIONS = 4;
const DEVICES = 16;
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;

interface Device {
  id: string;
  token: string;
  /** MQTT protocol level: 5, or 4 (3.1.1). */
  version: 4 | 5;
  client?: MqttClient;
  /** The edge (0: A, 1: B) its MQTT connection reached. */
  edge?: number;
  /** Command values received over MQTT. */
  received: unknown[];
}

/** compose.yaml's services, each its block of lines (the file's own layout: a service at two spaces). */
function composeServices(text: string): Map<string, string> {
  const services = new Map<string, string>();
  const body = text.slice(text.indexOf('\nservices:\n'), text.indexOf('\nvolumes:\n'));
  for (const block of body.split(/\n(?=  [a-z][\w-]*:)/).slice(1)) services.set(/^  ([\w-]+):/.exec(block)![1], block);
  return services;
}

test('compose.yaml runs deploy/haproxy/haproxy.cfg in front of the two edges it names, and only HAProxy publishes their ports', () => {
  const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
  const cfg = read('deploy/haproxy/haproxy.cfg');
  const services = composeServices(read('compose.yaml'));
  const defaults = [...cfg.matchAll(/"\$\{(EDGE_[AB]_(?:API|MQTT))-([^}]+)\}"/g)].map((m) => `${m[1]}=${m[2]}`);
  assert.equal([...new Set(defaults)].sort(), ['EDGE_A_API=edge-a:8080', 'EDGE_A_MQTT=edge-a:1883', 'EDGE_B_API=edge-b:8080', 'EDGE_B_MQTT=edge-b:1883']);
  assert.match(services.get('edge-a') ?? '', /command: \["start", "--role", "edge"\]/);
  assert.match(services.get('edge-b') ?? '', /^  edge-b: \*edge\n/, 'edge-b is edge-a');
  const haproxy = services.get('haproxy') ?? '';
  assert.match(haproxy, /- \.\/deploy\/haproxy\/haproxy\.cfg:\/usr\/local\/etc\/haproxy\/haproxy\.cfg:ro/);
  assert.equal([...haproxy.matchAll(/- "(\d+:\d+)"/g)].map((m) => m[1]), ['8080:8080', '1883:1883'], 'the API and MQTT, as the cfg binds them');
  assert.match(cfg, /bind "\$\{API_BIND-:8080\}"/);
  assert.match(cfg, /bind "\$\{MQTT_BIND-:1883\}"/);
  for (const [name, block] of services) {
    if (!['haproxy', 'prometheus', 'grafana'].includes(name)) assert.not.match(block, /\n    ports:/, `${name} publishes no port`);
  }
});

withEnv('haproxy-edges', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  unless('haproxy-edges', haproxyMissing(), () => {
    const fleet = suite('two edges behind HAProxy (deploy/haproxy/haproxy.cfg)');
    const id = `fs_haproxy_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-haproxy-'));
    const processes: FleetProcess[] = [];
    const devices: Device[] = [];
    const admin = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'haproxy-edges', logLevel: kafkajs.logLevel.NOTHING }).admin();
    const closers: Array<() => void> = [];
    let userToken = '';
    let edges: FleetProcess[] = [];
    let haproxy: HaproxyProcess | undefined;
    const lb = () => haproxy!;

    const metricsOf = async (edge: number) => (await fetch(`http://127.0.0.1:${edges[edge].metricsPort}/metrics`)).text();
    const mqttConnections = async (edge: number) => sample(await metricsOf(edge), 'fleetstream_mqtt_connections') ?? 0;
    /** PUTs an edge answered 202, over every route. */
    const acceptedPuts = async (edge: number) => (await metricsOf(edge)).split('\n')
      .filter((l) => l.startsWith('fleetstream_http_requests_total{') && l.includes('method="PUT"') && l.includes('status="202"'))
      .reduce((sum, l) => sum + Number(l.split(/\s+/).pop()), 0);
    /** The values of asset `t` stored in ClickHouse, among `values`. */
    const stored = async (values: number[]) => {
      const text = await clickhouse(env.CLICKHOUSE_URL, `SELECT value_number FROM \`${id}\`.states FINAL WHERE asset = 't' AND value_number IN (${values.join(',')}) FORMAT TabSeparated`).catch(() => '');
      return new Set(text.split('\n').filter(Boolean).map(Number));
    };
    const everyStored = (values: number[], what: string) => waitFor(async () => (await stored(values)).size === values.length, 60_000, what);
    const putState = async (d: Device, value: number) => {
      const res = await sendJson(`${lb().apiUrl}/device/${d.id}/asset/t/state`, 'PUT', d.token, { value });
      assert.is(res.status, 202, `state ${value} of ${d.id} through HAProxy: ${await res.text()}`);
    };
    const command = async (d: Device, value: number) => {
      const res = await sendJson(`${lb().apiUrl}/device/${d.id}/asset/level/command`, 'PUT', userToken, { value });
      assert.is(res.status, 202, `command ${value} to ${d.id} through HAProxy: ${await res.text()}`);
    };
    /** Connects through HAProxy and says which edge the connection reached (the edges' connection gauges). */
    const connectThrough = async (options: IClientOptions): Promise<{ client: MqttClient; edge: number; sessionPresent: boolean }> => {
      const before = await Promise.all([0, 1].map((e) => (edges[e].child.exitCode === null && edges[e].child.signalCode === null ? mqttConnections(e) : 0)));
      const client = mqtt.connect(lb().mqttUrl, { reconnectPeriod: 0, ...options });
      client.on('error', () => undefined);
      let closed: () => void = () => undefined;
      const connack = await new Promise<{ sessionPresent: boolean }>((resolve, reject) => {
        closed = () => reject(new Error(`${String(options.clientId)} closed before CONNACK`));
        client.once('connect', (packet) => resolve(packet));
        client.once('close', closed);
      }).finally(() => client.off('close', closed));
      let edge = -1;
      await waitFor(async () => {
        const after = await Promise.all([0, 1].map((e) => (edges[e].child.exitCode === null && edges[e].child.signalCode === null ? mqttConnections(e) : 0)));
        edge = after.findIndex((n, e) => n > before[e]);
        return edge >= 0;
      }, 10_000, `the edge holding ${String(options.clientId)}`);
      return { client, edge, sessionPresent: connack.sessionPresent };
    };
    const connectDevice = async (d: Device) => {
      const { client, edge } = await connectThrough({ username: d.token, password: d.token, clientId: `dev-${d.id}`, protocolVersion: d.version });
      client.on('message', (_topic, payload) => d.received.push((JSON.parse(payload.toString()) as { value: unknown }).value));
      await client.subscribeAsync(`device/${d.id}/asset/+/command`, { qos: 1 });
      d.client = client;
      d.edge = edge;
    };

    fleet.before(async () => {
      const registry = await openRegistry({ databaseUrl: env.DATABASE_URL_TEST, databaseSchema: id, dataDir: dir });
      try {
        const user = await registry.registry.createUser({ name: 'operator' });
        userToken = user.token;
        const ground = await registry.registry.createGround({ name: 'fleet', userId: user.entity.id });
        for (let i = 0; i < DEVICES; i++) {
          const { device, token } = await registry.registry.createDevice({
            groundId: ground.id, name: `d${i}`,
            assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }, { name: 'level', is: 'actuator', profile: { type: 'integer' } }],
          });
          devices.push({ id: device.id, token, version: i % 2 === 0 ? 5 : 4, received: [] });
        }
      } finally {
        await registry.close();
      }
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: String(PARTITIONS), HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '',
      };
      const start = async (name: string, role: 'edge' | 'engine', extra: Record<string, string>) => {
        const p = await startFleet({ name, role, env: { ...baseEnv, DATA_DIR: join(dir, name), ...extra } });
        processes.push(p);
        return p;
      };
      const mqttPorts = [await freePort(), await freePort()];
      edges = await Promise.all(['edge-a', 'edge-b'].map((name, i) => start(name, 'edge', { MQTT_PORT: String(mqttPorts[i]), MQTT_HOST: '127.0.0.1' })));
      await start('engine', 'engine', { MQTT_PORT: '-1' });
      haproxy = await HaproxyProcess.start([
        { api: `127.0.0.1:${edges[0].httpPort}`, mqtt: `127.0.0.1:${mqttPorts[0]}` },
        { api: `127.0.0.1:${edges[1].httpPort}`, mqtt: `127.0.0.1:${mqttPorts[1]}` },
      ]);
      await admin.connect();
      await waitFor(async () => {
        const groups = await admin.describeGroups([`${prefix}fleetstream-engine`, `${prefix}fleetstream-commands`]);
        return groups.groups.every((g) => g.state === 'Stable' && g.members.length === 1);
      }, 90_000, 'the engine holds the uplinks and the commands');
      // The edges read topic `live` from its end: give "latest" its first fetch.
      await delay(2000);
    });

    fleet.after(async () => {
      for (const close of closers) close();
      for (const d of devices) d.client?.end(true);
      await haproxy?.stop();
      await Promise.all(processes.map((p) => p.stop(10_000)));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'haproxy-edges' });
    });

    fleet('HTTP uplinks through HAProxy are answered by both edges and stored', async () => {
      const before = await Promise.all([0, 1].map(acceptedPuts));
      const values = Array.from({ length: 20 }, (_, i) => 1000 + i);
      for (const [i, value] of values.entries()) await putState(devices[i % DEVICES], value);
      const after = await Promise.all([0, 1].map(acceptedPuts));
      const answered = after.map((n, e) => n - before[e]);
      assert.is(answered[0] + answered[1], values.length, `every uplink answered by an edge (${answered.join(' + ')})`);
      assert.ok(answered.every((n) => n > 0), `both edges answered some (${answered.join(' + ')})`);
      await everyStored(values, 'the HTTP uplinks in ClickHouse');
    });

    fleet('an SSE stream and a WebSocket through HAProxy receive a state', async () => {
      const d = devices[0];
      const sse = await openSse(`${lb().apiUrl}/device/${d.id}/live?kinds=state`, d.token);
      closers.push(() => sse.close());
      assert.is(sse.status, 200);
      assert.match(sse.contentType, /^text\/event-stream/);
      const ws = await openWs(`${lb().apiUrl.replace(/^http/, 'ws')}/live`);
      closers.push(() => ws.ws.close());
      ws.send({ type: 'auth', token: userToken });
      await ws.next((f) => f.type === 'ready');
      ws.send({ type: 'subscribe', device: d.id, kinds: ['state'] });
      await ws.next((f) => f.type === 'subscribed');
      await putState(d, 5000);
      await waitFor(() => sse.events.some((e) => e.event === 'state' && (JSON.parse(e.data) as { value: number }).value === 5000), 30_000, 'the state on the SSE stream');
      const frame = await ws.next((f) => f.type === 'state' && (f.data as { value: number }).value === 5000, 30_000);
      assert.is((frame.data as { deviceId: string }).deviceId, d.id);
      sse.close();
      ws.ws.close();
    });

    fleet('MQTT 5 and 3.1.1 devices through HAProxy: spread over both edges by client id, states stored, commands over HTTP delivered', async () => {
      for (const d of devices) await connectDevice(d);
      const onEdge = [0, 1].map((e) => devices.filter((d) => d.edge === e));
      assert.ok(onEdge.every((list) => list.length > 0), `devices on both edges (${onEdge.map((l) => l.length).join(' + ')})`);
      assert.equal((await Promise.all([0, 1].map(mqttConnections))).reduce((a, b) => a + b), DEVICES, 'every device connected once');

      const values = devices.map((_, i) => 2000 + i);
      await Promise.all(devices.map((d, i) => d.client!.publishAsync(`device/${d.id}/asset/t/state`, JSON.stringify({ value: values[i] }), { qos: 1 })));
      await everyStored(values, 'the MQTT states in ClickHouse');

      for (const [i, d] of devices.entries()) await command(d, 100 + i);
      await waitFor(() => devices.every((d) => d.received.length >= 1), 60_000, 'a command at every device');
      devices.forEach((d, i) => assert.equal(d.received, [100 + i], `what ${d.id} (MQTT ${d.version === 5 ? '5' : '3.1.1'}, edge ${d.edge}) received`));
    });

    fleet('a device reconnecting with its client id reaches the edge holding its session (MQTT 5 and 3.1.1)', async () => {
      for (const [d, options] of [
        [devices[2], { protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 300 } }],
        [devices[3], { protocolVersion: 4, clean: false }],
      ] as const) {
        const clientId = `kept-${d.id}`;
        // A feed subscription: one on commands would name this session's edge as the device's address.
        const first = await connectThrough({ username: d.token, password: d.token, clientId, ...options });
        await first.client.subscribeAsync(`device/${d.id}/asset/+/feed`, { qos: 1 });
        await first.client.endAsync();
        const again = await connectThrough({ username: d.token, password: d.token, clientId, ...options });
        await again.client.endAsync();
        assert.is(again.edge, first.edge, `MQTT ${options.protocolVersion}: the same edge`);
        assert.ok(again.sessionPresent, `MQTT ${options.protocolVersion}: Session Present`);
      }
    });

    fleet('HAProxy reads a CONNECT sent in pieces whole, and passes what is not one to an edge, which closes it', async () => {
      const d = devices[4];
      const connect = mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: `pieces-${d.id}`, keepalive: 30, username: d.token, password: Buffer.from(d.token) });
      const pieces = await raw(lb().mqttPort);
      pieces.socket.write(connect.subarray(0, 10));
      await delay(300);
      pieces.socket.write(connect.subarray(10));
      await waitFor(() => pieces.packets.length > 0, 10_000, 'an answer to the CONNECT in pieces');
      assert.equal(pieces.packets.map((p) => [p.cmd, (p as mqttPacket.IConnackPacket).returnCode]), [['connack', 0]]);
      pieces.socket.destroy();

      const closedWithin = async (client: Raw, ms: number, what: string) => {
        const started = Date.now();
        await Promise.race([client.closed, delay(ms).then(() => { throw new Error(`${what}: still open after ${ms} ms`); })]);
        assert.equal(client.packets.filter((p) => p.cmd === 'connack' && (p as mqttPacket.IConnackPacket).returnCode === 0), [], `${what}: not accepted`);
        return Date.now() - started;
      };
      const http = await raw(lb().mqttPort);
      http.socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
      // The first bytes of a TLS ClientHello: what HAProxy sees of MQTT over TLS, and passes on.
      const tls = await raw(lb().mqttPort);
      tls.socket.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0xf4, 0x01, 0x00, 0x00, 0xf0, 0x03, 0x03]));
      const oversized = await raw(lb().mqttPort);
      oversized.socket.write(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x7f]));
      const cutShort = await raw(lb().mqttPort);
      cutShort.socket.write(connect.subarray(0, connect.length - 3));
      // At most HAProxy's 5 s wait for a whole CONNECT, then the edge's own 10 s CONNECT deadline.
      const times = await Promise.all([
        closedWithin(http, 20_000, 'an HTTP request'),
        closedWithin(tls, 20_000, 'a TLS ClientHello'),
        closedWithin(oversized, 20_000, 'a remaining length of 256 MiB'),
        closedWithin(cutShort, 20_000, 'a CONNECT cut short'),
      ]);
      console.log(`  closed after ${times.join(', ')} ms`);
    });

    fleet('after SIGKILL of an edge HAProxy takes it out: new MQTT connections and HTTP requests go to the other edge', async () => {
      const [victim, survivor] = [1, 0];
      const moved = devices.filter((d) => d.edge === victim);
      const server = ['edge-a', 'edge-b'][victim];
      const killedAt = Date.now();
      edges[victim].child.kill('SIGKILL');
      await edges[victim].exited;
      await waitFor(async () => {
        const stats = await lb().stats();
        return ['edges_api', 'edges_live', 'edges_mqtt'].every((b) => stats.get(`${b}/${server}`)?.status === 'DOWN');
      }, 20_000, `HAProxy marks ${server} DOWN`);
      console.log(`  ${server} DOWN in HAProxy ${Date.now() - killedAt} ms after SIGKILL`);

      const survivorBefore = await mqttConnections(survivor);
      for (const d of moved) {
        d.client?.end(true);
        d.received = [];
        await connectDevice(d);
        assert.is(d.edge, survivor, `${d.id} reconnected through HAProxy to the other edge`);
      }
      assert.is(await mqttConnections(survivor), survivorBefore + moved.length, 'the moved devices on the surviving edge');

      const values = moved.map((_, i) => 3000 + i);
      await Promise.all(moved.map((d, i) => d.client!.publishAsync(`device/${d.id}/asset/t/state`, JSON.stringify({ value: values[i] }), { qos: 1 })));
      await everyStored(values, 'the moved devices\' states in ClickHouse');
      for (const [i, d] of moved.entries()) await command(d, 300 + i);
      await waitFor(() => moved.every((d) => d.received.length >= 1), 60_000, 'a command at every moved device');
      moved.forEach((d, i) => assert.equal(d.received, [300 + i], `what ${d.id} received on the other edge`));

      const before = await acceptedPuts(survivor);
      const http = Array.from({ length: 10 }, (_, i) => 4000 + i);
      for (const [i, value] of http.entries()) await putState(devices[i], value);
      assert.is(await acceptedPuts(survivor) - before, http.length, 'every HTTP uplink answered by the other edge');
      await everyStored(http, 'the HTTP uplinks after the kill in ClickHouse');
      const sse = await openSse(`${lb().apiUrl}/device/${devices[0].id}/live?kinds=state`, devices[0].token);
      sse.close();
      assert.is(sse.status, 200, 'a live stream through HAProxy');
    });

    fleet.run();
  });
});

test.run();
