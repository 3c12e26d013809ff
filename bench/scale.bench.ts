/**
 * Does the edge tier scale? 1, 2 and 3 edges — first as `--role edge` processes, then as the edge
 * workers of one process (`--edge-workers N`) — each edge held to the same CPU share with a cgroup v1
 * CPU quota, against one engine and one Kafka broker (ClickHouse server, PostgreSQL), the load
 * generator (this process) outside the caps. For each count it reports the HTTP uplinks and MQTT
 * QoS 1 messages acknowledged per second, and the ratio to linear: rate(N) / (N × rate(1)) of the
 * same kind. Not part of the test suite. Needs root (cgroups) and the servers of .ci/run:
 *
 *   KAFKA_BROKERS=$(bash scripts/kafka.sh brokers) CLICKHOUSE_URL=$(bash scripts/clickhouse.sh url) \
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/scale.bench.ts
 *   BENCH_EDGE_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/prof' (the edges' node options)
 *   BENCH_EDGE_CPU=0.2 (cores per edge)  BENCH_SECONDS=8  BENCH_HTTP_CLIENTS=96  BENCH_MQTT_CLIENTS=48  BENCH_MODES=processes,workers
 *   (clients per edge: N edges get N times as many, so each is offered the same load; BENCH_SAME_TOTAL=1
 *   splits the same clients over them instead)
 *
 * The caps keep the edges' total (3 × 0.2 cores) well below what the 2-core machine leaves after
 * the broker, the engine and the load generator, so the edges, not the rest, are what is measured.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import type { MqttClient } from 'mqtt';
import { openRegistry } from '../app/openPorts.ts';
import { recordCosts } from './support/costs.ts';
import { cpuSeconds } from './support/procCpu.ts';
import { connectAll } from './support/mqttLoad.ts';
import { createDevices, delay, freePort, removeFleetData, startFleet, UplinkLoad, type FleetProcess, type TestDevice } from '../test/support/fleetCluster.ts';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const EDGE_CPU = num('BENCH_EDGE_CPU', 0.2);
const SECONDS = num('BENCH_SECONDS', 8);
const HTTP_CLIENTS = num('BENCH_HTTP_CLIENTS', 96);
const MQTT_CLIENTS = num('BENCH_MQTT_CLIENTS', 48);
/** Clients for `edges` edges: per edge, or the same total (BENCH_SAME_TOTAL=1). */
const clientsFor = (perEdge: number, edges: number) => (process.env.BENCH_SAME_TOTAL === '1' ? perEdge : perEdge * edges);
const MODES = (process.env.BENCH_MODES ?? 'processes,workers').split(',');
const COUNTS = (process.env.BENCH_COUNTS ?? '1,2,3').split(',').map(Number);
const CGROUP_ROOT = '/sys/fs/cgroup/cpu';

const brokers = process.env.KAFKA_BROKERS;
const clickhouseUrl = process.env.CLICKHOUSE_URL;
const databaseUrl = process.env.DATABASE_URL ?? process.env.DATABASE_URL_TEST;

/** A cgroup v1 CPU group capped at `cores`, holding the processes put in it. */
function cpuGroup(name: string, cores: number): { add(pid: number): void; remove(): void } {
  const dir = join(CGROUP_ROOT, name);
  mkdirSync(dir, { recursive: true });
  // A 10 ms period: a capped edge waits at most a few ms for its share, not most of a 100 ms
  // period, so its answers are slowed by the cap's size and not by its granularity.
  writeFileSync(join(dir, 'cpu.cfs_period_us'), '10000');
  writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(Math.round(cores * 10_000)));
  return {
    add: (pid) => writeFileSync(join(dir, 'cgroup.procs'), String(pid)),
    remove() {
      // Back to the root group, then the group goes.
      for (const pid of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
        try { writeFileSync(join(CGROUP_ROOT, 'cgroup.procs'), pid); } catch { /* gone */ }
      }
      if (existsSync(dir)) rmdirSync(dir);
    },
  };
}

/** The pids of an edge process's workers (`edge worker started` lines), or the process itself. */
function edgePids(edge: FleetProcess): number[] {
  const workers = edge.output().split('\n').filter((l) => l.includes('"msg":"edge worker started"')).map((l) => (JSON.parse(l) as { pid: number }).pid);
  return workers.length > 0 ? workers : [edge.pid];
}

interface Edges {
  http: string[];
  mqtt: number[];
  pids: number[];
  stop(): Promise<void>;
}

interface Rate {
  perSecond: number;
  /** Edge CPU µs per acknowledged message. */
  cpuMicros: number;
}

/** Counts what `acked()` reports over BENCH_SECONDS after a second of warm-up, with the edges' CPU. */
async function measure(pids: number[], acked: () => number): Promise<Rate> {
  await delay(1000);
  const from = acked();
  const cpu = cpuSeconds(...pids);
  const t0 = performance.now();
  await delay(SECONDS * 1000);
  const count = acked() - from;
  return { perSecond: count / ((performance.now() - t0) / 1000), cpuMicros: ((cpuSeconds(...pids) - cpu) * 1e6) / count };
}

async function httpRate(bases: string[], devices: TestDevice[], pids: number[], edges: number): Promise<Rate> {
  const loads = bases.map((baseUrl) => new UplinkLoad({ baseUrl, devices, concurrency: Math.ceil(clientsFor(HTTP_CLIENTS, edges) / bases.length) }));
  for (const load of loads) load.start();
  const rate = await measure(pids, () => loads.reduce((n, load) => n + load.acked.size, 0));
  await Promise.all(loads.map((l) => l.stop()));
  return rate;
}

async function mqttRate(ports: number[], devices: TestDevice[], pids: number[], edges: number): Promise<Rate> {
  if (MQTT_CLIENTS === 0) return { perSecond: Number.NaN, cpuMicros: Number.NaN };
  const clients: MqttClient[] = [];
  const perPort = Math.ceil(clientsFor(MQTT_CLIENTS, edges) / ports.length);
  for (let i = 0; i < ports.length; i++) {
    clients.push(...await connectAll(`mqtt://127.0.0.1:${ports[i]}`, perPort, (k) => devices[(i * perPort + k) % devices.length].token, 5));
  }
  let acked = 0;
  let running = true;
  const publishers = clients.map(async (client, i) => {
    const device = devices.find((d) => d.token === (client.options.username as string)) ?? devices[i % devices.length];
    const topic = `device/${device.id}/asset/a0/state`;
    while (running) {
      // A window of 8 QoS 1 messages in flight per client.
      await Promise.all(Array.from({ length: 8 }, () => client.publishAsync(topic, `{"value":${i}}`, { qos: 1 }).then(() => { acked++; }, () => undefined)));
    }
  });
  const rate = await measure(pids, () => acked);
  running = false;
  await Promise.race([Promise.all(publishers), delay(5000)]);
  for (const c of clients) c.end(true);
  return rate;
}

async function main(): Promise<void> {
  if (!brokers || !clickhouseUrl || !databaseUrl) throw new Error('set KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL (see the header)');
  if (!existsSync(CGROUP_ROOT)) throw new Error(`${CGROUP_ROOT} is missing: cgroup v1's cpu controller is needed`);
  const id = `fs_scale_${Date.now().toString(36)}`;
  const prefix = `${id}.`;
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-scale-'));
  const admin = new kafkajs.Kafka({ brokers: brokers.split(','), clientId: 'scale-bench', logLevel: kafkajs.logLevel.NOTHING }).admin();
  const processes: FleetProcess[] = [];
  const baseEnv = {
    KAFKA_BROKERS: brokers, CLICKHOUSE_URL: clickhouseUrl, DATABASE_URL: databaseUrl, DATABASE_SCHEMA: id, CLICKHOUSE_DATABASE: id,
    TOPIC_PREFIX: prefix, PARTITIONS: '8', HTTP_HOST: '127.0.0.1', MQTT_HOST: '127.0.0.1', LPWAN_APPLICATIONS_FILE: '', LOG_LEVEL: 'info',
  };
  let n = 0;
  const groups: ReturnType<typeof cpuGroup>[] = [];
  try {
    const registry = await openRegistry({ databaseUrl, databaseSchema: id, dataDir: dir });
    const devices = await createDevices(registry.registry, 500);
    await registry.close();
    processes.push(await startFleet({ name: 'engine', role: 'engine', env: { ...baseEnv, DATA_DIR: join(dir, `engine`), HTTP_PORT: '0', MQTT_PORT: '-1' } }));
    await admin.connect();
    const results: Record<string, { http: Rate[]; mqtt: Rate[] }> = {};
    for (const mode of MODES) {
      results[mode] = { http: [], mqtt: [] };
      for (const count of COUNTS) {
        const edges = await startEdges(mode, count, async (name, env, args) => {
          const nodeOptions: Record<string, string> = process.env.BENCH_EDGE_NODE_OPTIONS === undefined ? {} : { NODE_OPTIONS: process.env.BENCH_EDGE_NODE_OPTIONS };
          const p = await startFleet({ name, role: 'edge', args, env: { ...baseEnv, ...env, ...nodeOptions, DATA_DIR: join(dir, `${name}-${n++}`), LOG_LEVEL: 'info' } });
          processes.push(p);
          return p;
        });
        const capped = edges.pids.map((pid, i) => {
          const group = cpuGroup(`fleetstream-scale-${i}`, EDGE_CPU);
          groups.push(group);
          group.add(pid);
          return group;
        });
        const http = await httpRate(edges.http, devices, edges.pids, count);
        const mqtt = await mqttRate(edges.mqtt, devices, edges.pids, count);
        results[mode].http.push(http);
        results[mode].mqtt.push(mqtt);
        const linear = (rates: Rate[]) => (rates.at(-1)!.perSecond / (count * rates[0].perSecond)).toFixed(2);
        const fmt = (r: Rate) => `${Math.round(r.perSecond).toLocaleString('en-US').padStart(7)}/s, ${Math.round(r.cpuMicros).toString().padStart(4)} µs CPU each`;
        console.log(`${mode.padEnd(9)} ${count} edge${count > 1 ? 's' : ' '} × ${EDGE_CPU} core: HTTP uplinks ${fmt(http)} (${linear(results[mode].http)} × linear)   MQTT QoS 1 ${fmt(mqtt)} (${linear(results[mode].mqtt)} × linear)`);
        // The capacity model's cost of an edge: one whole core, where a smaller share's own effects
        // (fewer cache hits, throttled batches) do not inflate the CPU per message.
        if (mode === 'processes' && count === 1 && EDGE_CPU >= 1) recordCosts(`bench/scale.bench.ts, one edge at ${EDGE_CPU} core`, { edgeHttpCpuMicros: http.cpuMicros, edgeMqttCpuMicros: mqtt.cpuMicros });
        await edges.stop();
        for (const group of capped) group.remove();
        groups.length = 0;
      }
    }
  } finally {
    for (const group of groups) group.remove();
    await Promise.all(processes.map((p) => p.stop()));
    await removeFleetData({ admin, prefix, id, clickhouseUrl, databaseUrl, dir, label: 'scale bench' });
    rmSync(dir, { recursive: true, force: true });
  }
}

type Start = (name: string, env: Record<string, string>, args: string[]) => Promise<FleetProcess>;

/** `count` edge processes on ports of their own, or one process with `count` workers on one port. */
async function startEdges(mode: string, count: number, start: Start): Promise<Edges> {
  if (mode === 'workers') {
    const mqttPort = await freePort();
    const edge = await start(`edge-w${count}`, { HTTP_PORT: String(await freePort()), MQTT_PORT: String(mqttPort) }, ['--edge-workers', String(count)]);
    // The primary only hands connections over; the workers are the edges held to the share.
    return { http: [`http://127.0.0.1:${edge.httpPort}`], mqtt: [mqttPort], pids: edgePids(edge), stop: async () => { await edge.stop(); } };
  }
  const edges: FleetProcess[] = [];
  const mqtt: number[] = [];
  for (let i = 0; i < count; i++) {
    const mqttPort = await freePort();
    edges.push(await start(`edge-p${count}-${i}`, { HTTP_PORT: '0', MQTT_PORT: String(mqttPort) }, ['--edge-workers', '1']));
    mqtt.push(mqttPort);
  }
  return {
    http: edges.map((e) => `http://127.0.0.1:${e.httpPort}`), mqtt, pids: edges.map((e) => e.pid),
    stop: async () => { await Promise.all(edges.map((e) => e.stop())); },
  };
}

await main();
