/**
 * Full command queues in distributed mode: two edges and two engines as separate processes on
 * Kafka, PostgreSQL and the ClickHouse server, `COMMAND_QUEUE` 100. 5,000 commands to a device that
 * is offline, sent to either edge: an edge cannot know the queue of a device whose commands an
 * engine (the device's command owner) consumes, so each is either refused at once (429 COMMAND_QUEUE_FULL) or listed in
 * `GET /device/{id}/commands` on either edge — those beyond the queue `failed` with
 * COMMAND_QUEUE_FULL and the reason — and none of them pushes the device's uplink refusal out of
 * `GET /device/{id}/rejections`.
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
import { freePort, removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { issueCommands, listAllCommands } from '../../support/commandListing.ts';
import { waitFor } from '../../support/tmp.ts';

const PARTITIONS = 4;
const QUEUE = 100;
const COMMANDS = 5000;
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;

withEnv('distributed-commands', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('commands: two edges, two engines, full queues');

  test('5,000 commands to an offline device over two edges, queue 100: each refused at once or listed, those beyond the queue failed with COMMAND_QUEUE_FULL', async () => {
    const id = `fs_cmdq_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-distributed-commands-'));
    const processes: FleetProcess[] = [];
    const admin = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'distributed-commands', logLevel: kafkajs.logLevel.NOTHING }).admin();
    try {
      const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
      const user = await registry.createUser({ name: 'operator' });
      const ground = await registry.createGround({ name: 'fleet', userId: user.entity.id });
      const { device, token } = await registry.createDevice({ groundId: ground.id, name: 'valve', assets: [
        { name: 'led', is: 'actuator', profile: { type: 'boolean' } },
        { name: 'temp', is: 'sensor', profile: { type: 'number' } },
      ] });
      await registry.close();
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: String(PARTITIONS), MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0',
        LPWAN_APPLICATIONS_FILE: '', COMMAND_QUEUE: String(QUEUE),
      };
      let n = 0;
      const start = async (name: string, role: 'edge' | 'engine', extra: Record<string, string> = {}) => {
        const p = await startFleet({ name, role, env: { ...baseEnv, DATA_DIR: join(dir, `${name}-${n++}`), ...extra } });
        processes.push(p);
        return p;
      };
      // Each edge runs its MQTT edge, which the device never connects to: its commands wait.
      const mqtt = async () => ({ MQTT_PORT: String(await freePort()), MQTT_HOST: '127.0.0.1' });
      const [edgeA, edgeB] = await Promise.all([start('edge-a', 'edge', await mqtt()), start('edge-b', 'edge', await mqtt())]);
      await Promise.all([start('engine-a', 'engine'), start('engine-b', 'engine')]);
      await admin.connect();
      // Both engines (the command owners) read topic `commands` before any is sent: no partition moves while they arrive.
      await waitFor(async () => {
        const { groups: [group] } = await admin.describeGroups([`${prefix}fleetstream-commands`]);
        return group?.state === 'Stable' && group.members.length === 2;
      }, 90_000, 'two engines in the commands group');
      const bases = [`http://127.0.0.1:${edgeA.httpPort}`, `http://127.0.0.1:${edgeB.httpPort}`];

      const refusedUplink = await fetch(`${bases[0]}/device/${device.id}/state`, {
        method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ temp: { value: 'hot' } }),
      });
      assert.is(refusedUplink.status, 422);

      const results = await issueCommands({ bases, path: `/device/${device.id}/asset/led/command`, token: user.token, count: COMMANDS, body: (i) => ({ value: i % 2 === 0 }) });
      const accepted = results.filter((r) => r.status === 202);
      const refusedAtOnce = results.filter((r) => r.status === 429);
      assert.is(accepted.length + refusedAtOnce.length, COMMANDS, `answers: ${JSON.stringify([...new Set(results.map((r) => r.status))])}`);
      for (const r of refusedAtOnce) assert.equal([r.code, r.retryAfter !== null], ['COMMAND_QUEUE_FULL', true]);

      for (const base of bases) {
        let listed = new Map<string, { status: string; code?: string; reason?: string }>();
        await waitFor(async () => {
          listed = await listAllCommands(base, device.id, user.token);
          return accepted.every((r) => listed.has(r.id!));
        }, 90_000, 'every accepted command listed').catch((error: Error) => {
          throw new Error(`${error.message}: ${listed.size} of ${accepted.length} on ${base}`);
        });
        assert.is(listed.size, accepted.length, 'nothing else listed');
        const byStatus: Record<string, number> = {};
        for (const c of listed.values()) byStatus[`${c.status}:${c.code ?? ''}`] = (byStatus[`${c.status}:${c.code ?? ''}`] ?? 0) + 1;
        assert.equal(byStatus, { 'queued:': QUEUE, 'failed:COMMAND_QUEUE_FULL': accepted.length - QUEUE }, base);
        assert.ok([...listed.values()].every((c) => c.status === 'queued' || /commands waiting/.test(c.reason ?? '')), 'each failure says why');

        const rejections = async (query: string) => {
          const res = await fetch(`${base}/device/${device.id}/rejections${query}`, { headers: { authorization: `Bearer ${token}` } });
          assert.is(res.status, 200);
          return ((await res.json()) as { items: { code: string; channel: string }[] }).items;
        };
        await waitFor(async () => (await rejections('')).length > 0, 30_000, 'the uplink refusal listed');
        assert.equal((await rejections('')).map((r) => [r.code, r.channel]), [['PROFILE_VIOLATION', 'http']], 'the uplink refusal, alone');
        assert.equal(await rejections('?channel=command'), [], 'a full queue is no rejection');
      }
    } finally {
      await Promise.all(processes.map((p) => p.stop(10_000)));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'distributed-commands' });
    }
  });

  test.run();
});
