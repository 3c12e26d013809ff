/**
 * Connectivity in distributed mode: two edges and an engine as separate processes on Kafka,
 * PostgreSQL and the ClickHouse server. A device connected over MQTT to edge A reads as connected
 * on a GET served by edge B; its MQTT uplink moves lastSeenAt there too; once edge A is killed
 * (SIGKILL: nobody removes its sessions), the device reads as not connected when edge A's lease
 * (shortened here with MQTT_EDGE_LEASE_MS) lapses, while its session row is still in the registry.
 *
 * Runs when KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL_TEST are set; its own topic prefix,
 * ClickHouse database and PostgreSQL schema are removed afterwards.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import mqtt from 'mqtt';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { freePort, removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { waitFor } from '../../support/tmp.ts';

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const LEASE_MS = 1500;

withEnv('connectivity-distributed', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('connectivity: a session on one edge, read on another, and the lease of a killed edge');

  test('connected on edge B while the device holds a session on edge A; not once A is killed and its lease lapses', async () => {
    const id = `fs_conn_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-connectivity-distributed-'));
    const processes: FleetProcess[] = [];
    const kafka = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'connectivity-distributed', logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
    let client: mqtt.MqttClient | undefined;
    try {
      const user = await registry.createUser({ name: 'operator' });
      const ground = await registry.createGround({ name: 'fleet', userId: user.entity.id });
      const { device, token } = await registry.createDevice({ groundId: ground.id, name: 'd', assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
      const mqttPort = await freePort();
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: '2', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', MQTT_HOST: '127.0.0.1',
        LPWAN_APPLICATIONS_FILE: '', MQTT_EDGE_LEASE_MS: String(LEASE_MS),
      };
      let n = 0;
      const start = async (name: string, role: 'edge' | 'engine', port: number) => {
        const p = await startFleet({ name, role, env: { ...baseEnv, MQTT_PORT: String(port), DATA_DIR: join(dir, `${name}-${n++}`) } });
        processes.push(p);
        return p;
      };
      const [edgeA, edgeB] = await Promise.all([start('edge-a', 'edge', mqttPort), start('edge-b', 'edge', -1)]);
      await start('engine', 'engine', -1);
      const onB = async () => {
        const res = await fetch(`http://127.0.0.1:${edgeB.httpPort}/device/${device.id}`, { headers: { authorization: `Bearer ${user.token}` } });
        assert.is(res.status, 200);
        return await res.json() as { id: string; lastSeenAt?: number; connected?: boolean };
      };
      assert.is((await onB()).connected, false);

      client = await mqtt.connectAsync(`mqtt://127.0.0.1:${mqttPort}`, { username: token, password: token, reconnectPeriod: 0 });
      client.on('error', () => undefined);
      await waitFor(async () => (await onB()).connected === true, 15_000, 'connected, read on edge B');
      const before = Date.now();
      await client.publishAsync(`device/${device.id}/asset/t/state`, JSON.stringify({ value: 1 }), { qos: 1 });
      await waitFor(async () => ((await onB()).lastSeenAt ?? 0) >= before, 60_000, 'lastSeenAt of the MQTT uplink, read on edge B');

      edgeA.child.kill('SIGKILL');
      await edgeA.exited;
      await waitFor(async () => (await onB()).connected === false, 15_000, 'not connected once the lease of the killed edge lapsed');
      const rows = await registry.executor.query<{ n: unknown }>('SELECT count(*) AS n FROM device_sessions WHERE device_id = $1', [device.id]);
      assert.is(Number(rows.rows[0].n), 1, 'the killed edge left its session behind: the lease decided');
    } finally {
      client?.end(true);
      await registry.close();
      await Promise.all(processes.map((p) => p.stop()));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'connectivity-distributed' });
    }
  });

  test.run();
});
