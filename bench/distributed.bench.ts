/**
 * Distributed mode through real servers on this machine, against the embedded pipeline measured in
 * the same run. Each process is a real `fleetstream start` (bin/fleetstream.ts). Not part of the
 * test suite.
 *
 *   KAFKA_BROKERS=$(bash scripts/kafka.sh brokers) CLICKHOUSE_URL=$(bash scripts/clickhouse.sh url) \
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx node bench/distributed.bench.ts
 *   BENCH_UPLINKS=20000 BENCH_BACKLOG=1000000 BENCH_DEVICES=200 BENCH_CONCURRENCY=32 BENCH_PARTITIONS=8 …
 *   (BENCH_BACKLOG=0: phase 1 alone)
 *
 * Uplinks are JSON device states of 4 data points (test/support/fleetCluster.ts). Phases:
 * 1. HTTP end to end, BENCH_UPLINKS uplinks from BENCH_CONCURRENCY keep-alive clients, timed from the
 *    first request to the moment every device's last state is readable over HTTP:
 *    embedded (`--role all`: local log, chDB, PGlite), then edge + 1 engine and edge + 2 engines
 *    (Kafka, ClickHouse server, PostgreSQL).
 * 2. Engine drain: BENCH_BACKLOG uplinks appended to Kafka while no engine runs, then 1 (or 2) engine
 *    processes started and timed from the moment the group is stable with all of them holding
 *    partitions until ClickHouse has every data point (Kafka → engines → ClickHouse, the edge out of
 *    the way); only the data points stored within that time are counted.
 * Each phase reports data points/s, the CPU seconds each process used (with the Kafka broker and
 * ClickHouse server when they were started by the scripts, and this client), and peak RSS. The
 * machine has 2 cores shared by everything here (Kafka, ClickHouse, PostgreSQL, the processes, the
 * client), so a second engine process can only use what the others leave.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { recordCosts } from './support/costs.ts';
import { cpuSeconds } from './support/procCpu.ts';
import pg from 'pg';
import {
  appendUplinks, clickhouse, createDevicesOverHttp, delay, POINTS_PER_UPLINK, rssMbOf, startFleet, UplinkLoad, visibleRows,
  type FleetProcess, type TestDevice,
} from '../test/support/fleetCluster.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const UPLINKS = env('BENCH_UPLINKS', 20_000);
const BACKLOG = env('BENCH_BACKLOG', 1_000_000);
const DEVICES = env('BENCH_DEVICES', 200);
const CONCURRENCY = env('BENCH_CONCURRENCY', 32);
const PARTITIONS = env('BENCH_PARTITIONS', 8);

const brokers = process.env.KAFKA_BROKERS;
const clickhouseUrl = process.env.CLICKHOUSE_URL;
const databaseUrl = process.env.DATABASE_URL ?? process.env.DATABASE_URL_TEST;
const root = new URL('..', import.meta.url).pathname;
const RUN = Date.now().toString(36);
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

interface Setup {
  name: string;
  /** Environment of every process of this setup. */
  env: Record<string, string>;
  processes: FleetProcess[];
  dir: string;
  cleanup(): Promise<void>;
}

function setup(name: string, distributed: boolean): Setup {
  const id = `fs_bench_${name}_${RUN}`;
  const dir = mkdtempSync(join(tmpdir(), `fleetstream-bench-${name}-`));
  const common = { PARTITIONS: String(PARTITIONS), MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '' };
  const env: Record<string, string> = distributed
    ? { ...common, KAFKA_BROKERS: brokers!, CLICKHOUSE_URL: clickhouseUrl!, DATABASE_URL: databaseUrl!, DATABASE_SCHEMA: id, CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: `${id}.` }
    : { ...common, KAFKA_BROKERS: '', CLICKHOUSE_URL: '', DATABASE_URL: '', DATA_DIR: join(dir, 'data') };
  const processes: FleetProcess[] = [];
  return {
    name, env, processes, dir,
    async cleanup() {
      await Promise.all(processes.map((p) => p.stop(20_000)));
      if (distributed) {
        const admin = new kafkajs.Kafka({ brokers: brokers!.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
        await admin.connect();
        const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${id}.`));
        if (topics.length > 0) await admin.deleteTopics({ topics });
        await admin.deleteGroups([`${id}.fleetstream-engine`, `${id}.fleetstream-commands`]).catch(() => undefined);
        await admin.disconnect();
        await clickhouse(clickhouseUrl!, `DROP DATABASE IF EXISTS \`${id}\``);
        const client = new pg.Client({ connectionString: databaseUrl });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${id}" CASCADE`).finally(() => client.end());
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function start(s: Setup, name: string, role: 'all' | 'edge' | 'engine'): Promise<FleetProcess> {
  const p = await startFleet({ name, role, env: { ...s.env, DATA_DIR: s.env.DATA_DIR ?? join(s.dir, name) } });
  s.processes.push(p);
  return p;
}

/** A user and ground through the admin CLI, then the devices over HTTP, as an operator would. */
function createDevices(s: Setup, edge: FleetProcess): Promise<{ devices: TestDevice[]; userToken: string }> {
  return createDevicesOverHttp(`http://127.0.0.1:${edge.httpPort}`, s.env, DEVICES);
}

/** Waits until every device's last state (asset a3 of its highest uplink) is readable over HTTP. */
async function lastStatesReadable(edge: FleetProcess, devices: readonly TestDevice[], firstK: number, total: number, token: string): Promise<void> {
  const pending = new Map<string, number>();
  for (let k = firstK; k < firstK + total; k++) pending.set(devices[k % devices.length].id, k);
  const deadline = Date.now() + 600_000;
  while (pending.size > 0) {
    if (Date.now() > deadline) throw new Error(`${pending.size} devices still lack their last state`);
    await Promise.all([...pending].map(async ([id, k]) => {
      const res = await fetch(`http://127.0.0.1:${edge.httpPort}/device/${id}/asset/a3/state`, { headers: { authorization: `Bearer ${token}` } });
      const body = await res.json() as { state?: { value?: unknown } };
      if (res.status === 200 && body.state?.value === k * POINTS_PER_UPLINK + 3) pending.delete(id);
    }));
    if (pending.size > 0) await delay(100);
  }
}

/** Waits until the consumer group is stable with `members` members that all hold partitions. */
async function groupStable(group: string, members: number): Promise<void> {
  const admin = new kafkajs.Kafka({ brokers: brokers!.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const { groups: [g] } = await admin.describeGroups([group]);
      const holding = (g?.members ?? []).filter((m) => {
        const assignment = kafkajs.AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment ?? {};
        return Object.values(assignment).some((partitions) => partitions.length > 0);
      });
      if (g?.state === 'Stable' && g.members.length === members && holding.length === members) return;
      if (Date.now() > deadline) throw new Error(`group ${group} not stable with ${members} members`);
      await delay(20);
    }
  } finally {
    await admin.disconnect();
  }
}

interface PhaseResult {
  label: string;
  points: number;
  seconds: number;
  cpu: string;
  /** CPU seconds by process name over the phase. */
  cpuOf?: Record<string, number>;
  rss: string;
  /** HTTP phases: uplinks answered 202 per second, timed from the first request to the last 202. */
  acceptedPerSecond?: number;
  extra?: string;
}

/**
 * The Kafka broker and ClickHouse server started by scripts/kafka.sh and scripts/clickhouse.sh with
 * their default directories, when they run: their CPU seconds are reported too (distributed phases).
 */
function serverPids(): Array<{ name: string; pid: number }> {
  const out: Array<{ name: string; pid: number }> = [];
  const read = (file: string) => { try { return Number(readFileSync(file, 'utf8').trim()); } catch { return NaN; } };
  const kafka = read(join(root, '.cache/kafka/data/kafka.pid'));
  if (Number.isInteger(kafka) && cpuSeconds(kafka) > 0) out.push({ name: 'kafka', pid: kafka });
  const ch = read(join(root, '.cache/clickhouse/server.pid'));
  if (Number.isInteger(ch) && cpuSeconds(ch) > 0) out.push({ name: 'clickhouse', pid: ch });
  return out;
}

/** Samples peak RSS and reports CPU seconds of the processes (and servers, and this client) over a phase. */
function usage(processes: readonly FleetProcess[], servers: Array<{ name: string; pid: number }>) {
  const all = [...processes.map((p) => ({ name: p.name, pid: p.pid })), ...servers];
  const cpu0 = all.map((p) => cpuSeconds(p.pid));
  const client0 = process.cpuUsage();
  const peak = processes.map((p) => rssMbOf(p.pid) ?? 0);
  const timer = setInterval(() => processes.forEach((p, i) => { peak[i] = Math.max(peak[i], rssMbOf(p.pid) ?? 0); }), 100);
  return () => {
    clearInterval(timer);
    const client = process.cpuUsage(client0);
    const used = all.map((p, i) => cpuSeconds(p.pid) - cpu0[i]);
    return {
      cpuOf: Object.fromEntries(all.map((p, i) => [p.name, used[i]])),
      cpu: [...all.map((p, i) => `${p.name} ${used[i].toFixed(1)}`), `bench client ${((client.user + client.system) / 1e6).toFixed(1)}`].join(', '),
      rss: processes.map((p, i) => `${p.name} ${peak[i].toFixed(0)}`).join(', '),
    };
  };
}

async function httpPhase(label: string, distributed: boolean, engines: number): Promise<PhaseResult> {
  const s = setup(distributed ? `http${engines}` : 'embedded', distributed);
  try {
    const edge = await start(s, distributed ? 'edge' : 'all', distributed ? 'edge' : 'all');
    for (let i = 0; i < engines; i++) await start(s, `engine-${i + 1}`, 'engine');
    const { devices, userToken } = await createDevices(s, edge);
    // warm-up: every device's actor compiled, connections open
    const warm = new UplinkLoad({ baseUrl: `http://127.0.0.1:${edge.httpPort}`, devices, concurrency: CONCURRENCY, total: DEVICES * 2, firstK: 0 }).start();
    await warm.finished();
    await lastStatesReadable(edge, devices, 0, DEVICES * 2, userToken);
    const stop = usage(s.processes, distributed ? serverPids() : []);
    const started = performance.now();
    const load = new UplinkLoad({ baseUrl: `http://127.0.0.1:${edge.httpPort}`, devices, concurrency: CONCURRENCY, total: UPLINKS, firstK: 1_000_000 }).start();
    await load.finished();
    const accepted = (performance.now() - started) / 1000;
    if (load.acked.size !== UPLINKS) throw new Error(`${label}: ${load.acked.size} of ${UPLINKS} accepted (${JSON.stringify(Object.fromEntries(load.statuses))})`);
    await lastStatesReadable(edge, devices, 1_000_000, UPLINKS, userToken);
    const seconds = (performance.now() - started) / 1000;
    const { cpu, cpuOf, rss } = stop();
    let extra = `accepted at ${fmt(UPLINKS / accepted)} uplinks/s`;
    if (distributed) {
      const visible = (await visibleRows(clickhouseUrl!, s.env.CLICKHOUSE_DATABASE)) - DEVICES * 2 * POINTS_PER_UPLINK;
      if (visible !== UPLINKS * POINTS_PER_UPLINK) throw new Error(`${label}: ${visible} data points visible, expected ${UPLINKS * POINTS_PER_UPLINK}`);
      extra += ', ClickHouse count checked';
    }
    return { label, points: UPLINKS * POINTS_PER_UPLINK, seconds, cpu, cpuOf, rss, acceptedPerSecond: UPLINKS / accepted, extra };
  } finally {
    await s.cleanup();
  }
}

async function drainPhase(label: string, engines: number): Promise<PhaseResult> {
  const s = setup(`drain${engines}`, true);
  try {
    const edge = await start(s, 'edge', 'edge'); // creates the topics and serves device creation
    const { devices } = await createDevices(s, edge);
    await edge.stop();
    s.processes.splice(0);
    const appendStarted = performance.now();
    await appendUplinks({ brokers: brokers!.split(','), topic: `${s.env.TOPIC_PREFIX}uplinks`, devices, firstK: 0, count: BACKLOG });
    const appendSeconds = (performance.now() - appendStarted) / 1000;
    const want = BACKLOG * POINTS_PER_UPLINK;
    const procs = await Promise.all(Array.from({ length: engines }, (_, i) => start(s, `engine-${i + 1}`, 'engine')));
    // timed from the moment every engine holds partitions: what was stored before is not counted
    await groupStable(`${s.env.TOPIC_PREFIX}fleetstream-engine`, engines);
    // physical rows while polling (cheap); FINAL once at the end (nothing is replayed here)
    const physical = async () => Number((await clickhouse(clickhouseUrl!, `SELECT count() FROM \`${s.env.CLICKHOUSE_DATABASE}\`.states`).catch(() => '0')).trim());
    const before = await physical();
    const stop = usage(procs, serverPids());
    const started = performance.now();
    const deadline = Date.now() + 900_000;
    while ((await physical()) < want) {
      if (Date.now() > deadline) throw new Error(`${label}: not drained in time`);
      await delay(50);
    }
    const seconds = (performance.now() - started) / 1000;
    const { cpu, cpuOf, rss } = stop();
    const visible = await visibleRows(clickhouseUrl!, s.env.CLICKHOUSE_DATABASE);
    if (visible !== want) throw new Error(`${label}: ${visible} data points visible, expected ${want}`);
    return { label, points: want - before, seconds, cpu, cpuOf, rss, extra: `timed once the group was stable; ${fmt(before)} stored before; backlog appended at ${fmt(BACKLOG / appendSeconds)} uplinks/s` };
  } finally {
    await s.cleanup();
  }
}

if (!brokers || !clickhouseUrl || !databaseUrl) {
  console.log('distributed bench: set KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL (or DATABASE_URL_TEST); see the header of bench/distributed.bench.ts');
  process.exit(0);
}

console.log(`distributed bench: ${fmt(UPLINKS)} uplinks over HTTP (${CONCURRENCY} clients, ${DEVICES} devices), backlog ${fmt(BACKLOG)} uplinks, ` +
  `${PARTITIONS} partitions, ${POINTS_PER_UPLINK} data points per uplink; ClickHouse ${(await clickhouse(clickhouseUrl, 'SELECT version()')).trim()}`);
const results: PhaseResult[] = [];
const report = (r: PhaseResult) => {
  results.push(r);
  console.log(`${r.label.padEnd(34)} ${fmt(r.points / r.seconds).padStart(8)} data points/s  (${fmt(r.points)} in ${r.seconds.toFixed(1)} s; ${r.extra ?? ''})\n` +
    `${''.padEnd(34)} CPU s: ${r.cpu}; peak RSS MB: ${r.rss}`);
};
report(await httpPhase('HTTP e2e, embedded (--role all)', false, 0));
report(await httpPhase('HTTP e2e, edge + 1 engine', true, 1));
report(await httpPhase('HTTP e2e, edge + 2 engines', true, 2));
if (BACKLOG > 0) {
  report(await drainPhase('Kafka backlog → 1 engine → CH', 1));
  report(await drainPhase('Kafka backlog → 2 engines → CH', 2));
}
const rate = (label: string) => { const r = results.find((x) => x.label.startsWith(label)); return r === undefined ? NaN : r.points / r.seconds; };
/** A drain phase that timed something: a small backlog can be stored before the group is stable. */
const drained = (label: string) => (results.find((x) => x.label.startsWith(label))?.points ?? 0) > 0;
const acceptedRate = (label: string) => results.find((x) => x.label.startsWith(label))!.acceptedPerSecond!;
// For bench/capacity.ts: the engine's and the store's cost from the drain (nothing else runs),
// the broker's per uplink appended and read from HTTP through one engine.
const drain = results.find((r) => r.label.startsWith('Kafka backlog → 1'));
const e2e = results.find((r) => r.label.startsWith('HTTP e2e, edge + 1'))!;
const perUplink = (seconds: number | undefined, r: PhaseResult | undefined) => (seconds === undefined || r === undefined ? undefined : (seconds * 1e6) / (r.points / POINTS_PER_UPLINK));
const clickhouseSeconds = drain?.cpuOf?.clickhouse;
recordCosts(`bench/distributed.bench.ts ${UPLINKS} ${BACKLOG}`, {
  engineCpuMicros: perUplink(drain?.cpuOf?.['engine-1'], drain),
  brokerCpuMicros: perUplink(e2e.cpuOf?.kafka, e2e),
  storeRowsPerCoreSecond: clickhouseSeconds === undefined || drain === undefined ? undefined : drain.points / clickhouseSeconds,
});
console.log(`ratios: HTTP e2e distributed/embedded: 1 engine ${(rate('HTTP e2e, edge + 1') / rate('HTTP e2e, embedded')).toFixed(2)}, ` +
  `2 engines ${(rate('HTTP e2e, edge + 2') / rate('HTTP e2e, embedded')).toFixed(2)}; ` +
  `uplinks accepted distributed/embedded: 1 engine ${(acceptedRate('HTTP e2e, edge + 1') / acceptedRate('HTTP e2e, embedded')).toFixed(2)}, ` +
  `2 engines ${(acceptedRate('HTTP e2e, edge + 2') / acceptedRate('HTTP e2e, embedded')).toFixed(2)}; ` +
  `drain 2 engines/1 engine ${BACKLOG === 0 ? 'not run' : drained('Kafka backlog → 2') ? (rate('Kafka backlog → 2') / rate('Kafka backlog → 1')).toFixed(2) : 'not measured (the backlog was stored before both engines held partitions: raise BENCH_BACKLOG)'}; ` +
  `broker CPU per uplink (HTTP through one engine) ${e2e.cpuOf?.kafka === undefined ? 'not measured' : `${fmt(perUplink(e2e.cpuOf.kafka, e2e)!)} µs`}`);
