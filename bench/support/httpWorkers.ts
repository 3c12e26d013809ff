/**
 * What sharing the HTTP port across edge workers costs per uplink, under the same load, rounds
 * alternating, in either deployment:
 * - embedded: two services (`fleetstream start`, local log, chDB, PGlite), one with
 *   `--edge-workers 1` (the edge in the service's one process) and one with `--edge-workers 2` (two
 *   worker processes, the primary keeping the log, the store and the registry and serving them over
 *   the cluster channel); the CPU of every process of the service (engine and chDB included);
 * - distributed (Kafka, PostgreSQL, ClickHouse server): one engine and two `--role edge` processes,
 *   one with 1 worker and one with 2 (each worker a whole edge); the CPU of the edge processes.
 * For each round: uplinks answered 202 per second, and CPU seconds per uplink — the figure
 * `bench/http.bench.ts workers` compares, since on a machine with fewer cores than processes their
 * throughput says more about the scheduler than about the service.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { openRegistry } from '../../app/openPorts.ts';
import { createDevices, createDevicesOverHttp, freePort, removeFleetData, startFleet, UplinkLoad, type FleetProcess, type TestDevice } from '../../test/support/fleetCluster.ts';
import { cpuSeconds } from './procCpu.ts';


interface Service {
  workers: number;
  process: FleetProcess;
  baseUrl: string;
  devices: TestDevice[];
  /** The primary and its workers (`edge worker started` lines). */
  pids(): number[];
}

export interface WorkersRound {
  workers: number;
  perSecond: number;
  cpuMicros: number;
  /** Of cpuMicros: the primary's (with 1 worker, the whole service's). */
  primaryMicros: number;
}

async function startService(workers: number, dir: string, deviceCount: number): Promise<Service> {
  const env = {
    KAFKA_BROKERS: '', CLICKHOUSE_URL: '', DATABASE_URL: '', DATA_DIR: join(dir, `w${workers}`),
    HTTP_HOST: '127.0.0.1', HTTP_PORT: String(await freePort()), MQTT_PORT: '-1', LPWAN_APPLICATIONS_FILE: '',
  };
  const p = await startFleet({ name: `service-w${workers}`, role: 'all', env, args: ['--edge-workers', String(workers)] });
  const baseUrl = `http://127.0.0.1:${p.httpPort}`;
  const { devices } = await createDevicesOverHttp(baseUrl, env, deviceCount);
  const pids = () => [p.pid, ...p.output().split('\n').filter((l) => l.includes('"msg":"edge worker started"')).map((l) => (JSON.parse(l) as { pid: number }).pid)];
  if (pids().length !== (workers > 1 ? workers + 1 : 1)) throw new Error(`service-w${workers}: ${pids().length - 1} workers started`);
  return { workers, process: p, baseUrl, devices, pids };
}

async function round(s: Service, total: number, concurrency: number, firstK: number): Promise<WorkersRound> {
  const pids = s.pids();
  const cpu0 = cpuSeconds(...pids);
  const primary0 = cpuSeconds(s.process.pid);
  const t0 = performance.now();
  const load = new UplinkLoad({ baseUrl: s.baseUrl, devices: s.devices, concurrency, total, firstK }).start();
  await load.finished();
  const seconds = (performance.now() - t0) / 1000;
  if (load.acked.size !== total) throw new Error(`service-w${s.workers}: ${load.acked.size} of ${total} accepted (${JSON.stringify(Object.fromEntries(load.statuses))})`);
  // what the uplinks left to do (the engine storing them) is part of their cost: wait for it to settle
  await new Promise((resolve) => setTimeout(resolve, 1500));
  return {
    workers: s.workers, perSecond: total / seconds,
    cpuMicros: ((cpuSeconds(...pids) - cpu0) * 1e6) / total,
    primaryMicros: ((cpuSeconds(s.process.pid) - primary0) * 1e6) / total,
  };
}

/** The servers of the distributed deployment, from the environment (.ci/run's variables). */
export interface Servers { brokers: string; clickhouseUrl: string; databaseUrl: string }

/** One engine, then edges of 1 and 2 workers on one deployment's topics, schema and database; devices made in the registry. */
async function startEdges(servers: Servers, dir: string, deviceCount: number, id: string): Promise<{ services: Service[]; engine: FleetProcess }> {
  const env = {
    KAFKA_BROKERS: servers.brokers, CLICKHOUSE_URL: servers.clickhouseUrl, DATABASE_URL: servers.databaseUrl, DATABASE_SCHEMA: id, CLICKHOUSE_DATABASE: id,
    TOPIC_PREFIX: `${id}.`, PARTITIONS: '8', HTTP_HOST: '127.0.0.1', MQTT_PORT: '-1', LPWAN_APPLICATIONS_FILE: '',
  };
  const registry = await openRegistry({ databaseUrl: servers.databaseUrl, databaseSchema: id, dataDir: dir });
  const devices = await createDevices(registry.registry, deviceCount).finally(() => registry.close());
  const engine = await startFleet({ name: 'engine', role: 'engine', env: { ...env, DATA_DIR: join(dir, 'engine'), HTTP_PORT: '0' } });
  const services: Service[] = [];
  for (const workers of [1, 2]) {
    const p = await startFleet({ name: `edge-w${workers}`, role: 'edge', env: { ...env, DATA_DIR: join(dir, `edge-w${workers}`), HTTP_PORT: String(await freePort()) }, args: ['--edge-workers', String(workers)] });
    const pids = () => [p.pid, ...p.output().split('\n').filter((l) => l.includes('"msg":"edge worker started"')).map((l) => (JSON.parse(l) as { pid: number }).pid)];
    services.push({ workers, process: p, baseUrl: `http://127.0.0.1:${p.httpPort}`, devices, pids });
  }
  return { services, engine };
}

/**
 * `rounds` measured rounds per service, alternating which goes first, after one unmeasured round
 * each; on the distributed deployment when `servers` are given, else embedded.
 */
export async function httpWorkersRounds(total: number, concurrency: number, deviceCount: number, rounds: number, servers?: Servers): Promise<WorkersRound[]> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-http-workers-'));
  const services: Service[] = [];
  const id = `fs_workers_${Date.now().toString(36)}`;
  let engine: FleetProcess | undefined;
  try {
    if (servers === undefined) {
      for (const workers of [1, 2]) services.push(await startService(workers, dir, deviceCount));
    } else {
      const started = await startEdges(servers, dir, deviceCount, id);
      services.push(...started.services);
      engine = started.engine;
    }
    let k = 0;
    // `concurrency` per worker: each worker under the same load (BENCH_SAME_TOTAL=1: the total the same)
    const inFlight = (s: Service) => (process.env.BENCH_SAME_TOTAL === '1' ? concurrency : concurrency * s.workers);
    for (const s of services) await round(s, total, inFlight(s), (k += total));
    const out: WorkersRound[] = [];
    for (let i = 0; i < rounds; i++) {
      for (const s of i % 2 === 0 ? services : [...services].reverse()) out.push(await round(s, total, inFlight(s), (k += total)));
    }
    return out;
  } finally {
    await Promise.all(services.map((s) => s.process.stop()));
    await engine?.stop();
    if (servers !== undefined) {
      const admin = new kafkajs.Kafka({ brokers: servers.brokers.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
      await admin.connect();
      await removeFleetData({ admin, prefix: `${id}.`, id, clickhouseUrl: servers.clickhouseUrl, databaseUrl: servers.databaseUrl, dir, label: 'http workers bench' });
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
