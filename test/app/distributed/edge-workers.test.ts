/**
 * Edge workers (`--edge-workers 2`, app/edgeWorkers.ts): one `--role edge` process whose two
 * workers share its HTTP and MQTT ports, with an engine, on Kafka, PostgreSQL and the ClickHouse
 * server. Uplinks through either worker are stored; MQTT devices spread over both workers get the
 * commands issued over HTTP; the primary's /metrics adds both workers up; a revoked token's
 * connection closes on whichever worker holds it; a worker killed with SIGKILL is replaced and its
 * devices, reconnected, get their commands.
 *
 * Runs when KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL_TEST are set; its own topic prefix,
 * ClickHouse database and PostgreSQL schema are removed afterwards.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import mqtt, { type MqttClient } from 'mqtt';
import { openRegistry } from '../../../app/openPorts.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { freePort, removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { sendJson } from '../../support/sendJson.ts';
import { waitFor } from '../../support/tmp.ts';

const DEVICES = 12;
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;

interface Device {
  id: string;
  token: string;
  client?: MqttClient;
  received: unknown[];
}

/** The pids of the edge workers the primary forked, from their `edge worker started` lines. */
function workerPids(edge: FleetProcess): number[] {
  return edge.output().split('\n').filter((l) => l.includes('"msg":"edge worker started"')).map((l) => (JSON.parse(l) as { pid?: number }).pid ?? -1);
}

withEnv('edge-workers', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('edge workers: one edge process, two workers sharing its ports');
  const id = `fs_workers_${RUN}`;
  const prefix = `${id}.`;
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-edge-workers-'));
  const processes: FleetProcess[] = [];
  const devices: Device[] = [];
  const kafka = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'edge-workers', logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  const dbConfig = { databaseUrl: env.DATABASE_URL_TEST, databaseSchema: id, dataDir: dir };
  let edge!: FleetProcess;
  let base = '';
  let mqttPort = 0;
  let userToken = '';

  const connect = async (device: Device) => {
    device.client?.end(true);
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${mqttPort}`, { username: device.token, password: device.token, reconnectPeriod: 0, protocolVersion: 5 });
    client.on('message', (_topic, payload) => device.received.push((JSON.parse(payload.toString()) as { value: unknown }).value));
    await client.subscribeAsync(`device/${device.id}/asset/+/command`, { qos: 1 });
    device.client = client;
  };
  const command = async (device: Device, value: number) => {
    const res = await sendJson(`${base}/device/${device.id}/asset/level/command`, 'PUT', userToken, { value });
    assert.is(res.status, 202, `command ${value} to ${device.id}`);
  };

  test.before(async () => {
    const registry = await openRegistry(dbConfig);
    const user = await registry.registry.createUser({ name: 'operator' });
    userToken = user.token;
    const ground = await registry.registry.createGround({ name: 'fleet', userId: user.entity.id });
    for (let i = 0; i < DEVICES; i++) {
      const { device, token } = await registry.registry.createDevice({ groundId: ground.id, name: `dimmer-${i}`, assets: [
        { name: 'level', is: 'actuator', profile: { type: 'integer' } },
        { name: 'temp', is: 'sensor', profile: { type: 'number' } },
      ] });
      devices.push({ id: device.id, token, received: [] });
    }
    await registry.close();
    const baseEnv = {
      KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
      CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: '4', HTTP_HOST: '127.0.0.1', LPWAN_APPLICATIONS_FILE: '',
    };
    mqttPort = await freePort();
    const metricsPort = await freePort();
    edge = await startFleet({
      name: 'edge', role: 'edge', args: ['--edge-workers', '2'],
      env: { ...baseEnv, DATA_DIR: join(dir, 'edge'), HTTP_PORT: String(await freePort()), MQTT_PORT: String(mqttPort), MQTT_HOST: '127.0.0.1', METRICS_PORT: String(metricsPort) },
    });
    processes.push(edge);
    base = `http://127.0.0.1:${edge.httpPort}`;
    processes.push(await startFleet({ name: 'engine', role: 'engine', env: { ...baseEnv, DATA_DIR: join(dir, 'engine'), HTTP_PORT: '0', MQTT_PORT: '-1' } }));
    await admin.connect();
    await waitFor(async () => {
      const { groups: [group] } = await admin.describeGroups([`${prefix}fleetstream-commands`]);
      return group?.state === 'Stable' && group.members.length === 1;
    }, 90_000, 'the engine owns the commands');
  });

  test.after(async () => {
    for (const d of devices) d.client?.end(true);
    await Promise.all(processes.map((p) => p.stop()));
    await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'edge-workers' });
  });

  test('two workers started, each its own process, and uplinks through the shared port are stored', async () => {
    assert.is(new Set(workerPids(edge)).size, 2, edge.output().slice(-2000));
    // New connections each: the primary hands them to the workers in turn.
    const answers = await Promise.all(devices.map((d, i) => fetch(`${base}/device/${d.id}/state`, {
      method: 'PUT', headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify({ temp: { value: i } }),
    })));
    assert.equal(answers.map((r) => r.status), devices.map(() => 202));
    await waitFor(async () => {
      const states = await Promise.all(devices.map(async (d) => {
        const res = await fetch(`${base}/device/${d.id}/asset/temp/state`, { headers: { authorization: `Bearer ${userToken}` } });
        return res.status === 200 ? ((await res.json()) as { state?: { value?: unknown } }).state?.value : undefined;
      }));
      return states.every((v, i) => v === i);
    }, 60_000, 'every uplink stored');
  });

  test('MQTT devices spread over both workers get their commands, and /metrics adds both workers up', async () => {
    await Promise.all(devices.map((d) => connect(d)));
    const presence = await presenceEdges(kafka, `${prefix}commands`, DEVICES);
    assert.is(new Set(presence.values()).size, 2, `sessions on both workers: ${JSON.stringify([...presence])}`);
    await Promise.all(devices.map((d, i) => command(d, i + 100)));
    await waitFor(() => devices.every((d) => d.received.includes(devices.indexOf(d) + 100)), 30_000, 'a command at every device');
    const metrics = await (await fetch(`http://127.0.0.1:${edge.metricsPort}/metrics`)).text();
    const connections = Number(/^fleetstream_mqtt_connections (\d+)/m.exec(metrics)?.[1]);
    assert.is(connections, DEVICES, `MQTT connections of both workers (the primary's /metrics began: ${metrics.slice(0, 200)})`);
  });

  test('a revoked token closes its connection on whichever worker holds it', async () => {
    const victims = devices.slice(0, 2);
    const closed = victims.map((d) => new Promise<void>((resolve) => d.client!.once('close', () => resolve())));
    const registry = await openRegistry(dbConfig);
    try {
      for (const d of victims) assert.ok(await registry.registry.revokeToken(d.token));
    } finally {
      await registry.close();
    }
    await Promise.race([Promise.all(closed), new Promise((_, reject) => setTimeout(() => reject(new Error('still connected after 5 s')), 5000))]);
    devices.splice(0, 2);
  });

  test('a worker killed with SIGKILL is replaced, and its devices, reconnected, get their commands', async () => {
    const [first] = workerPids(edge);
    process.kill(first, 'SIGKILL');
    await waitFor(() => workerPids(edge).length === 3, 30_000, 'a new worker in its place');
    const dropped = devices.filter((d) => !d.client!.connected);
    assert.ok(dropped.length > 0, 'the killed worker held connections');
    for (const d of dropped) await command(d, 500);
    for (const d of dropped) await connect(d);
    await waitFor(() => dropped.every((d) => d.received.includes(500)), 60_000, 'the commands after the reconnect');
  });

  test.run();
});

/** The edge each device's latest presence record names, once `count` devices have one. */
async function presenceEdges(kafka: kafkajs.Kafka, topic: string, count: number): Promise<Map<string, string>> {
  const edges = new Map<string, string>();
  const consumer = kafka.consumer({ groupId: `presence-reader-${RUN}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const value = JSON.parse(message.value!.toString()) as { presence?: { edge: string } };
      if (value.presence !== undefined) edges.set(message.key!.toString(), value.presence.edge);
    },
  });
  try {
    await waitFor(() => edges.size >= count, 30_000, `presence of ${count} devices`);
  } finally {
    await consumer.disconnect();
  }
  return edges;
}
