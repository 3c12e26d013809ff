/**
 * Distributed mode end to end, as separate processes (bin/fleetstream.ts): one `--role edge` taking
 * HTTP uplinks into Kafka, two `--role engine` consuming them as one consumer group and storing
 * states in a ClickHouse server, the registry in PostgreSQL. Afterwards the rows are counted: every
 * uplink acknowledged with 202 shows its four data points exactly once in queries, nothing else is
 * there, and every tenth uplink's state of an unknown asset is recorded as a rejection (dead letter
 * and rejections table). Then the same under faults:
 * - one of the two engines SIGKILLed mid-stream: the other takes its partitions, the killed one
 *   restarts and rejoins;
 * - the ClickHouse server stopped for 20 s under load: the engines stop committing, their memory
 *   stays bounded while the backlog grows in Kafka, and they catch up when it is back;
 * - the Kafka broker restarted under load: the edge answers 503 + Retry-After while it cannot
 *   append, and nothing it acknowledged is lost.
 *
 * Runs when KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL_TEST are all set (.ci/run sets them).
 * Each scenario has its own topic prefix, ClickHouse database and PostgreSQL schema, removed
 * afterwards. The two outages run on private servers (scripts/clickhouse.sh and scripts/kafka.sh on
 * free ports and temp dirs): the shared ones, which other test files use at the same time, are never
 * stopped.
 */
import { dropSchema } from '../../support/postgresSchema.ts';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, unless, withEnv } from '../../support/suite.ts';
import { TEST_SESSION_TIMEOUT_MS } from '../../support/kafkaSession.ts';
import * as assert from 'uvu/assert';
import kafkajs, { type Admin } from 'kafkajs';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { decodeEnvelope } from '../../../engine/uplink/envelope.ts';
import {
  clickhouse, createDevices, delay, exactlyOnceProblems, freePort, POINTS_PER_UPLINK, startFleet, storedUplinks, UplinkLoad, visibleRows,
  appendUplinks, rejectedUplinks, type FleetProcess, type LoadOptions, type TestDevice,
} from '../../support/fleetCluster.ts';

const root = new URL('../../..', import.meta.url).pathname;
const brokersEnv = process.env.KAFKA_BROKERS;
const clickhouseEnv = process.env.CLICKHOUSE_URL;
const postgresEnv = process.env.DATABASE_URL_TEST;

const PARTITIONS = 4;
const DEVICES = 40;
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;

interface World {
  id: string;
  brokers: string;
  clickhouseUrl: string;
  devices: TestDevice[];
  processes: FleetProcess[];
  /** Starts a process of this world; extra environment on top of the world's. */
  start(name: string, role: 'edge' | 'engine', env?: Record<string, string>): Promise<FleetProcess>;
  /** An HTTP load on this world's edge, stopped by dispose() if still running. */
  load(edge: FleetProcess, options: Omit<LoadOptions, 'baseUrl' | 'devices'>): UplinkLoad;
  engineGroup: string;
  uplinks: string;
  admin: Admin;
  dispose(): Promise<void>;
}

async function openWorld(name: string, services: { brokers: string; clickhouseUrl: string }): Promise<World> {
  const id = `fs_${name}_${RUN}`;
  const dir = mkdtempSync(join(tmpdir(), `fleetstream-${name}-`));
  const dropOwnSchema = () => dropSchema(postgresEnv!, id);
  const admin = new kafkajs.Kafka({ brokers: services.brokers.split(','), clientId: 'distributed-e2e', logLevel: kafkajs.logLevel.NOTHING }).admin();
  let devices: TestDevice[];
  try {
    const registry = await createPostgresRegistry({ url: postgresEnv!, schema: id });
    devices = await createDevices(registry, DEVICES).finally(() => registry.close());
    await admin.connect();
  } catch (error) {
    await dropOwnSchema().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const processes: FleetProcess[] = [];
  const loads: UplinkLoad[] = [];
  const prefix = `${id}.`;
  const baseEnv = {
    KAFKA_BROKERS: services.brokers,
    CLICKHOUSE_URL: services.clickhouseUrl,
    DATABASE_URL: postgresEnv!,
    DATABASE_SCHEMA: id,
    CLICKHOUSE_DATABASE: id,
    TOPIC_PREFIX: prefix,
    PARTITIONS: String(PARTITIONS),
    MQTT_PORT: '-1',
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    LPWAN_APPLICATIONS_FILE: '',
  };
  let n = 0;
  return {
    id,
    brokers: services.brokers,
    clickhouseUrl: services.clickhouseUrl,
    devices,
    processes,
    engineGroup: `${prefix}fleetstream-engine`,
    uplinks: `${prefix}uplinks`,
    admin,
    async start(processName, role, env = {}) {
      const started = await startFleet({ name: processName, role, env: { ...baseEnv, DATA_DIR: join(dir, `${processName}-${n++}`), ...env } });
      processes.push(started);
      return started;
    },
    load(edge, options) {
      const load = new UplinkLoad({ ...options, baseUrl: `http://127.0.0.1:${edge.httpPort}`, devices });
      loads.push(load);
      return load.start();
    },
    async dispose() {
      await Promise.all(loads.map((l) => l.stop()));
      await Promise.all(processes.map((p) => p.stop(10_000)));
      try {
        const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
        if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 10_000 });
        await admin.deleteGroups([`${prefix}fleetstream-engine`, `${prefix}fleetstream-commands`]).catch(() => undefined);
      } catch (error) {
        console.log(`distributed-e2e: could not delete the topics of ${id}: ${String(error)}`);
      }
      await admin.disconnect();
      await clickhouse(services.clickhouseUrl, `DROP DATABASE IF EXISTS \`${id}\``).catch((error: unknown) => console.log(`distributed-e2e: ${String(error)}`));
      await dropOwnSchema().catch((error: unknown) => console.log(`distributed-e2e: ${String(error)}`));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Members of the engine group with the uplink partitions each holds, once the group is stable. */
async function groupAssignment(world: World): Promise<number[][] | undefined> {
  const { groups: [group] } = await world.admin.describeGroups([world.engineGroup]);
  if (group === undefined || group.state !== 'Stable') return undefined;
  return group.members.map((m) => {
    const decoded = kafkajs.AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
    return [...(decoded?.assignment[world.uplinks] ?? [])].sort((a, b) => a - b);
  });
}

async function waitForGroup(world: World, members: number, timeoutMs: number): Promise<number[][]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const assignment = await groupAssignment(world).catch(() => undefined);
    if (assignment && assignment.length === members && assignment.every((p) => p.length > 0) && assignment.flat().length === PARTITIONS) return assignment;
    if (Date.now() > deadline) throw new Error(`engine group not stable with ${members} members after ${timeoutMs} ms: ${JSON.stringify(assignment)}`);
    await delay(250);
  }
}

/** An admin request, tried again for a while when the broker answers with an error (leaders moving). */
async function retrying<T>(request: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request();
    } catch (error) {
      if (attempt >= 40) throw error;
      await delay(500);
    }
  }
}

/** Sum of the engine group's committed offsets over the uplink partitions. */
async function committedTotal(world: World): Promise<number> {
  const [topic] = await retrying(() => world.admin.fetchOffsets({ groupId: world.engineGroup, topics: [world.uplinks] }));
  return (topic?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
}

interface Outcome {
  acked: ReadonlySet<number>;
  sent: ReadonlySet<number>;
  ackedWithUnknown: ReadonlySet<number>;
  sentWithUnknown: ReadonlySet<number>;
}

/** Sum of the uplinks topic's end offsets: every record appended, acknowledged or not. */
async function appendedTotal(world: World): Promise<number> {
  const offsets = await retrying(() => world.admin.fetchTopicOffsets(world.uplinks));
  return offsets.reduce((sum, p) => sum + Number(p.high), 0);
}

/** The uplink numbers k of every record in the uplinks topic (diagnostics: lost before or after Kafka?). */
async function uplinksInTopic(world: World): Promise<Set<number>> {
  const end = await appendedTotal(world);
  const groupId = `verify-${RUN}-${Math.random()}`;
  const consumer = new kafkajs.Kafka({ brokers: world.brokers.split(','), logLevel: kafkajs.logLevel.NOTHING }).consumer({ groupId });
  const ks = new Set<number>();
  let seen = 0;
  await consumer.connect();
  await consumer.subscribe({ topics: [world.uplinks], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen++;
      const body = JSON.parse(new TextDecoder().decode(decodeEnvelope(new Uint8Array(message.value!)).body)) as Record<string, { value: number }>;
      ks.add(body.a0.value / POINTS_PER_UPLINK);
    },
  });
  const deadline = Date.now() + 30_000;
  while (seen < end && Date.now() < deadline) await delay(100);
  await consumer.disconnect();
  await world.admin.deleteGroups([groupId]).catch(() => undefined);
  return ks;
}

/**
 * Waits until the engines committed every record of the uplinks topic (so everything they will
 * ever store is stored), then checks exactly once, and that the engines recorded the rejection of
 * every acknowledged uplink with an unknown asset.
 */
async function expectExactlyOnce(world: World, load: Outcome, timeoutMs: number): Promise<{ visible: number; physical: number; rejected: number }> {
  const want = load.acked.size * POINTS_PER_UPLINK;
  const deadline = Date.now() + timeoutMs;
  let committed = -1;
  let appended = 0;
  while (Date.now() < deadline) {
    [committed, appended] = await Promise.all([committedTotal(world), appendedTotal(world)]);
    if (committed === appended) break;
    await delay(250);
  }
  assert.is(committed, appended, `the engines committed every record of ${world.uplinks} (${committed} of ${appended})`);
  const stored = await storedUplinks(world.clickhouseUrl, world.id);
  const problems = exactlyOnceProblems(stored, load);
  if (problems.length > 0) {
    const missing = [...load.acked].filter((k) => (stored.perUplink.get(k) ?? 0) < POINTS_PER_UPLINK);
    const inTopic = await uplinksInTopic(world).catch(() => new Set<number>());
    console.log(`  missing acknowledged uplinks ${JSON.stringify(missing.slice(0, 20))}; of them in ${world.uplinks}: ` +
      `${missing.filter((k) => inTopic.has(k)).length} of ${missing.length} (topic holds ${inTopic.size} uplinks)`);
    for (const p of world.processes) console.log(`--- ${p.name} (pid ${p.pid}), last lines:\n${p.output().split('\n').slice(-15).join('\n')}`);
  }
  assert.equal(problems, [], `acked ${load.acked.size}, visible rows ${stored.visible}`);
  assert.ok(stored.visible >= want, `every acknowledged uplink stored: ${stored.visible} of ${want} rows`);
  // a commit follows the rejections' dead letters and their records: all are there by now
  const rejected = await rejectedUplinks(world.clickhouseUrl, world.id);
  assert.ok(load.ackedWithUnknown.size > 0, 'some uplinks carried an unknown asset');
  assert.ok(rejected >= load.ackedWithUnknown.size && rejected <= load.sentWithUnknown.size,
    `rejections recorded for ${rejected} uplinks; ${load.ackedWithUnknown.size} acknowledged and ${load.sentWithUnknown.size} sent with an unknown asset`);
  return { visible: stored.visible, physical: stored.physical, rejected };
}

function script(name: 'kafka.sh' | 'clickhouse.sh', args: string[], env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(root, 'scripts', name), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${name} ${args.join(' ')} exited ${code}: ${output}`))));
  });
}

const describeStatuses = (load: UplinkLoad) => JSON.stringify(Object.fromEntries(load.statuses)) +
  [...load.firstBodies].map(([status, body]) => `; first ${status}: ${body}`).join('');

/**
 * Answers where Kafka is not disturbed: 202, or at worst a few 503 + Retry-After when the shared
 * broker stalls (a CPU-starved single-node KRaft broker fences itself for seconds) — never a loss,
 * only fewer 202s; anything else is a failure.
 */
function expectAccepted(load: UplinkLoad): void {
  assert.equal([...load.statuses.keys()].filter((s) => s !== 202 && s !== 503), [], `answers ${describeStatuses(load)}`);
  assert.is(load.missingRetryAfter, 0, 'every 503 carries Retry-After');
  assert.is(load.noAnswer, 0, 'every request answered');
  assert.ok(load.acked.size >= 0.9 * load.sent.size, `most uplinks accepted: ${describeStatuses(load)}`);
}

withEnv('distributed-e2e', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const shared = { brokers: env.KAFKA_BROKERS, clickhouseUrl: env.CLICKHOUSE_URL };
  const e2e = suite('distributed: edge → Kafka → two engines → ClickHouse server');

  e2e('every acknowledged uplink arrives once, both engines consuming', async () => {
    const world = await openWorld('e2e', shared);
    try {
      const edge = await world.start('edge', 'edge');
      await world.start('engine-a', 'engine');
      await world.start('engine-b', 'engine');
      const assignment = await waitForGroup(world, 2, 60_000);
      const load = world.load(edge, { concurrency: 16, total: 3000, unknownAssetEvery: 10 });
      await load.finished();
      expectAccepted(load);
      const { visible, physical, rejected } = await expectExactlyOnce(world, load, 60_000);
      console.log(`  e2e: ${load.acked.size} of 3000 uplinks acknowledged, ${visible} data points visible (${physical} physical rows), ${rejected} rejections recorded, partitions per engine ${JSON.stringify(assignment)}`);
    } finally {
      await world.dispose();
    }
  });

  e2e.run();

  // ---------------------------------------------------------------------------------- faults

  const faults = suite('distributed: faults');

  faults('an engine SIGKILLed mid-stream: the other takes its partitions, it restarts and rejoins; nothing lost or doubled', async () => {
    const world = await openWorld('kill', shared);
    try {
      const edge = await world.start('edge', 'edge');
      // the group gives up on a silent member after 10 s (KAFKA_SESSION_TIMEOUT_MS) instead of 30 s
      const engineEnv = { KAFKA_SESSION_TIMEOUT_MS: String(TEST_SESSION_TIMEOUT_MS) };
      await world.start('engine-a', 'engine', engineEnv);
      const b = await world.start('engine-b', 'engine', engineEnv);
      await waitForGroup(world, 2, 60_000);
      const load = world.load(edge, { concurrency: 8, ratePerSecond: 250, unknownAssetEvery: 10 });
      while (load.acked.size < 2000) await delay(50);
      b.child.kill('SIGKILL');
      const killed = await b.exited;
      assert.is(killed.signal, 'SIGKILL');
      const ackedAtKill = load.acked.size;
      // engine-a alone holds all partitions once the broker gives up on b's session
      const alone = await waitForGroup(world, 1, 60_000);
      assert.equal(alone, [[0, 1, 2, 3]]);
      const ackedAlone = load.acked.size;
      await world.start('engine-b2', 'engine', engineEnv);
      const rejoined = await waitForGroup(world, 2, 60_000);
      const sentBeforeStop = load.nextK;
      await delay(3000);
      await load.stop();
      assert.ok(load.nextK > sentBeforeStop, 'uplinks were sent after the rejoin');
      expectAccepted(load);
      const { visible, physical } = await expectExactlyOnce(world, load, 90_000);
      console.log(`  kill: ${load.acked.size} uplinks (${ackedAtKill} acknowledged at the kill, ${ackedAlone} when engine-a held every partition), ${visible} data points visible, ` +
        `${physical} physical rows (${physical - visible} replayed), after the rejoin ${JSON.stringify(rejoined)}`);
    } finally {
      await world.dispose();
    }
  });

  faults('the ClickHouse server stopped for 20 s under load: engines pause with bounded memory, then catch up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-private-clickhouse-'));
    const chEnv = { CLICKHOUSE_HTTP_PORT: String(await freePort()), CLICKHOUSE_TCP_PORT: String(await freePort()) };
    const clickhouseUrl = `http://127.0.0.1:${chEnv.CLICKHOUSE_HTTP_PORT}`;
    let world: World | undefined;
    try {
      await script('clickhouse.sh', ['start', dir], chEnv);
      world = await openWorld('chdown', { brokers: env.KAFKA_BROKERS, clickhouseUrl });
      const w = world;
      const edge = await w.start('edge', 'edge');
      const engineEnv = { MAX_IN_FLIGHT: '500', BATCH_ROWS: '1000' };
      const engines = [await w.start('engine-a', 'engine', engineEnv), await w.start('engine-b', 'engine', engineEnv)];
      await waitForGroup(w, 2, 60_000);
      const load = w.load(edge, { concurrency: 8, ratePerSecond: 300, unknownAssetEvery: 10 });
      while (load.acked.size < 1500) await delay(50);
      await delay(1000);
      const rssBefore = engines.map((e) => e.rssMb() ?? 0);
      await script('clickhouse.sh', ['stop', dir], chEnv);
      const stoppedAt = Date.now();
      // Besides the HTTP load, a backlog many times what the engines may hold (in flight plus one
      // fetched batch per partition), appended straight to Kafka so a busy machine builds it too.
      const BULK = 200_000;
      const bulk = appendUplinks({ brokers: env.KAFKA_BROKERS.split(','), topic: w.uplinks, devices: w.devices, firstK: 10_000_000, count: BULK });
      const rssPeak = [...rssBefore];
      let committedEarly = -1;
      while (Date.now() - stoppedAt < 20_000) {
        engines.forEach((e, i) => { rssPeak[i] = Math.max(rssPeak[i], e.rssMb() ?? 0); });
        if (committedEarly < 0 && Date.now() - stoppedAt > 3000) committedEarly = await committedTotal(w);
        await delay(200);
      }
      const bulkAcked = await bulk;
      const committedLate = await committedTotal(w);
      const ackedDuringOutage = load.acked.size + bulkAcked.size;
      engines.forEach((e, i) => { rssPeak[i] = Math.max(rssPeak[i], e.rssMb() ?? 0); });
      await script('clickhouse.sh', ['start', dir], chEnv);
      const restartedAt = Date.now();
      for (const e of engines) {
        // Its last log lines say why it stopped, when it did.
        assert.is(e.child.exitCode, null, `${e.name} is still running${e.child.exitCode === null ? '' : `; its last output:\n${e.output().split('\n').slice(-15).join('\n')}`}`);
      }
      assert.is(bulkAcked.size, BULK, 'Kafka acknowledged the whole backlog');
      assert.is(committedLate, committedEarly, 'nothing committed while the store was down');
      const backlog = ackedDuringOutage - committedLate;
      // 200 000 uplinks are some 50 MB in Kafka and several times that as decoded objects: an engine
      // that buffered its share would grow by far more than the bound below
      assert.ok(backlog >= BULK, `backlog ${backlog}`);
      const growth = rssPeak.map((peak, i) => peak - rssBefore[i]);
      assert.ok(growth.every((g) => g < 150), `engine RSS grew ${growth.map((g) => g.toFixed(0)).join(' / ')} MB during the outage`);
      await delay(3000);
      await load.stop();
      expectAccepted(load); // the edge kept accepting: Kafka held the backlog
      const acked = new Set([...load.acked, ...bulkAcked]);
      const sent = new Set([...load.sent, ...bulkAcked]);
      const { visible, physical } = await expectExactlyOnce(w, { acked, sent, ackedWithUnknown: load.ackedWithUnknown, sentWithUnknown: load.sentWithUnknown }, 120_000);
      console.log(`  ClickHouse outage: ${acked.size} uplinks (${bulkAcked.size} straight to Kafka), backlog ${backlog} at the end of the outage, ` +
        `caught up ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart; RSS before ${rssBefore.map((r) => r.toFixed(0)).join('/')} MB, ` +
        `peak ${rssPeak.map((r) => r.toFixed(0)).join('/')} MB; ${visible} data points visible, ${physical} physical rows`);
    } finally {
      await world?.dispose();
      await script('clickhouse.sh', ['stop', dir], chEnv).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const libs = process.env.KAFKA_LIBS_DIR ?? join(root, '.cache/kafka/libs');
  const fetched = existsSync(libs) && readdirSync(libs).some((f) => f.startsWith('kafka_2.13-'));
  unless('distributed-e2e: Kafka restart', fetched ? undefined : `Kafka jars not found in ${libs} (scripts/kafka.sh fetch)`, () => {
    faults('the Kafka broker restarted under load: 503 + Retry-After while appends fail, every 202 stored once', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'fleetstream-private-kafka-'));
      const port = await freePort();
      const kafkaEnv = {
        KAFKA_PORT: String(port),
        KAFKA_CONTROLLER_PORT: String(await freePort()),
        KAFKA_DATA_DIR: dataDir,
        KAFKA_LIBS_DIR: libs,
        KAFKA_HEAP: '-Xmx256m -Xms128m',
      };
      let world: World | undefined;
      try {
        await script('kafka.sh', ['start'], kafkaEnv);
        world = await openWorld('kafkadown', { brokers: `127.0.0.1:${port}`, clickhouseUrl: env.CLICKHOUSE_URL });
        const w = world;
        // the edge gives up on an append after 2 s: a restart of several seconds is answered with 503s
        const edge = await w.start('edge', 'edge', { KAFKA_APPEND_TIMEOUT_MS: '2000' });
        await w.start('engine-a', 'engine');
        await w.start('engine-b', 'engine');
        await waitForGroup(w, 2, 60_000);
        const load = w.load(edge, { concurrency: 8, ratePerSecond: 250, unknownAssetEvery: 10 });
        while (load.acked.size < 1500) await delay(50);
        const restartAt = Date.now();
        await script('kafka.sh', ['restart'], kafkaEnv);
        console.log(`  Kafka restart took ${((Date.now() - restartAt) / 1000).toFixed(1)} s`);
        const ackedAtRestart = load.acked.size;
        while (load.acked.size < ackedAtRestart + 1500) await delay(50);
        await load.stop();
        assert.ok((load.statuses.get(503) ?? 0) > 0, `the edge answered 503 while Kafka was down: ${describeStatuses(load)}`);
        assert.is(load.missingRetryAfter, 0, 'every 503 carries Retry-After');
        const unexpected = [...load.statuses.keys()].filter((s) => s !== 202 && s !== 503);
        if (unexpected.length > 0) console.log(`--- edge, last lines:\n${edge.output().split('\n').slice(-30).join('\n')}`);
        assert.equal(unexpected, [], `answers ${describeStatuses(load)}`);
        await waitForGroup(w, 2, 60_000).catch((error: unknown) => {
          for (const p of w.processes) console.log(`--- ${p.name} (pid ${p.pid}, exit ${p.child.exitCode ?? 'none'}), last lines:\n${p.output().split('\n').slice(-25).join('\n')}`);
          throw error;
        });
        const { visible, physical } = await expectExactlyOnce(w, load, 120_000);
        const lostSequence = edge.output().split('\n').filter((line) => line.includes('[Producer]') && line.includes('out of order sequence')).length;
        console.log(`  Kafka restart: answers ${describeStatuses(load)}, no answer ${load.noAnswer}; ${visible} data points visible, ${physical} physical rows; ` +
          `produce requests refused for a lost producer sequence (each renews the producer): ${lostSequence}`);
      } finally {
        await world?.dispose();
        await script('kafka.sh', ['stop'], kafkaEnv).catch(() => undefined);
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });

  faults.run();
});
