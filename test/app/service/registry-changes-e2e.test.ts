/**
 * Registry changes between processes on PostgreSQL (docs/operations.md "Registry changes"), with
 * real service processes (bin/fleetstream.ts) and the real admin CLI:
 * - two services (A and B, each with its own HTTP edge) on one registry schema, their caches set to
 *   live 10 minutes (REGISTRY_CACHE_TTL_MS), so that only the change feed can make them notice:
 *   a token revoked by the admin CLI, a device deleted through A, a profile changed and an asset
 *   added through A — refused or accepted by A at once and by B within a few seconds;
 * - an engine-only process (Kafka, ClickHouse server) whose device actor holds a compiled profile
 *   picks up the profile changed by another process before its own 30 s refresh.
 * Each process gets its own data dir; the schema, topics and ClickHouse database are this run's own.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import * as assert from 'uvu/assert';
import { createKafkaLog } from '../../../adapters/kafka/index.ts';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { PostgresRegistryChanges } from '../../../adapters/registry-changes/PostgresRegistryChanges.ts';
import type { SqlRegistry } from '../../../adapters/sql-registry/createSqlRegistry.ts';
import { publishingRegistry } from '../../../engine/access/publishingRegistry.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { UplinkIngest } from '../../../engine/uplink/UplinkIngest.ts';
import { clickhouse, delay, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { dropSchema } from '../../support/postgresSchema.ts';

const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;
/** What "within a few seconds" is held to here (the feed itself takes milliseconds). */
const BOUND_MS = 3000;
/** Embedded log and store, no MQTT: only the registry is shared. */
const EMBEDDED = { KAFKA_BROKERS: '', CLICKHOUSE_URL: '', MQTT_URL: '', MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', TOPIC_PREFIX: '' };


async function http(process: FleetProcess, method: string, path: string, token: string, json?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${process.httpPort}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** Milliseconds until `check` holds; fails after `bound`. */
async function within(bound: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const start = performance.now();
  for (;;) {
    if (await check()) return performance.now() - start;
    if (performance.now() - start > bound) assert.unreachable(`${what}: not within ${bound} ms`);
    await delay(10);
  }
}

function runAdmin(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, 'admin', ...args], { env: { ...process.env, ...env, LOG_LEVEL: 'error' } }, (error, _stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stderr });
    });
  });
}

async function seed(registry: SqlRegistry, profile: Record<string, unknown> = { type: 'number', maximum: 10 }) {
  const tag = randomBytes(3).toString('hex');
  const user = await registry.createUser({ name: `user-${tag}` });
  const ground = await registry.createGround({ name: `ground-${tag}`, userId: user.entity.id });
  const device = await registry.createDevice({ groundId: ground.id, name: `device-${tag}`, assets: [{ name: 't', is: 'sensor', profile }] });
  return { userToken: user.token, deviceId: device.device.id, deviceToken: device.token };
}

withEnv('registry changes between service processes', ['DATABASE_URL_TEST'], 'a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/postgres', ({ DATABASE_URL_TEST: url }) => {
  interface World { schema: string; dir: string; registry: SqlRegistry; a: FleetProcess; b: FleetProcess; env: Record<string, string> }
  const test = suite<World>('registry changes: two services on one PostgreSQL registry', {} as World);
  const delays: Record<string, number[]> = {};
  const note = (what: string, ms: number) => (delays[what] ??= []).push(Math.round(ms));

  test.before(async (world) => {
    world.schema = `changes_e2e_${process.pid}_${randomBytes(3).toString('hex')}`;
    world.dir = mkdtempSync(join(tmpdir(), 'fleetstream-changes-'));
    world.env = { ...EMBEDDED, DATABASE_URL: url, DATABASE_SCHEMA: world.schema, REGISTRY_CACHE_TTL_MS: '600000' };
    world.registry = await createPostgresRegistry({ url, schema: world.schema });
    [world.a, world.b] = await Promise.all(['a', 'b'].map((name) => startFleet({ name, role: 'all', env: { ...world.env, DATA_DIR: join(world.dir, name) } })));
  });
  test.after(async (world) => {
    await Promise.all([world.a?.stop(), world.b?.stop()]);
    await world.registry?.close();
    await dropSchema(url, world.schema);
    rmSync(world.dir, { recursive: true, force: true });
    console.log(`registry change seen by the other service (ms): ${JSON.stringify(delays)}`);
  });

  test('a token revoked by the admin CLI, its own process, is refused by both running services', async ({ a, b, registry, env, dir }) => {
    const s = await seed(registry);
    const other = await seed(registry);
    for (const service of [a, b]) {
      assert.is((await http(service, 'GET', `/device/${s.deviceId}`, s.deviceToken)).status, 200);
      assert.is((await http(service, 'GET', `/device/${other.deviceId}`, other.deviceToken)).status, 200);
    }
    const cli = await runAdmin(['revoke-token', s.deviceToken], { ...env, DATA_DIR: join(dir, 'cli') });
    assert.is(cli.code, 0, cli.stderr);
    for (const service of [a, b]) {
      note('admin CLI revoke → refused', await within(BOUND_MS, `${service.name} refuses the revoked token`, async () => (await http(service, 'GET', `/device/${s.deviceId}`, s.deviceToken)).status === 401));
      assert.is((await http(service, 'GET', `/device/${other.deviceId}`, other.deviceToken)).status, 200, 'other tokens keep working');
      const metrics = await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text();
      assert.match(metrics, /^fleetstream_registry_changes_total\{kind="token-revoked"\} [1-9]/m);
      assert.match(metrics, /^fleetstream_registry_changes_connected 1$/m);
      assert.match(metrics, /^fleetstream_registry_changes_ignored_total 0$/m);
    }
  });

  test('a device deleted through A is refused by A at once and by B within seconds', async ({ a, b, registry }) => {
    const s = await seed(registry);
    const state = { t: { value: 1 } };
    for (const service of [a, b]) assert.is((await http(service, 'PUT', `/device/${s.deviceId}/state`, s.deviceToken, state)).status, 202);
    assert.is((await http(a, 'DELETE', `/device/${s.deviceId}`, s.userToken)).status, 204);
    assert.is((await http(a, 'PUT', `/device/${s.deviceId}/state`, s.deviceToken, state)).status, 401, 'A: at once');
    assert.is((await http(a, 'GET', `/device/${s.deviceId}`, s.userToken)).status, 404, 'A: at once');
    note('device deleted on A → refused by B', await within(BOUND_MS, 'B refuses the deleted device\'s token', async () => (await http(b, 'PUT', `/device/${s.deviceId}/state`, s.deviceToken, state)).status === 401));
    assert.is((await http(b, 'GET', `/device/${s.deviceId}`, s.userToken)).status, 404);
  });

  test('a profile changed and an asset added through A apply on B within seconds', async ({ a, b, registry }) => {
    const s = await seed(registry);
    const path = `/device/${s.deviceId}/asset/t/state`;
    assert.is((await http(b, 'PUT', path, s.deviceToken, { value: 5 })).status, 202);
    assert.is((await http(b, 'PUT', path, s.deviceToken, { value: 50 })).status, 422, 'the profile says at most 10');
    const changed = await http(a, 'PUT', `/device/${s.deviceId}/asset/t`, s.userToken, { profile: { type: 'number', maximum: 100 } });
    assert.is(changed.status, 200, JSON.stringify(changed.body));
    assert.is((await http(a, 'PUT', path, s.deviceToken, { value: 50 })).status, 202, 'A: at once');
    note('profile changed on A → applied by B', await within(BOUND_MS, 'B applies the new profile', async () => (await http(b, 'PUT', path, s.deviceToken, { value: 50 })).status === 202));
    const added = await http(a, 'PUT', `/device/${s.deviceId}/asset/h`, s.userToken, { is: 'sensor', profile: { type: 'string' } });
    assert.is(added.status, 201, JSON.stringify(added.body));
    // A device state naming the new asset: refused by a stale copy of the device (UNKNOWN_ASSET), accepted by a fresh one.
    note('asset added on A → usable on B', await within(BOUND_MS, 'B knows the new asset', async () => (await http(b, 'PUT', `/device/${s.deviceId}/state`, s.deviceToken, { h: { value: 'dry' } })).status === 202));
  });

  test.run();
});

withEnv('registry changes reach an engine process', ['DATABASE_URL_TEST', 'KAFKA_BROKERS', 'CLICKHOUSE_URL'], 'PostgreSQL, Kafka and a ClickHouse server (.ci/run starts them)', (env) => {
  const url = env.DATABASE_URL_TEST;
  const test = suite('registry changes: an engine in another process');

  test('the engine\'s device actor drops its compiled profile when another process changes it', async () => {
    const run = `chg${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const schema = `changes_engine_${run}`;
    const prefix = `${run}.`;
    const database = `changes_${run}`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-changes-engine-'));
    const raw = await createPostgresRegistry({ url, schema });
    const changes = await PostgresRegistryChanges.open({ url, schema, clock: systemClock });
    // This test process is "another process": it changes the registry the way any edge does.
    const registry = publishingRegistry(raw, changes);
    const brokers = env.KAFKA_BROKERS.split(',');
    const log = createKafkaLog({ brokers, logLevel: 'nothing' });
    const ingest = new UplinkIngest({ log, clock: systemClock, topic: `${prefix}uplinks` });
    let engine: FleetProcess | undefined;
    try {
      const s = await seed(raw);
      engine = await startFleet({
        name: 'engine', role: 'engine',
        env: {
          DATABASE_URL: url, DATABASE_SCHEMA: schema, KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL,
          CLICKHOUSE_DATABASE: database, TOPIC_PREFIX: prefix, PARTITIONS: '1', DATA_DIR: dir, HTTP_HOST: '127.0.0.1', HTTP_PORT: '0',
          KAFKA_SESSION_TIMEOUT_MS: '6000',
        },
      });
      // Records without the edge's admission decision: the engine's device actor decodes and checks them.
      const body = (value: number, at: number) => new TextEncoder().encode(JSON.stringify({ t: { value, at: new Date(at).toISOString() } }));
      const first = Date.UTC(2026, 0, 1);
      await ingest.append({ channel: 'http', contentType: 'json', deviceId: s.deviceId, body: body(50, first) });
      const rejected = () => clickhouse(env.CLICKHOUSE_URL, `SELECT count() FROM \`${database}\`.rejections WHERE device_id = '${s.deviceId}' AND code = 'PROFILE_VIOLATION'`).then(Number, () => 0);
      await within(90_000, 'the engine refuses 50 under the first profile (maximum 10)', async () => (await rejected()) >= 1);
      // The actor now holds the compiled first profile, refreshed on its own only after 30 s.
      const changedAt = performance.now();
      await registry.upsertAsset(s.deviceId, 't', { profile: { type: 'number', maximum: 100 } });
      await ingest.append({ channel: 'http', contentType: 'json', deviceId: s.deviceId, body: body(50, first + 1) });
      const stored = () => clickhouse(env.CLICKHOUSE_URL, `SELECT count() FROM \`${database}\`.states FINAL WHERE device_id = '${s.deviceId}' AND ts = ${first + 1}`).then(Number, () => 0);
      await within(20_000, 'the engine stores 50 under the changed profile', async () => (await stored()) === 1);
      console.log(`profile change → stored under it by the engine process: ${Math.round(performance.now() - changedAt)} ms`);
      assert.is(await rejected(), 1, 'the second uplink was not refused');
    } finally {
      await engine?.stop();
      await ingest.close();
      await log.close();
      await changes.close();
      await raw.close();
      await dropSchema(url, schema);
      await clickhouse(env.CLICKHOUSE_URL, `DROP DATABASE IF EXISTS \`${database}\``).catch(() => undefined);
      const admin = new kafkajs.Kafka({ brokers, clientId: 'registry-changes-e2e', logLevel: kafkajs.logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.deleteTopics({ topics: ['uplinks', 'commands', 'dead-letters'].map((t) => `${prefix}${t}`), timeout: 10_000 }).catch(() => undefined);
      await admin.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.run();
});
