/**
 * Usage with two edges and two engines, as separate processes on Kafka, PostgreSQL and the
 * ClickHouse server: each engine counts the states it stores and the commands its command owner
 * queues for the devices of its partitions, and GET /ground/{id}/usage on either edge reports
 * their sum — every state and command counted once, none twice — with the stored rows beside it.
 *
 * Runs when KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL_TEST are set; its own topic prefix,
 * ClickHouse database and PostgreSQL schema are removed afterwards.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { partitionFor } from '../../../engine/ports/log.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { waitFor } from '../../support/tmp.ts';

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const PARTITIONS = 2;
const UPLINKS_PER_DEVICE = 5;

withEnv('usage-distributed', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('usage: two edges, two engines, one sum');

  test('states and commands sent through both edges to devices of both engines are each counted once, read on either edge', async () => {
    const id = `fs_usage_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-usage-distributed-'));
    const processes: FleetProcess[] = [];
    const kafka = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'usage-distributed', logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
    try {
      const owner = await registry.createUser({ name: 'owner' });
      const ground = await registry.createGround({ name: 'fleet', userId: owner.entity.id });
      const assets = [{ name: 't', is: 'sensor' as const, profile: { type: 'number' } }, { name: 'light', is: 'actuator' as const, profile: { type: 'boolean' } }];
      const devices: { id: string; token: string }[] = [];
      while (devices.length < 4 || new Set(devices.map((d) => partitionFor(d.id, PARTITIONS))).size < PARTITIONS) {
        const created = await registry.createDevice({ groundId: ground.id, name: `d${devices.length}`, assets });
        devices.push({ id: created.device.id, token: created.token });
      }
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: String(PARTITIONS), HTTP_HOST: '127.0.0.1', HTTP_PORT: '0',
        MQTT_PORT: '-1', LPWAN_APPLICATIONS_FILE: '',
      };
      let n = 0;
      const start = async (name: string, role: 'edge' | 'engine') => {
        const p = await startFleet({ name, role, env: { ...baseEnv, DATA_DIR: join(dir, `${name}-${n++}`) } });
        processes.push(p);
        return p;
      };
      const edges = await Promise.all([start('edge-a', 'edge'), start('edge-b', 'edge')]);
      const engines = await Promise.all([start('engine-a', 'engine'), start('engine-b', 'engine')]);
      assert.is(engines.length, 2);
      const call = async (edge: FleetProcess, method: string, path: string, token: string, json?: unknown) => {
        const res = await fetch(`http://127.0.0.1:${edge.httpPort}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
          body: json === undefined ? undefined : JSON.stringify(json),
        });
        const text = await res.text();
        return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
      };

      let states = 0;
      let commands = 0;
      for (const [i, device] of devices.entries()) {
        const edge = edges[i % 2];
        for (let k = 0; k < UPLINKS_PER_DEVICE; k++) {
          assert.is((await call(edges[(i + k) % 2], 'PUT', `/device/${device.id}/state`, device.token, { t: { value: k } })).status, 202);
          states++;
        }
        assert.is((await call(edge, 'POST', `/device/${device.id}/asset/light/command`, owner.token, { value: i % 2 === 0 })).status, 202);
        commands++;
      }

      type Usage = { states: { today: number; thisMonth: number }; commands: { today: number; thisMonth: number }; stored: { rows: number }; devices: { count: number } };
      let last: Usage | undefined;
      for (const edge of edges) {
        await waitFor(async () => {
          const read = await call(edge, 'GET', `/ground/${ground.id}/usage`, owner.token);
          assert.is(read.status, 200);
          last = read.body as Usage;
          return last.states.today >= states && last.commands.today >= commands && last.stored.rows >= states;
        }, 60_000, `usage counted, read on ${edge.name}`);
        assert.equal(
          [last!.states, last!.commands, last!.stored.rows, last!.devices.count],
          [{ today: states, thisMonth: states, perSecondQuota: null }, { today: commands, thisMonth: commands }, states, devices.length],
          `each state and command counted once, read on ${edge.name}`,
        );
      }
      // Counted once means: still the same after both engines' next flushes.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const settled = (await call(edges[1], 'GET', `/ground/${ground.id}/usage`, owner.token)).body as Usage;
      assert.equal([settled.states.today, settled.commands.today], [states, commands]);
    } finally {
      await registry.close();
      await Promise.all(processes.map((p) => p.stop()));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'usage-distributed' });
    }
  });

  test.run();
});
