/**
 * Live fan-out on one embedded edge (the composed service: HTTP edge, local log, engine, chDB,
 * topic `live`, LiveHub), over SSE and over the WebSocket, in two shapes:
 *
 * - broadcast: 1 000 subscribers of ONE ground whose 64 devices get the PUTs (every event goes to
 *   every subscriber);
 * - per ground: 1 000 subscribers each following a different ground with a device of its own (the
 *   console's case: every event goes to one subscriber).
 *
 * For each: states/s delivered in all and per subscriber while PUTs come as fast as the service
 * takes them, then the latency from sending a PUT to each subscriber receiving its event (p50/p99)
 * at half the embedded ingest rate (and, for broadcast, at half the fan-out rate the same run
 * sustained: when that is lower, the first figure is a backlog's). The ingest rate itself — PUTs
 * accepted per second with nobody subscribed — is measured first in the same run as the baseline,
 * once for each shape's devices (64 of one ground; one on each of 1 000 grounds); every rate is
 * also shown as a ratio to its shape's. Not part of the test suite.
 *
 *   npx node bench/live.bench.ts [subscribers=1000] [seconds=8] [concurrency=32] [clientThreads=1] [only]
 *
 * `only`: a comma-separated subset of sse-broadcast, sse-ground, ws-broadcast, ws-ground.
 *
 *   npx node bench/live.bench.ts low-load [rate=20] [seconds=10] [embedded|distributed|both]
 *
 * measures instead the latency from a PUT's 202 to its state on an SSE and a WebSocket stream at
 * low load, in the embedded and the distributed deployment (bench/support/liveLatency.ts).
 *
 * Three kinds of thread: the service (a worker), the load generator (the main thread) and the
 * subscribers (bench/support/liveClients.ts, `clientThreads` workers). Each phase reports the
 * event-loop utilisation of each (a thread near 100 % is the limit) and the service thread's CPU
 * time per delivered event, so the edge's cost is told apart from the client's.
 */
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { createService } from '../app/createService.ts';
import { silentLogger } from '../engine/kernel/logger.ts';
import { defaultConfig } from '../schemas/config.ts';
import { lowLoadLatency } from './support/liveLatency.ts';
import { ClientThread, now, SENT_SLOTS, threadStats, type ThreadStats } from './support/liveClients.ts';

interface Device {
  id: string;
  token: string;
}

interface Ready {
  port: number;
  userToken: string;
  /** The broadcast ground and its devices. */
  groundId: string;
  devices: Device[];
  /** One ground per subscriber of the per-ground shape, each with one device. */
  grounds: { id: string; device: Device }[];
}

const ASSETS = [{ name: 'temperature', is: 'sensor' as const, profile: { type: 'number' as const } }];

async function serverThread({ deviceCount, groundCount }: { deviceCount: number; groundCount: number }): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-live-bench-'));
  const service = await createService({
    logger: silentLogger,
    config: { ...defaultConfig, dataDir: dir, http: { ...defaultConfig.http, host: '127.0.0.1', port: 0, rateLimitPerSecond: 0 }, mqtt: { host: '127.0.0.1', port: -1 }, metrics: { host: '127.0.0.1', port: 0 } },
  });
  const user = await service.registry.createUser({ name: 'bench' });
  const ground = await service.registry.createGround({ name: 'bench', userId: user.entity.id });
  const devices: Device[] = [];
  for (let i = 0; i < deviceCount; i++) {
    const { device, token } = await service.registry.createDevice({ groundId: ground.id, name: `bench-${i}`, assets: ASSETS });
    devices.push({ id: device.id, token });
  }
  const grounds: Ready['grounds'] = [];
  for (let i = 0; i < groundCount; i++) {
    const own = await service.registry.createGround({ name: `bench-${i}`, userId: user.entity.id });
    const { device, token } = await service.registry.createDevice({ groundId: own.id, name: `own-${i}`, assets: ASSETS });
    grounds.push({ id: own.id, device: { id: device.id, token } });
  }
  parentPort!.postMessage({ port: service.httpPort!, userToken: user.token, groundId: ground.id, devices, grounds } satisfies Ready);
  parentPort!.on('message', async (message: string) => {
    if (message === 'stats') return parentPort!.postMessage(threadStats());
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
    parentPort!.postMessage('closed');
  });
}

/** Send time of each value (liveClients.ts), shared with the subscriber threads. */
const sentBuffer = new SharedArrayBuffer(8 * (SENT_SLOTS + 1));
const sentAt = new Float64Array(sentBuffer);
sentAt[0] = Number.MAX_SAFE_INTEGER;
let seq = 0;

function put(agent: Agent, port: number, devices: Device[], retries = 1): Promise<number> {
  const value = ++seq;
  const device = devices[value % devices.length];
  const body = `{"value":${value}}`;
  return new Promise((resolve) => {
    sentAt[1 + (value % SENT_SLOTS)] = now();
    const req = request({
      agent, host: '127.0.0.1', port, method: 'PUT', path: `/device/${device.id}/asset/temperature/state`,
      headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json', 'content-length': String(body.length) },
    }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); });
    // A keep-alive connection the server closed while idle fails on reuse: not a refusal, send again.
    req.on('error', () => { resolve(retries > 0 ? put(agent, port, devices, retries - 1) : 0); });
    req.end(body);
  });
}

/** As fast as `concurrency` requests in flight allow, for `seconds`; returns accepted PUTs per second. */
async function flood(agent: Agent, port: number, devices: Device[], concurrency: number, seconds: number): Promise<{ rate: number; accepted: number; refused: number }> {
  const end = performance.now() + seconds * 1000;
  let accepted = 0;
  let refused = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      if ((await put(agent, port, devices)) === 202) accepted++;
      else refused++;
    }
  }));
  return { rate: accepted / ((performance.now() - started) / 1000), accepted, refused };
}

/** `rate` PUTs per second for `seconds`, paced every 10 ms. */
async function paced(agent: Agent, port: number, devices: Device[], rate: number, seconds: number): Promise<number> {
  const started = performance.now();
  let sent = 0;
  const pending: Promise<number>[] = [];
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (sent < due) { pending.push(put(agent, port, devices)); sent++; }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(pending);
  return sent;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** Every thread's counters at one moment. */
interface Snapshot {
  at: number;
  server: ThreadStats;
  load: ThreadStats;
  clients: ThreadStats[];
}

class Bench {
  readonly server: Worker;
  readonly clients: ClientThread[];
  readonly agent: Agent;
  readonly port: number;

  constructor(server: Worker, clients: ClientThread[], agent: Agent, port: number) {
    this.server = server;
    this.clients = clients;
    this.agent = agent;
    this.port = port;
  }

  async snapshot(): Promise<Snapshot> {
    const server = new Promise<ThreadStats>((resolve) => { this.server.once('message', resolve); this.server.postMessage('stats'); });
    const clients = Promise.all(this.clients.map((c) => c.ask<ThreadStats>({ op: 'stats' })));
    return { at: now(), load: threadStats(), server: await server, clients: await clients };
  }

  /** Event-loop utilisation of each thread between two snapshots, and the service thread's CPU µs. */
  usage(a: Snapshot, b: Snapshot): { server: number; load: number; clients: number; serverCpuUs: number; text: string } {
    const elu = (x: ThreadStats, y: ThreadStats) => performance.eventLoopUtilization(y.elu, x.elu).utilization;
    const server = elu(a.server, b.server);
    const load = elu(a.load, b.load);
    const clients = Math.max(0, ...a.clients.map((c, i) => elu(c, b.clients[i])));
    // CPU time over wall time: the event loop counts as busy while its thread waits for a core.
    const wallUs = (b.at - a.at) * 1000;
    const cpu = (x: ThreadStats, y: ThreadStats) => `${((y.cpu - x.cpu) / wallUs * 100).toFixed(0)}`;
    const clientsCpu = a.clients.map((c, i) => cpu(c, b.clients[i])).join('+');
    const text = `event loop busy: service ${(server * 100).toFixed(0)} %, load generator ${(load * 100).toFixed(0)} %, subscribers ${(clients * 100).toFixed(0)} %; ` +
      `CPU ${cpu(a.server, b.server)} %, ${cpu(a.load, b.load)} %, ${clientsCpu} %`;
    return { server, load, clients, serverCpuUs: b.server.cpu - a.server.cpu, text };
  }

  async counts(): Promise<{ total: number; min: number }> {
    const all = await Promise.all(this.clients.map((c) => c.ask<{ total: number; min: number }>({ op: 'count' })));
    return { total: all.reduce((n, c) => n + c.total, 0), min: Math.min(...all.map((c) => c.min)) };
  }

  /** Waits until deliveries stop; returns the snapshot taken when the last one was seen (within 250 ms). */
  async settle(): Promise<{ last: Snapshot; total: number; min: number }> {
    let seen = await this.counts();
    let last = await this.snapshot();
    let quiet = 0;
    // Quiet for 2 s: on a loaded machine deliveries pause for a while without being over.
    while (quiet < 8) {
      await new Promise((r) => setTimeout(r, 250));
      const counts = await this.counts();
      if (counts.total === seen.total) {
        quiet++;
      } else {
        quiet = 0;
        seen = counts;
        last = await this.snapshot();
      }
    }
    return { last, ...seen };
  }

  async latencies(): Promise<Float64Array> {
    const parts = await Promise.all(this.clients.map((c) => c.ask<Float64Array>({ op: 'latencies' })));
    const all = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) { all.set(part, at); at += part.length; }
    return all.sort();
  }
}

async function scenario(bench: Bench, name: string, devices: Device[], subscribers: number, baseline: { rate: number; cpuPerPut: number }, seconds: number, concurrency: number, broadcast: boolean): Promise<void> {
  const label = name.padEnd(14);
  // What the engine still had queued from the phase before (accepted is not yet stored) goes first.
  await bench.settle();
  // Throughput: PUTs as fast as the service takes them, events counted at every subscriber.
  await Promise.all(bench.clients.map((c) => c.ask({ op: 'mark' })));
  const before = (await bench.counts()).total;
  const start = await bench.snapshot();
  const { rate: putRate, accepted, refused } = await flood(bench.agent, bench.port, devices, concurrency, seconds);
  const { last, total, min } = await bench.settle();
  const delivered = total - before;
  // From the first PUT to the last delivery (within 250 ms).
  const elapsed = (last.at - start.at) / 1000;
  const statesPerSubscriber = delivered / subscribers / elapsed;
  const use = bench.usage(start, last);
  const fanOutCpu = (use.serverCpuUs - accepted * baseline.cpuPerPut) / delivered;
  console.log(`${label} fan-out: ${putRate.toFixed(0)} PUT/s accepted (${(putRate / baseline.rate).toFixed(2)} × ingest, ${refused} refused); ` +
    `${statesPerSubscriber.toFixed(1)} states/s per subscriber, ${(delivered / elapsed).toFixed(0)} events/s in all over ${subscribers} subscribers ` +
    `(the slowest subscriber got ${min} of the ${broadcast ? accepted : (accepted / subscribers).toFixed(1)} states${broadcast ? '' : ' on average'})`);
  console.log(`${label}   ${use.text}; service thread CPU ${(use.serverCpuUs / delivered).toFixed(2)} µs per delivered event ` +
    `(${fanOutCpu.toFixed(2)} µs beyond ingest's ${baseline.cpuPerPut.toFixed(0)} µs per PUT)`);
  const latency = async (what: string, rate: number, phaseSeconds: number) => {
    await Promise.all(bench.clients.map((c) => c.ask({ op: 'mark' })));
    sentAt[0] = seq;
    const from = await bench.snapshot();
    const sent = await paced(bench.agent, bench.port, devices, rate, phaseSeconds);
    const { last: to } = await bench.settle();
    sentAt[0] = Number.MAX_SAFE_INTEGER;
    const all = await bench.latencies();
    const expected = broadcast ? sent * subscribers : sent;
    console.log(`${label} latency at ${rate.toFixed(0)} PUT/s (${what}, ${(rate / baseline.rate).toFixed(2)} × ingest): ${sent} PUTs, ${all.length} events timed (${(all.length / expected * 100).toFixed(1)} % of expected), ` +
      `PUT→event p50 ${percentile(all, 0.5).toFixed(1)} ms, p99 ${percentile(all, 0.99).toFixed(1)} ms, max ${all[all.length - 1].toFixed(1)} ms; ${bench.usage(from, to).text}`);
  };
  if (broadcast) await latency('0.5 × fan-out', statesPerSubscriber / 2, seconds);
  await latency('0.5 × ingest', baseline.rate / 2, Math.min(seconds, 3));
}

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 1000);
  const seconds = Number(process.argv[3] ?? 8);
  const concurrency = Number(process.argv[4] ?? 32);
  const threads = Number(process.argv[5] ?? 1);
  const worker = new Worker(new URL(import.meta.url), { workerData: { deviceCount: 64, groundCount: count } });
  const ready = await new Promise<Ready>((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const clients = Array.from({ length: threads }, () => new ClientThread(sentBuffer));
  const bench = new Bench(worker, clients, agent, ready.port);
  const share = (grounds: string[]) => clients.map((_, t) => grounds.filter((_, i) => i % threads === t));
  try {
    const perGround = ready.grounds.map((g) => g.id);
    const ownDevices = ready.grounds.map((g) => g.device);
    const ingest = async (what: string, devices: Device[]) => {
      // Warm-up: every device at least twice, so its token and device lookups are cached as in the phases after.
      const warmUpEnd = seq + 2 * devices.length;
      do await flood(agent, ready.port, devices, concurrency, 2); while (seq < warmUpEnd);
      await new Promise((r) => setTimeout(r, 2000)); // what the engine still has queued
      const from = await bench.snapshot();
      const { rate, accepted } = await flood(agent, ready.port, devices, concurrency, seconds);
      const use = bench.usage(from, await bench.snapshot());
      const baseline = { rate, cpuPerPut: use.serverCpuUs / accepted };
      console.log(`baseline ${what}: embedded ingest ${rate.toFixed(0)} PUT/s accepted (1 state each, ${concurrency} in flight, nobody subscribed); ` +
        `${use.text}; service thread CPU ${baseline.cpuPerPut.toFixed(0)} µs per PUT`);
      return baseline;
    };
    const baselines = { broadcast: await ingest('(64 devices of one ground)', ready.devices), ground: await ingest(`(${ownDevices.length} devices, one per ground)`, ownDevices) };
    const only = process.argv[6]?.split(',');

    for (const kind of ['sse', 'ws'] as const) {
      const name = kind === 'sse' ? 'SSE' : 'WS';
      const shapes = [
        { key: 'broadcast', shape: 'broadcast', grounds: perGround.map(() => ready.groundId), devices: ready.devices, broadcast: true, baseline: baselines.broadcast },
        { key: 'ground', shape: 'per ground', grounds: perGround, devices: ownDevices, broadcast: false, baseline: baselines.ground },
      ];
      for (const { key, shape, grounds, devices, broadcast, baseline } of shapes) {
        if (only !== undefined && !only.includes(`${kind}-${key}`)) continue;
        const shares = share(grounds);
        await Promise.all(clients.map((c, t) => c.ask({ op: 'open', kind, port: ready.port, token: ready.userToken, grounds: shares[t] })));
        await scenario(bench, `${name} ${shape}`, devices, grounds.length, baseline, seconds, concurrency, broadcast);
        await Promise.all(clients.map((c) => c.ask({ op: 'close' })));
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  } finally {
    agent.destroy();
    await Promise.all(clients.map((c) => c.terminate()));
    worker.postMessage('stop');
    await new Promise((resolve) => worker.once('message', resolve));
    await worker.terminate();
  }
}

if (isMainThread && process.argv[2] === 'low-load') {
  await lowLoadLatency(Number(process.argv[3] ?? 20), Number(process.argv[4] ?? 10), process.argv[5] ?? 'both');
} else if (isMainThread) {
  await main();
} else if (!(workerData instanceof SharedArrayBuffer)) {
  await serverThread(workerData as { deviceCount: number; groundCount: number });
}
