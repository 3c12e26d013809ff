/**
 * Live fan-out on one embedded edge (the composed service: HTTP edge, local log, engine, chDB,
 * topic `live`, LiveHub): states/s delivered to 1 000 concurrent subscribers of a ground stream,
 * over SSE and over the WebSocket, and the latency from sending a PUT to each subscriber receiving
 * its event (p50/p99) at half the embedded ingest rate, and at half the fan-out rate the same run
 * sustained (when that is lower, the first figure is a backlog's). The ingest rate itself — PUTs accepted per
 * second by the same service with nobody subscribed — is measured first in the same run as the
 * baseline; every figure is also shown as a ratio to it. Not part of the test suite.
 *
 *   npx node bench/live.bench.ts [subscribers=1000] [seconds=8] [concurrency=32]
 *
 * The service runs in a worker thread; the load generator and the subscribers (node:http and `ws`
 * clients that count and time `"value":<n>` in what they receive) share the main thread.
 */
import { Agent, request, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import WebSocket from 'ws';
import { createService } from '../app/createService.ts';
import { silentLogger } from '../engine/kernel/logger.ts';
import { defaultConfig } from '../schemas/config.ts';

interface Ready {
  port: number;
  userToken: string;
  groundId: string;
  devices: { id: string; token: string }[];
}

async function serverThread(deviceCount: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-live-bench-'));
  const service = await createService({
    logger: silentLogger,
    config: { ...defaultConfig, dataDir: dir, http: { ...defaultConfig.http, host: '127.0.0.1', port: 0, rateLimitPerSecond: 0 }, mqtt: { host: '127.0.0.1', port: -1 } },
  });
  const user = await service.registry.createUser({ name: 'bench' });
  const ground = await service.registry.createGround({ name: 'bench', userId: user.entity.id });
  const devices: Ready['devices'] = [];
  for (let i = 0; i < deviceCount; i++) {
    const { device, token } = await service.registry.createDevice({
      groundId: ground.id, name: `bench-${i}`, assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }],
    });
    devices.push({ id: device.id, token });
  }
  parentPort!.postMessage({ port: service.httpPort!, userToken: user.token, groundId: ground.id, devices } satisfies Ready);
  parentPort!.once('message', async () => {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
    parentPort!.postMessage('closed');
  });
}

/** Send time of each value, by value. */
const sentAt = new Map<number, number>();
let seq = 0;

function put(agent: Agent, ready: Ready, port: number, retries = 1): Promise<number> {
  const value = ++seq;
  const device = ready.devices[value % ready.devices.length];
  const body = `{"value":${value}}`;
  return new Promise((resolve) => {
    sentAt.set(value, performance.now());
    const req = request({
      agent, host: '127.0.0.1', port, method: 'PUT', path: `/device/${device.id}/asset/temperature/state`,
      headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json', 'content-length': String(body.length) },
    }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); });
    // A keep-alive connection the server closed while idle fails on reuse: not a refusal, send again.
    req.on('error', () => { sentAt.delete(value); resolve(retries > 0 ? put(agent, ready, port, retries - 1) : 0); });
    req.end(body);
  });
}

/** As fast as `concurrency` requests in flight allow, for `seconds`; returns accepted PUTs per second. */
async function flood(agent: Agent, ready: Ready, concurrency: number, seconds: number): Promise<{ rate: number; accepted: number; refused: number }> {
  const end = performance.now() + seconds * 1000;
  let accepted = 0;
  let refused = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      if ((await put(agent, ready, ready.port)) === 202) accepted++;
      else refused++;
    }
  }));
  return { rate: accepted / ((performance.now() - started) / 1000), accepted, refused };
}

/** `rate` PUTs per second for `seconds`, paced every 10 ms. */
async function paced(agent: Agent, ready: Ready, rate: number, seconds: number): Promise<number> {
  const started = performance.now();
  let sent = 0;
  const pending: Promise<number>[] = [];
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (sent < due) { pending.push(put(agent, ready, ready.port)); sent++; }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(pending);
  return sent;
}

interface Subscriber {
  received: number;
  latencies: number[];
  close(): void;
}

const VALUE = /"value":(\d+)/g;

function record(sub: Subscriber, text: string): void {
  const now = performance.now();
  for (const match of text.matchAll(VALUE)) {
    sub.received++;
    const sent = sentAt.get(Number(match[1]));
    if (sent !== undefined && Number(match[1]) > timedAfter) sub.latencies.push(now - sent);
  }
}

/** Only values sent after this one are timed (the latency phase, not late events of the phase before). */
let timedAfter = Number.MAX_SAFE_INTEGER;

function sseSubscriber(ready: Ready, agent: Agent): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const sub: Subscriber = { received: 0, latencies: [], close: () => undefined };
    let carry = '';
    const req = request({ agent, host: '127.0.0.1', port: ready.port, path: `/ground/${ready.groundId}/live?kinds=state`, headers: { authorization: `Bearer ${ready.userToken}` } }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) { reject(new Error(`SSE ${res.statusCode}`)); return; }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        // An event may be split across chunks: keep the tail after the last complete event.
        const text = carry + chunk;
        const cut = text.lastIndexOf('\n\n');
        if (cut < 0) { carry = text; return; }
        carry = text.slice(cut + 2);
        record(sub, text.slice(0, cut));
      });
      res.on('error', () => undefined);
      sub.close = () => req.destroy();
      resolve(sub);
    });
    req.on('error', () => undefined);
    req.end();
  });
}

function wsSubscriber(ready: Ready): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${ready.port}/live`, { perMessageDeflate: false });
    const sub: Subscriber = { received: 0, latencies: [], close: () => ws.terminate() };
    ws.on('error', reject);
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'auth', token: ready.userToken }));
      ws.send(JSON.stringify({ type: 'subscribe', ground: ready.groundId, kinds: ['state'] }));
    });
    ws.on('message', (data) => {
      const text = data.toString();
      if (text.startsWith('{"type":"subscribed"')) resolve(sub);
      else if (text.startsWith('{"type":"state"')) record(sub, text);
      else if (text.startsWith('{"type":"error"') || text.startsWith('{"type":"overflow"')) reject(new Error(text));
    });
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function scenario(name: string, ready: Ready, agent: Agent, subscribers: Subscriber[], baseline: number, seconds: number, concurrency: number): Promise<void> {
  /** Waits until deliveries stop; returns when the last one was seen (within 250 ms). */
  const settle = async (): Promise<number> => {
    let last = -1;
    let lastChange = performance.now();
    let quiet = 0;
    // Quiet for 2 s: on a loaded machine deliveries pause for a while without being over.
    while (quiet < 8) {
      const total = subscribers.reduce((n, s) => n + s.received, 0);
      if (total === last) {
        quiet++;
      } else {
        if (last >= 0) lastChange = performance.now();
        quiet = 0;
      }
      last = total;
      await new Promise((r) => setTimeout(r, 250));
    }
    return lastChange;
  };
  // Throughput: PUTs as fast as the service takes them, events counted at every subscriber.
  const before = subscribers.reduce((n, s) => n + s.received, 0);
  const receivedBefore = subscribers.map((s) => s.received);
  const started = performance.now();
  const { rate: putRate, accepted, refused } = await flood(agent, ready, concurrency, seconds);
  const lastDelivery = await settle();
  const delivered = subscribers.reduce((n, s) => n + s.received, 0) - before;
  // From the first PUT to the last delivery (within 250 ms).
  const elapsed = (lastDelivery - started) / 1000;
  const statesPerSubscriber = delivered / subscribers.length / elapsed;
  const minReceived = Math.min(...subscribers.map((s, i) => s.received - receivedBefore[i]));
  console.log(`${name.padEnd(5)} fan-out: ${putRate.toFixed(0)} PUT/s accepted (${(putRate / baseline).toFixed(2)} × ingest, ${refused} refused); ` +
    `${statesPerSubscriber.toFixed(0)} states/s delivered per subscriber, ${(delivered / elapsed).toFixed(0)} events/s over ${subscribers.length} subscribers ` +
    `(the slowest subscriber got ${minReceived} of the ${accepted} states)`);
  // Latency at half the fan-out rate just measured (what the fan-out sustains), then at half the
  // embedded ingest rate (the figure asked for; when that is more than the fan-out sustains, a
  // backlog builds and the latency is the backlog's, so that phase is kept short).
  const latency = async (label: string, rate: number, phaseSeconds: number) => {
    for (const s of subscribers) s.latencies.length = 0;
    timedAfter = seq;
    const sent = await paced(agent, ready, rate, phaseSeconds);
    await settle();
    timedAfter = Number.MAX_SAFE_INTEGER;
    const all = subscribers.flatMap((s) => s.latencies).sort((a, b) => a - b);
    console.log(`${name.padEnd(5)} latency at ${rate.toFixed(0)} PUT/s (${label}, ${(rate / baseline).toFixed(2)} × ingest): ${sent} PUTs, ${all.length} events timed (${(all.length / sent / subscribers.length * 100).toFixed(1)} % of PUT × subscribers), ` +
      `PUT→event p50 ${percentile(all, 0.5).toFixed(1)} ms, p99 ${percentile(all, 0.99).toFixed(1)} ms, max ${all[all.length - 1].toFixed(1)} ms`);
  };
  await latency('0.5 × fan-out', statesPerSubscriber / 2, seconds);
  await latency('0.5 × ingest', baseline / 2, Math.min(seconds, 3));
}

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 1000);
  const seconds = Number(process.argv[3] ?? 8);
  const concurrency = Number(process.argv[4] ?? 32);
  const worker = new Worker(new URL(import.meta.url), { workerData: 64 });
  const ready = await new Promise<Ready>((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    await flood(agent, ready, concurrency, 2); // warm-up
    const { rate: baseline } = await flood(agent, ready, concurrency, seconds);
    console.log(`baseline: embedded ingest ${baseline.toFixed(0)} PUT/s accepted (1 state each, ${concurrency} in flight, nobody subscribed)`);

    const sseAgent = new Agent({ keepAlive: false, maxSockets: Infinity });
    const sse = await Promise.all(Array.from({ length: count }, () => sseSubscriber(ready, sseAgent)));
    await scenario('SSE', ready, agent, sse, baseline, seconds, concurrency);
    for (const s of sse) s.close();
    await new Promise((r) => setTimeout(r, 2000));

    const ws: Subscriber[] = [];
    for (let i = 0; i < count; i += 100) ws.push(...await Promise.all(Array.from({ length: Math.min(100, count - i) }, () => wsSubscriber(ready))));
    await scenario('WS', ready, agent, ws, baseline, seconds, concurrency);
    for (const s of ws) s.close();
  } finally {
    agent.destroy();
    worker.postMessage('stop');
    await new Promise((resolve) => worker.once('message', resolve));
    await worker.terminate();
  }
}

if (isMainThread) {
  await main();
} else {
  await serverThread(workerData as number);
}
