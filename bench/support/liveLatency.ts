/**
 * Live latency at low load, for bench/live.bench.ts `low-load`: how long after its 202 a state
 * reaches an SSE subscriber and a WebSocket subscriber of its device, in both deployments, each a
 * real `fleetstream start` (bin/fleetstream.ts):
 *
 * - embedded: one process (`--role all`: local log, chDB, PGlite);
 * - distributed: an edge and an engine process (Kafka, ClickHouse server, PostgreSQL), the
 *   subscribers on the edge that took the PUTs.
 *
 * PUTs of one data point each, `rate` per second spread evenly over 4 devices, for `seconds`; each
 * value is timed from its 202 to its arrival on each stream (p50/p99/max), in this thread, which
 * does nothing else.
 */
import { request, Agent, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import pg from 'pg';
import WebSocket from 'ws';
import { clickhouse, createDevicesOverHttp, delay, startFleet, type FleetProcess, type TestDevice } from '../../test/support/fleetCluster.ts';

const DEVICES = 4;

interface Deployment {
  name: string;
  edge: FleetProcess;
  stop(): Promise<void>;
}

async function embedded(run: string): Promise<Deployment & { env: Record<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-live-latency-'));
  const env = { PARTITIONS: '8', MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', DATABASE_URL: '', DATA_DIR: join(dir, 'data'), RUN: run };
  const edge = await startFleet({ name: 'embedded', role: 'all', env });
  return {
    name: 'embedded', edge, env,
    async stop() {
      await edge.stop(20_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function distributed(run: string): Promise<Deployment & { env: Record<string, string> }> {
  const brokers = process.env.KAFKA_BROKERS!;
  const clickhouseUrl = process.env.CLICKHOUSE_URL!;
  const databaseUrl = (process.env.DATABASE_URL ?? process.env.DATABASE_URL_TEST)!;
  const id = `fs_bench_live_${run}`;
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-live-latency-'));
  const env = {
    PARTITIONS: '8', MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '',
    KAFKA_BROKERS: brokers, CLICKHOUSE_URL: clickhouseUrl, DATABASE_URL: databaseUrl, DATABASE_SCHEMA: id, CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: `${id}.`,
  };
  const processes: FleetProcess[] = [];
  const stop = async () => {
    await Promise.all(processes.map((p) => p.stop(20_000)));
    const admin = new kafkajs.Kafka({ brokers: brokers.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${id}.`));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    await admin.deleteGroups([`${id}.fleetstream-engine`, `${id}.fleetstream-commands`]).catch(() => undefined);
    await admin.disconnect();
    await clickhouse(clickhouseUrl, `DROP DATABASE IF EXISTS \`${id}\``);
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${id}" CASCADE`).finally(() => client.end());
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const engine = await startFleet({ name: 'engine', role: 'engine', env: { ...env, DATA_DIR: join(dir, 'engine') } });
    processes.push(engine);
    const edge = await startFleet({ name: 'edge', role: 'edge', env: { ...env, DATA_DIR: join(dir, 'edge') } });
    processes.push(edge);
    return { name: 'distributed', edge, env, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Arrival time (performance.now()) of each value, per stream. */
type Arrivals = Map<number, number>;

const VALUE = /"value":(\d+)/g;

function sse(port: number, device: TestDevice, arrivals: Arrivals): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: `/device/${device.id}/live?kinds=state`, headers: { authorization: `Bearer ${device.token}` } }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) return reject(new Error(`SSE ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        const at = performance.now();
        for (const m of text.matchAll(VALUE)) arrivals.set(Number(m[1]), at);
      });
      resolve(() => req.destroy());
    });
    req.on('error', () => undefined);
    req.end();
  });
}

async function ws(port: number, devices: readonly TestDevice[], token: string, arrivals: Arrivals): Promise<() => void> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/live`);
  await new Promise<void>((resolve, reject) => { socket.once('open', () => resolve()); socket.once('error', reject); });
  let subscribed = 0;
  const ready = new Promise<void>((resolve) => {
    socket.on('message', (data) => {
      const at = performance.now();
      const text = data.toString();
      if (text.includes('"subscribed"') && ++subscribed === devices.length) resolve();
      else if (text.includes('"ready"')) for (const d of devices) socket.send(JSON.stringify({ type: 'subscribe', device: d.id, kinds: ['state'] }));
      for (const m of text.matchAll(VALUE)) arrivals.set(Number(m[1]), at);
    });
  });
  socket.send(JSON.stringify({ type: 'auth', token }));
  await ready;
  return () => socket.close();
}

function put(agent: Agent, port: number, device: TestDevice, value: number): Promise<{ status: number; at: number }> {
  const body = `{"value":${value}}`;
  return new Promise((resolve) => {
    const req = request({
      agent, host: '127.0.0.1', port, method: 'PUT', path: `/device/${device.id}/asset/a0/state`,
      headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json', 'content-length': String(body.length) },
    }, (res) => {
      const at = performance.now();
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, at }));
    });
    req.on('error', () => resolve({ status: 0, at: performance.now() }));
    req.end(body);
  });
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function summary(acked: Map<number, number>, arrivals: Arrivals): string {
  const latencies: number[] = [];
  for (const [value, at] of acked) {
    const arrived = arrivals.get(value);
    if (arrived !== undefined) latencies.push(arrived - at);
  }
  latencies.sort((a, b) => a - b);
  if (latencies.length === 0) return 'no event arrived';
  return `p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms, max ${latencies[latencies.length - 1].toFixed(1)} ms ` +
    `(${latencies.length} of ${acked.size} states)`;
}

async function measure(d: Deployment & { env: Record<string, string> }, rate: number, seconds: number): Promise<void> {
  const port = d.edge.httpPort!;
  const { devices, userToken } = await createDevicesOverHttp(`http://127.0.0.1:${port}`, d.env, DEVICES);
  const sseArrivals: Arrivals = new Map();
  const wsArrivals: Arrivals = new Map();
  const closers = [...await Promise.all(devices.map((device) => sse(port, device, sseArrivals))), await ws(port, devices, userToken, wsArrivals)];
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  try {
    // Warm-up: tokens and devices cached, actors started, consumers joined and reading.
    for (let i = 0; i < 20; i++) await put(agent, port, devices[i % DEVICES], 1_000_000 + i);
    await delay(2000);
    const acked = new Map<number, number>();
    const pending: Promise<void>[] = [];
    const interval = 1000 / rate;
    const started = performance.now();
    const count = Math.round(rate * seconds);
    for (let value = 1; value <= count; value++) {
      const wait = started + value * interval - performance.now();
      if (wait > 0) await delay(wait);
      pending.push(put(agent, port, devices[value % DEVICES], value).then(({ status, at }) => { if (status === 202) acked.set(value, at); }));
    }
    await Promise.all(pending);
    await delay(2000);
    console.log(`${d.name.padEnd(12)} ${rate} PUT/s: 202 → SSE ${summary(acked, sseArrivals)}`);
    console.log(`${d.name.padEnd(12)} ${rate} PUT/s: 202 → WS  ${summary(acked, wsArrivals)}`);
  } finally {
    agent.destroy();
    for (const close of closers) close();
  }
}

/** `rate` PUTs per second for `seconds` in each deployment; `which`: embedded, distributed or both. */
export async function lowLoadLatency(rate: number, seconds: number, which: string): Promise<void> {
  const run = Date.now().toString(36);
  const kinds = which === 'both' ? ['embedded', 'distributed'] : [which];
  for (const kind of kinds) {
    if (kind === 'distributed' && (!process.env.KAFKA_BROKERS || !process.env.CLICKHOUSE_URL || !(process.env.DATABASE_URL ?? process.env.DATABASE_URL_TEST))) {
      console.log('distributed: skipped (set KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL)');
      continue;
    }
    const d = kind === 'embedded' ? await embedded(run) : await distributed(run);
    try {
      await measure(d, rate, seconds);
    } finally {
      await d.stop();
    }
  }
}
