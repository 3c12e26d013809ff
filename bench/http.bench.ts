/**
 * HTTP uplink throughput on loopback: `PUT /device/{id}/state` through the real edge (bearer auth,
 * rate-limit bookkeeping off, body read and admitted by the engine's one admission step, durable
 * append to the local log through the service's intake) against a bare Hono route answering 202 in the same run, on
 * the same server stack. Prints req/s of both and their ratio. Not part of the test suite.
 *
 *   npx node bench/http.bench.ts [requests=20000] [concurrency=64] [devices=64] [sides=both|edge|bare|workers]
 *
 * `sides` edge or bare drives one server only (to trace one of them, e.g. with --trace-gc-nvp).
 * `workers` compares instead the CPU per uplink of two whole embedded services, with 1 and with 2
 * edge workers, under the same load (bench/support/httpWorkers.ts); with BENCH_DEPLOYMENT=distributed
 * (and KAFKA_BROKERS, CLICKHOUSE_URL, DATABASE_URL or DATABASE_URL_TEST) two `--role edge`
 * processes of 1 and 2 workers on Kafka instead, against one engine.
 *
 * Each side is first warmed with one unmeasured round of `requests`, then the two alternate for five
 * measured rounds, in the order bare-edge, edge-bare, bare-edge, … (what drifts during a run weighs
 * on both sides alike). The ratio is of their best rounds; beside it, the median of the five ratios
 * of rounds run one after the other (each pair saw the same state of the machine) and those ratios.
 * On a busy 2-vCPU VM one round of either side ran anywhere between 0.5 and 1.1 times the other's
 * throughput: read one run's ratio with its pairs.
 *
 * Requests cycle over `devices` devices (each with its own token), so uplinks spread over the
 * `uplinks` partitions as a fleet's do; devices=1 puts every append on one partition's fsync chain.
 *
 * The servers run in a worker thread, the load generator (node:http, keep-alive agent, a bounded
 * number of requests in flight) in the main thread, so the two do not share an event loop. Each
 * measured round also gives the CPU time per request of the servers' thread, the load generator's
 * and the process's other threads (V8's garbage collection and compilers, libuv's pool): figures
 * far less noisy than req/s on a busy machine.
 *
 * The process runs with the service's start flags (package.json's start script; useStartFlags), the
 * garbage collector's among them, set before the servers' thread starts: both servers run with them.
 */
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Hono } from 'hono';
import { createEdgeApp } from '../adapters/http/createEdgeApp.ts';
import { serveEdge } from '../adapters/http/serveEdge.ts';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { createPgliteRegistry } from '../adapters/pglite/createPgliteRegistry.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import { buildIntake } from '../app/buildIntake.ts';
import { registryCacheTtlMs } from '../app/buildEdges.ts';
import { InProcessRegistryChanges } from '../adapters/registry-changes/InProcessRegistryChanges.ts';
import { useStartFlags } from '../test/support/startFlags.ts';
import { httpWorkersRounds } from './support/httpWorkers.ts';

/** Measured rounds per side. */
const ROUNDS = 5;

interface Ready {
  edgePort: number;
  barePort: number;
  devices: { id: string; token: string }[];
}

async function serverThread(deviceCount: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-http-bench-'));
  const registry = await createPgliteRegistry();
  const user = await registry.createUser({ name: 'bench' });
  const ground = await registry.createGround({ name: 'bench', userId: user.entity.id });
  const devices: Ready['devices'] = [];
  for (let i = 0; i < deviceCount; i++) {
    const { device, token } = await registry.createDevice({
      groundId: ground.id,
      name: `bench-device-${i}`,
      assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }, { name: 'door', is: 'sensor', profile: { type: 'boolean' } }],
    });
    devices.push({ id: device.id, token });
  }
  const log = createLocalLog({ dir: join(dir, 'log') });
  await log.ensureTopics([{ name: 'uplinks', partitions: 8 }, { name: 'dead-letters', partitions: 1 }]);
  const intake = buildIntake({ log, clock: systemClock, rejections: { append: async () => undefined } });
  const none = async () => [];
  const edge = createEdgeApp({
    registry,
    admission: intake.admission,
    store: { latest: none, history: none, aggregate: none },
    rejections: { recent: none },
    clock: systemClock,
    // Registry answers cached as the embedded service caches them (app/buildEdges.ts), kept current by registry changes.
    changes: new InProcessRegistryChanges(),
    cacheTtlMs: registryCacheTtlMs({}),
  });
  const bare = new Hono();
  bare.put('/device/:id/state', (c) => c.body(null, 202));
  const [e, b] = await Promise.all([serveEdge(edge, { port: 0 }), serveEdge(bare, { port: 0 })]);
  parentPort!.postMessage({ edgePort: e.port, barePort: b.port, devices } satisfies Ready);
  parentPort!.on('message', async (m: string) => {
    if (m === 'cpu') {
      const cpu = process.threadCpuUsage();
      parentPort!.postMessage({ cpu: cpu.user + cpu.system });
      return;
    }
    await Promise.all([e.close(), b.close()]);
    await intake.close();
    await log.close();
    await registry.close();
    rmSync(dir, { recursive: true, force: true });
    parentPort!.postMessage('closed');
  });
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  statuses: Record<number, number>;
  /** CPU µs per request: the servers' thread, the load generator's thread, the process's other threads. */
  cpu?: { server: number; client: number; others: number };
}

function put(agent: Agent, port: number, path: string, headers: Record<string, string>, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: '127.0.0.1', port, path, method: 'PUT', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function load(port: number, ready: Ready, total: number, concurrency: number): Promise<Result> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const body = Buffer.from('{"temperature":{"value":21.5},"door":{"value":true}}');
  const targets = ready.devices.map((d) => ({
    path: `/device/${d.id}/state`,
    headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json', 'content-length': String(body.length) },
  }));
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let issued = 0;
  const worker = async () => {
    while (issued < total) {
      const target = targets[issued++ % targets.length];
      const t = performance.now();
      const status = await put(agent, port, target.path, target.headers, body);
      latencies.push(performance.now() - t);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    rps: total / seconds,
    p50: latencies[Math.floor(latencies.length * 0.5)],
    p99: latencies[Math.floor(latencies.length * 0.99)],
    statuses,
  };
}

function show(name: string, r: Result): void {
  const cpu = r.cpu === undefined ? '' : `   CPU µs per request: server ${r.cpu.server.toFixed(1)}, load generator ${r.cpu.client.toFixed(1)}, other threads ${r.cpu.others.toFixed(1)}`;
  console.log(`${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   ${JSON.stringify(r.statuses)}${cpu}`);
}

/** CPU µs used so far: the whole process, this (the load generator's) thread, the servers' thread. */
async function cpuNow(worker: Worker): Promise<{ process: number; client: number; server: number }> {
  const server = await new Promise<number>((resolve) => {
    worker.once('message', (m: { cpu: number }) => resolve(m.cpu));
    worker.postMessage('cpu');
  });
  const all = process.cpuUsage();
  const client = process.threadCpuUsage();
  return { process: all.user + all.system, client: client.user + client.system, server };
}

/** load(), with the CPU each thread spent per request. */
async function measured(worker: Worker, port: number, ready: Ready, total: number, concurrency: number): Promise<Result> {
  const before = await cpuNow(worker);
  const result = await load(port, ready, total, concurrency);
  const after = await cpuNow(worker);
  const server = after.server - before.server;
  const client = after.client - before.client;
  result.cpu = { server: server / total, client: client / total, others: (after.process - before.process - server - client) / total };
  return result;
}

async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 20_000);
  const concurrency = Number(process.argv[3] ?? 64);
  const devices = Number(process.argv[4] ?? 64);
  const sides = process.argv[5] ?? 'both';
  if (!['both', 'edge', 'bare', 'workers'].includes(sides)) throw new Error(`sides: both, edge, bare or workers, not ${sides}`);
  if (sides === 'workers') return workersPhase(total, concurrency, devices);
  useStartFlags();
  const worker = new Worker(new URL(import.meta.url), { workerData: devices });
  const ready = await new Promise<Ready>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const withBare = sides !== 'edge';
  const withEdge = sides !== 'bare';
  // A whole unmeasured round each: after 5000 requests the first measured round of either side was
  // still the slowest of three in most runs (code still being optimized, its garbage collected).
  if (withBare) await load(ready.barePort, ready, total, concurrency);
  if (withEdge) await load(ready.edgePort, ready, total, concurrency);
  const bare: Result[] = [];
  const edge: Result[] = [];
  const runBare = async () => {
    if (withBare) bare.push(await measured(worker, ready.barePort, ready, total, concurrency));
  };
  const runEdge = async () => {
    if (withEdge) edge.push(await measured(worker, ready.edgePort, ready, total, concurrency));
  };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which side goes first: a side that always ran second would always run after the other's garbage.
    if (round % 2 === 0) {
      await runBare();
      await runEdge();
    } else {
      await runEdge();
      await runBare();
    }
  }
  console.log(`PUT /device/{id}/state, ${total} requests × ${ROUNDS} rounds, ${concurrency} in flight over ${devices} devices, keep-alive, loopback`);
  bare.forEach((r, i) => show(`bare Hono route → 202 (round ${i + 1})`, r));
  edge.forEach((r, i) => show(`edge: auth+check+durable append (round ${i + 1})`, r));
  const best = (rs: Result[]) => Math.max(...rs.map((r) => r.rps));
  if (withBare && withEdge) {
    const pairs = edge.map((r, i) => r.rps / bare[i].rps);
    const sorted = [...pairs].sort((a, b) => a - b);
    console.log(`ratio edge / bare (best rounds): ${(best(edge) / best(bare)).toFixed(2)}`);
    console.log(`ratio edge / bare (median of the rounds run in pairs): ${sorted[Math.floor(sorted.length / 2)].toFixed(2)}   pairs ${pairs.map((x) => x.toFixed(2)).join(' ')}`);
  }
  worker.postMessage('stop');
  await new Promise((resolve) => worker.once('message', resolve));
  await worker.terminate();
}

async function workersPhase(total: number, concurrency: number, devices: number): Promise<void> {
  const distributed = process.env.BENCH_DEPLOYMENT === 'distributed';
  const databaseUrl = process.env.DATABASE_URL ?? process.env.DATABASE_URL_TEST;
  if (distributed && (!process.env.KAFKA_BROKERS || !process.env.CLICKHOUSE_URL || !databaseUrl)) throw new Error('BENCH_DEPLOYMENT=distributed needs KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL');
  const servers = distributed ? { brokers: process.env.KAFKA_BROKERS!, clickhouseUrl: process.env.CLICKHOUSE_URL!, databaseUrl: databaseUrl! } : undefined;
  const rounds = await httpWorkersRounds(total, concurrency, devices, ROUNDS, servers);
  console.log(distributed
    ? `PUT /device/{id}/state to a --role edge on Kafka (the edge processes' CPU; one engine apart), ${total} requests × ${ROUNDS} rounds, ${concurrency} in flight per worker${process.env.BENCH_SAME_TOTAL === '1' ? ' in all' : ''} over ${devices} devices`
    : `PUT /device/{id}/state to a whole embedded service (every process's CPU: edge, engine, chDB), ${total} requests × ${ROUNDS} rounds, ${concurrency} in flight per worker${process.env.BENCH_SAME_TOTAL === '1' ? ' in all' : ''} over ${devices} devices`);
  for (const r of rounds) {
    const split = r.workers > 1 ? ` (primary ${r.primaryMicros.toFixed(0)}, workers ${(r.cpuMicros - r.primaryMicros).toFixed(0)})` : '';
    console.log(`  ${r.workers} edge worker${r.workers > 1 ? 's' : ' '}: ${Math.round(r.perSecond).toLocaleString('en-US').padStart(7)} uplinks/s, ${r.cpuMicros.toFixed(0).padStart(4)} µs CPU per uplink${split}`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const of = (n: number) => median(rounds.filter((r) => r.workers === n).map((r) => r.cpuMicros));
  const pairs = rounds.filter((r) => r.workers === 2).map((r, i) => r.cpuMicros / rounds.filter((x) => x.workers === 1)[i].cpuMicros);
  console.log(`CPU per uplink, 2 workers / 1 (medians): ${(of(2) / of(1)).toFixed(2)}   round by round: ${pairs.map((x) => x.toFixed(2)).join(' ')}`);
}

if (isMainThread) await main();
else await serverThread(workerData as number);
