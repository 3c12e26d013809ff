/**
 * Commands find the device on whichever edge holds its MQTT session (docs/scaling.md): two edges
 * and two engines as separate processes on Kafka, PostgreSQL and the ClickHouse server. 50 devices
 * are spread over both edges' embedded MQTT edges; commands are issued through both edges' HTTP
 * routes and through topic `commands`. Every command is delivered and its lifecycle recorded once
 * (queued, sent, delivered); a device that reconnects to the other edge gets its pending commands,
 * and so do the devices of an edge killed with SIGKILL once they reconnect to the other one.
 * Revoking a token closes its connections on both edges.
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
import type { CommandLifecycle } from '../../../schemas/commands.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { freePort, removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { listAllCommands } from '../../support/commandListing.ts';
import { sendJson } from '../../support/sendJson.ts';
import { waitFor } from '../../support/tmp.ts';

const PARTITIONS = 4;
const DEVICES = 50;
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;

interface Device {
  id: string;
  token: string;
  client?: MqttClient;
  /** Command values received over MQTT, in order. */
  received: unknown[];
}

withEnv('distributed-command-routing', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('commands: two edges, two engines, devices on either edge');
  const id = `fs_route_${RUN}`;
  const prefix = `${id}.`;
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-command-routing-'));
  const processes: FleetProcess[] = [];
  const devices: Device[] = [];
  const kafka = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'command-routing', logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer();
  let userToken = '';
  let edges: { process: FleetProcess; base: string; mqttPort: number }[] = [];
  const dbConfig = { databaseUrl: env.DATABASE_URL_TEST, databaseSchema: id, dataDir: dir };

  const connect = async (device: Device, edge: number) => {
    device.client?.end(true);
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${edges[edge].mqttPort}`, {
      username: device.token, password: device.token, clientId: `dev-${device.id}`, reconnectPeriod: 0, protocolVersion: 5,
    });
    client.on('message', (_topic, payload) => device.received.push((JSON.parse(payload.toString()) as { value: unknown }).value));
    await client.subscribeAsync(`device/${device.id}/asset/+/command`, { qos: 1 });
    device.client = client;
  };
  const command = async (edge: number, device: Device, value: number) => {
    const res = await sendJson(`${edges[edge].base}/device/${device.id}/asset/level/command`, 'PUT', userToken, { value });
    assert.is(res.status, 202, `command ${value} to ${device.id} through edge ${edge}`);
  };
  /**
   * Every command of the device delivered, each lifecycle recorded once by one owner: queued, then
   * sent and delivered — or, for a command that first found its device gone (`waited`), tried and
   * queued again until it was back: (queued, sent)+ then one delivered.
   */
  const everyLifecycleOnce = async (device: Device, count: number, waited = new Set<string>()) => {
    let all = new Map<string, CommandLifecycle>();
    await waitFor(async () => {
      all = await listAllCommands(edges[0].base, device.id, userToken);
      return all.size === count && [...all.values()].every((c) => c.status === 'delivered');
    }, 60_000, `${count} commands of ${device.id} delivered`);
    for (const c of all.values()) {
      const statuses = c.transitions.map((t) => t.status).join(' ');
      if (waited.has(String(c.value))) assert.match(statuses, /^(queued sent )+delivered$/, `the lifecycle of ${c.id}, recorded once`);
      else assert.is(statuses, 'queued sent delivered', `the lifecycle of ${c.id}, recorded once`);
    }
  };

  test.before(async () => {
    const registry = await openRegistry(dbConfig);
    const user = await registry.registry.createUser({ name: 'operator' });
    userToken = user.token;
    const ground = await registry.registry.createGround({ name: 'fleet', userId: user.entity.id });
    for (let i = 0; i < DEVICES; i++) {
      const { device, token } = await registry.registry.createDevice({ groundId: ground.id, name: `dimmer-${i}`, assets: [{ name: 'level', is: 'actuator', profile: { type: 'integer' } }] });
      devices.push({ id: device.id, token, received: [] });
    }
    await registry.close();
    const baseEnv = {
      KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
      CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: String(PARTITIONS), HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '',
    };
    let n = 0;
    const start = async (name: string, role: 'edge' | 'engine', extra: Record<string, string> = {}) => {
      const p = await startFleet({ name, role, env: { ...baseEnv, DATA_DIR: join(dir, `${name}-${n++}`), ...extra } });
      processes.push(p);
      return p;
    };
    const ports = [await freePort(), await freePort()];
    const [a, b] = await Promise.all(['edge-a', 'edge-b'].map((name, i) => start(name, 'edge', { MQTT_PORT: String(ports[i]), MQTT_HOST: '127.0.0.1' })));
    edges = [a, b].map((p, i) => ({ process: p, base: `http://127.0.0.1:${p.httpPort}`, mqttPort: ports[i] }));
    await Promise.all([start('engine-a', 'engine', { MQTT_PORT: '-1' }), start('engine-b', 'engine', { MQTT_PORT: '-1' })]);
    await admin.connect();
    await producer.connect();
    await waitFor(async () => {
      const { groups: [group] } = await admin.describeGroups([`${prefix}fleetstream-commands`]);
      return group?.state === 'Stable' && group.members.length === 2;
    }, 90_000, 'two engines own the commands');
    await Promise.all(devices.map((d, i) => connect(d, i % 2)));
  });

  test.after(async () => {
    for (const d of devices) d.client?.end(true);
    await Promise.all(processes.map((p) => p.stop()));
    await producer.disconnect().catch(() => undefined);
    await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'distributed-command-routing' });
  });

  test('every command reaches its device on either edge, issued through either edge or topic `commands`, its lifecycle recorded once', async () => {
    await Promise.all(devices.map(async (d, i) => {
      await command(0, d, i * 10 + 1);
      await command(1, d, i * 10 + 2);
    }));
    await producer.send({
      topic: `${prefix}commands`,
      messages: devices.map((d, i) => ({
        key: d.id,
        value: JSON.stringify({ id: `app-${i}-${RUN}`, deviceId: d.id, asset: 'level', value: i * 10 + 3, issuer: 'app:routing', issuedAt: Date.now() }),
      })),
    });
    await waitFor(() => devices.every((d) => d.received.length >= 3), 60_000, 'three commands at every device');
    devices.forEach((d, i) => assert.equal([...d.received].sort(), [i * 10 + 1, i * 10 + 2, i * 10 + 3].sort(), `what ${d.id} received`));
    for (const d of devices) await everyLifecycleOnce(d, 3);
  });

  test('revoking a token closes its connections on both edges', async () => {
    const [onA, onB] = [devices[0], devices[1]];
    const closed = [onA, onB].map((d) => new Promise<void>((resolve) => d.client!.once('close', () => resolve())));
    const registry = await openRegistry(dbConfig);
    try {
      for (const d of [onA, onB]) assert.ok(await registry.registry.revokeToken(d.token), `revoked ${d.id}`);
    } finally {
      await registry.close();
    }
    await Promise.race([Promise.all(closed), new Promise((_, reject) => setTimeout(() => reject(new Error('connections still open after 5 s')), 5000))]);
    devices.splice(0, 2);
  });

  test('a device that moves to the other edge gets the commands that waited for it', async () => {
    const d = devices[0];
    const before = d.received.length;
    d.client!.end(true);
    d.client = undefined;
    await command(0, d, 1001);
    await command(1, d, 1002);
    // devices[0] was the third device: it was on edge A (index 0).
    await connect(d, 1);
    await waitFor(() => d.received.length >= before + 2, 30_000, 'the waiting commands after the move');
    assert.equal(d.received.slice(before), [1001, 1002], 'in the order issued');
    await everyLifecycleOnce(d, 5, new Set(['1001', '1002']));
  });

  test('after SIGKILL of an edge its devices reconnect to the other edge and get their queued commands', async () => {
    const victims = devices.filter((_, i) => i % 2 === 1);
    const before = new Map(victims.map((d) => [d.id, d.received.length]));
    edges[1].process.child.kill('SIGKILL');
    await edges[1].process.exited;
    for (const d of victims) await command(0, d, 2000);
    for (const d of victims) await connect(d, 0);
    await waitFor(() => victims.every((d) => d.received.length > before.get(d.id)!), 60_000, 'queued commands after the reconnect');
    for (const d of victims) assert.equal(d.received.slice(before.get(d.id)!), [2000], `${d.id} got its command once it was back`);
    for (const d of victims) await everyLifecycleOnce(d, 4, new Set(['2000']));
  });

  test.run();
});
