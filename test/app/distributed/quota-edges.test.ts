/**
 * A ground's states per second over two edges (docs/grounds.md "Quotas"): two `--role edge`
 * processes on Kafka and PostgreSQL share the ground's budget, they do not each take it. The quota
 * is set in the registry after the edges started (its change reaches them by NOTIFY); each edge
 * then gets 1.5× the budget for 6 s, and the uplinks accepted (202) over both must be the budget
 * over the window plus its burst, within ±25 % — where two budgets would be twice that.
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
import { suite, withEnv } from '../../support/suite.ts';
import { delay, removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const BUDGET = 40;
const WINDOW_MS = 6000;
/** Uplinks per second sent to each edge: 1.5× the budget, 3× over both. */
const PER_EDGE = 60;

withEnv('quota-edges', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('quotas: the states per second of a ground shared by two edges, not multiplied');

  test('two edges at 1.5× the budget each accept the budget over the window (± 25 %), not twice it', async () => {
    const id = `fs_quota_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-quota-edges-'));
    const processes: FleetProcess[] = [];
    const kafka = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'quota-edges', logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
    try {
      const user = await registry.createUser({ name: 'operator' });
      const ground = await registry.createGround({ name: 'fleet', userId: user.entity.id });
      const devices = await Promise.all(Array.from({ length: 4 }, (_, i) =>
        registry.createDevice({ groundId: ground.id, name: `d${i}`, assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] })));
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: '2', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', MQTT_PORT: '-1', LPWAN_APPLICATIONS_FILE: '',
      };
      const edges = await Promise.all(['edge-a', 'edge-b'].map(async (name) => {
        const p = await startFleet({ name, role: 'edge', env: { ...baseEnv, DATA_DIR: join(dir, name) } });
        processes.push(p);
        return p;
      }));
      await registry.setQuota(ground.id, { statesPerSecond: BUDGET });
      // Each edge counts the live leases every second; the change arrives by NOTIFY.
      await delay(1500);
      const counts = { accepted: 0, refused: 0, other: 0, retryAfter: new Set<string>() };
      const send = async (port: number, k: number) => {
        const device = devices[k % devices.length];
        const res = await fetch(`http://127.0.0.1:${port}/device/${device.device.id}/asset/t/state`, {
          method: 'PUT', headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ value: k }),
        });
        await res.arrayBuffer();
        if (res.status === 202) counts.accepted++;
        else if (res.status === 429) {
          counts.refused++;
          counts.retryAfter.add(res.headers.get('retry-after') ?? '');
        } else counts.other++;
      };
      const started = Date.now();
      const sends: Promise<void>[] = [];
      let k = 0;
      for (let tick = 0; Date.now() - started < WINDOW_MS; tick++) {
        // 20 ticks a second, PER_EDGE / 20 uplinks to each edge per tick, paced on the wall clock.
        for (const edge of edges) for (let i = 0; i < PER_EDGE / 20; i++) sends.push(send(edge.httpPort!, k++));
        const next = started + (tick + 1) * 50;
        await delay(Math.max(0, next - Date.now()));
      }
      await Promise.all(sends);
      const seconds = (Date.now() - started) / 1000;
      const expected = BUDGET * seconds + 2 * BUDGET;
      console.log(`quota-edges: ${k} uplinks over ${seconds.toFixed(1)} s to 2 edges, budget ${BUDGET}/s: accepted ${counts.accepted} (budget × window + burst = ${expected.toFixed(0)}, ratio ${(counts.accepted / expected).toFixed(2)}; two budgets would be ${(2 * expected).toFixed(0)}), refused 429 ${counts.refused}`);
      assert.is(counts.other, 0);
      assert.ok(counts.refused > 0);
      assert.equal([...counts.retryAfter], ['1']);
      assert.ok(counts.accepted <= 1.25 * expected, `at most the budget: ${counts.accepted} of ${expected}`);
      assert.ok(counts.accepted >= 0.75 * expected, `the budget is used: ${counts.accepted} of ${expected}`);
    } finally {
      await registry.close();
      await Promise.all(processes.map((p) => p.stop()));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'quota-edges' });
    }
  });

  test.run();
});
