/**
 * Rules in distributed mode: two edges and, at first, one engine as separate processes on Kafka,
 * PostgreSQL and the ClickHouse server. A rule made through one edge is judged by the engines; a
 * second engine joins halfway (the engines' group rebalances, partitions move, what the first had
 * not committed is judged again by the second) and the first is killed (kill -9) later. Every
 * state that should raise an alarm raises exactly one, and every state that should clear it
 * clears it: each device's alarms are those its states call for, none twice. A silence rule made
 * before the second engine joins raises, once the states stop, one alarm per device: the timers
 * are fired by whichever engine claims them, each once.
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
import { removeFleetData, startFleet, type FleetProcess, devicesOnEveryPartition } from '../../support/fleetCluster.ts';
import { sendJson } from '../../support/sendJson.ts';
import { waitFor } from '../../support/tmp.ts';
import { openSse } from '../../support/liveClients.ts';

const PARTITIONS = 4;
const DEVICES = 8;
/** Per device: above, below, above, … — each odd one raises an alarm, each even one clears it. */
const PER_DEVICE = 12;
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const T0 = Date.now() - 3_600_000;

withEnv('rules-distributed', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('rules: two edges, engines joining and dying');

  test('each alarm raised once and cleared once across a rebalance and a kill -9', async () => {
    const id = `fs_rules_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-rules-distributed-'));
    const processes: FleetProcess[] = [];
    const kafka = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'rules-distributed', logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
    try {
      const user = await registry.createUser({ name: 'operator' });
      const ground = await registry.createGround({ name: 'fleet', userId: user.entity.id });
      const devices = await devicesOnEveryPartition(registry, ground.id, PARTITIONS, DEVICES);
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: String(PARTITIONS), MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '',
      };
      let n = 0;
      const start = async (name: string, role: 'edge' | 'engine') => {
        const p = await startFleet({ name, role, env: { ...baseEnv, DATA_DIR: join(dir, `${name}-${n++}`) } });
        processes.push(p);
        return p;
      };
      const [edgeA, edgeB] = await Promise.all([start('edge-a', 'edge'), start('edge-b', 'edge')]);
      const engineA = await start('engine-a', 'engine');
      const bases = [`http://127.0.0.1:${edgeA.httpPort}`, `http://127.0.0.1:${edgeB.httpPort}`];
      const rule = await sendJson(`${bases[0]}/ground/${ground.id}/rules`, 'POST', user.token, { name: 'hot', asset: 't', condition: { above: 8 }, severity: 'major' });
      assert.is(rule.status, 201);
      const ruleId = ((await rule.json()) as { id: string }).id;
      // The alarm changes the engines make reach a stream on the other edge, through topic live.
      const stream = await openSse(`${bases[1]}/ground/${ground.id}/live?kinds=alarm`, user.token);
      assert.is(stream.status, 200);

      const send = async (i: number) => {
        for (const [k, d] of devices.entries()) {
          const res = await sendJson(`${bases[(i + k) % 2]}/device/${d.id}/asset/t/state`, 'PUT', d.token, { value: i % 2 === 0 ? 10 + i : 1, at: new Date(T0 + i * 1000).toISOString() });
          assert.is(res.status, 202);
        }
      };
      await admin.connect();
      const engineMembers = async () => (await admin.describeGroups([`${prefix}fleetstream-engine`])).groups[0];
      for (let i = 0; i < PER_DEVICE / 3; i++) await send(i);
      const quiet = await sendJson(`${bases[1]}/ground/${ground.id}/rules`, 'POST', user.token, { name: 'quiet', asset: 't', condition: { silentFor: 'PT5S' }, severity: 'warning' });
      assert.is(quiet.status, 201);
      const quietId = ((await quiet.json()) as { id: string }).id;
      // A second engine joins: the group rebalances while states keep coming.
      const engineB = await start('engine-b', 'engine');
      for (let i = PER_DEVICE / 3; i < (2 * PER_DEVICE) / 3; i++) await send(i);
      await waitFor(async () => { const g = await engineMembers(); return g?.state === 'Stable' && g.members.length === 2; }, 90_000, 'both engines in the group');
      // The first engine dies without a word; the second takes its partitions and judges again what it had not committed.
      engineA.child.kill('SIGKILL');
      await engineA.exited;
      for (let i = (2 * PER_DEVICE) / 3; i < PER_DEVICE; i++) await send(i);
      const lastSent = Date.now();
      assert.ok(engineB.child.exitCode === null, 'the second engine runs');

      const perDevice = PER_DEVICE / 2;
      const all = async () => registry.listAlarms(ground.id, { limit: 1000 });
      const alarmsOf = async () => (await all()).filter((a) => a.ruleId === ruleId);
      await waitFor(async () => {
        const alarms = await alarmsOf();
        return alarms.length >= devices.length * perDevice && alarms.every((a) => a.status === 'cleared');
      }, 120_000, 'every alarm raised and cleared');
      const alarms = await alarmsOf();
      await waitFor(() => stream.events.filter((e) => JSON.parse(e.data).ruleId === ruleId).length >= alarms.length, 30_000, 'the alarm events on the other edge\'s stream');
      const streamed = stream.events.map((e) => JSON.parse(e.data) as { alarmId: string; change: string; ruleId: string }).filter((e) => e.ruleId === ruleId);
      assert.ok(streamed.every((e) => alarms.some((a) => a.id === e.alarmId)), 'every streamed alarm is one the registry has');
      assert.ok(streamed.some((e) => e.change === 'raised') && streamed.some((e) => e.change === 'cleared'));
      stream.close();
      // Silent since their last states: one alarm each, started after it.
      const silenceAfter = async () => (await all()).filter((a) => a.ruleId === quietId && a.startedAt >= lastSent);
      await waitFor(async () => new Set((await silenceAfter()).map((a) => a.deviceId)).size === devices.length, 60_000, 'every device silent');
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const silences = await silenceAfter();
      assert.equal(silences.map((a) => a.deviceId).sort(), devices.map((d) => d.id).sort(), 'one silence alarm per device, none twice');
      assert.ok(silences.every((a) => a.status === 'active' && a.value === null && a.count === 1));
      for (const a of (await all()).filter((x) => x.ruleId === quietId && x.status === 'cleared')) assert.ok(a.clearedAt! >= a.startedAt, 'a silence ended by a later state');
      assert.is(alarms.length, devices.length * perDevice, 'no alarm raised twice');
      for (const d of devices) {
        const mine = alarms.filter((a) => a.deviceId === d.id).sort((a, b) => a.startedAt - b.startedAt);
        assert.equal(mine.map((a) => [a.ruleId, a.status, a.count, a.value, a.startedAt, a.clearedAt]),
          Array.from({ length: perDevice }, (_, j) => [ruleId, 'cleared', 1, 10 + 2 * j, T0 + 2 * j * 1000, T0 + (2 * j + 1) * 1000]), `device ${d.id}`);
      }
    } finally {
      await registry.close();
      await Promise.all(processes.map((p) => p.stop()));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'rules-distributed' });
    }
  });

  test.run();
});
