/**
 * Batches through one HTTP edge of the embedded service (app/createService.ts: local log, chDB,
 * PGlite in a temp dir): devices PUT arrays of 100 timestamped device states (readings buffered
 * while offline) to `PUT /device/{id}/state`. Reports data points per second accepted at the edge
 * (202 = admitted and durable in the log) and stored (the engine's count once every state is in
 * chDB), beside the same service taking one state per request in the same run. Not a test.
 *
 *   npx node bench/batch.bench.ts [requests=3000] [statesPerBatch=100] [concurrency=32] [devices=64] [watch=none|ground]
 *
 * `watch=ground`: a client follows the ground's states live (`GET /ground/{id}/live?kinds=state`,
 * as an open console does) during the runs, reading every event; with none, the embedded service
 * builds no live events at all (docs/live.md).
 *
 * The service runs in a worker thread, the load generator (node:http, keep-alive) in the main one,
 * with the service's start flags (package.json's start script).
 */
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { createService } from '../app/createService.ts';
import { silentLogger } from '../engine/kernel/logger.ts';
import { defaultConfig } from '../schemas/config.ts';
import { useStartFlags } from '../test/support/startFlags.ts';

interface Ready { port: number; devices: { id: string; token: string }[]; groundId: string; userToken: string }
type ToWorker = { type: 'stored' } | { type: 'stop' };

async function serviceThread(deviceCount: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-batch-bench-'));
  const service = await createService({
    config: {
      ...defaultConfig,
      dataDir: dir,
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20 },
      mqtt: { ...defaultConfig.mqtt, port: -1 },
      metrics: { host: '127.0.0.1', port: 0 },
      engine: { ...defaultConfig.engine, partitions: 4, batchRows: 40_000, batchDelayMs: 50, maxInFlight: 30_000 },
    },
    logger: silentLogger,
  });
  const user = await service.registry.createUser({ name: 'bench' });
  const ground = await service.registry.createGround({ name: 'bench', userId: user.entity.id });
  const devices: Ready['devices'] = [];
  for (let i = 0; i < deviceCount; i++) {
    const { device, token } = await service.registry.createDevice({
      groundId: ground.id, name: `bench-${i}`,
      assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number', minimum: -40, maximum: 85 } }, { name: 'humidity', is: 'sensor', profile: { type: 'integer', minimum: 0, maximum: 100 } }],
    });
    devices.push({ id: device.id, token });
  }
  parentPort!.postMessage({ port: service.httpPort!, devices, groundId: ground.id, userToken: user.token } satisfies Ready);
  parentPort!.on('message', async (m: ToWorker) => {
    if (m.type === 'stored') {
      parentPort!.postMessage({ stored: service.pipeline!.stats.stored });
      return;
    }
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
    parentPort!.postMessage('stopped');
  });
}

function put(agent: Agent, port: number, path: string, token: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: '127.0.0.1', port, path, method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * `states` device states of 2 data points each, one a minute, starting `minute` minutes after
 * 1980-01-01: every reading lies in the past, inside the service's `at` window (no more than a day
 * ahead), whichever day the bench runs on.
 */
function batchBody(states: number, minute: number): Buffer {
  const items = [];
  for (let i = 0; i < states; i++) {
    const at = new Date(Date.UTC(1980, 0, 1) + (minute + i) * 60_000).toISOString();
    items.push({ temperature: { value: 20 + ((minute + i) % 50) / 10, at }, humidity: { value: 40 + ((minute + i) % 20), at } });
  }
  return Buffer.from(JSON.stringify(states === 1 ? items[0] : items));
}

/** Follows the ground's live states until the returned function is called; counts the events read. */
function watchGround(ready: Ready): { events: () => number; overflowed: () => boolean; stop: () => void } {
  let events = 0;
  let overflowed = false;
  const req = request({ host: '127.0.0.1', port: ready.port, path: `/ground/${ready.groundId}/live?kinds=state`, headers: { authorization: `Bearer ${ready.userToken}` } }, (res) => {
    if (res.statusCode !== 200) throw new Error(`live stream answered ${res.statusCode}`);
    res.setEncoding('utf8');
    let partial = '';
    res.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (line === 'event: state') events++;
        else if (line === 'event: overflow') overflowed = true;
      }
    });
  });
  req.on('error', () => undefined);
  req.end();
  return { events: () => events, overflowed: () => overflowed, stop: () => req.destroy() };
}

async function ask(worker: Worker, m: ToWorker): Promise<any> {
  worker.postMessage(m);
  return new Promise((resolve) => worker.once('message', resolve));
}

async function run(worker: Worker, ready: Ready, requests: number, statesPerRequest: number, concurrency: number, minuteBase: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const bodies = Array.from({ length: 16 }, (_, k) => batchBody(statesPerRequest, minuteBase + k * statesPerRequest));
  const storedBefore = (await ask(worker, { type: 'stored' })).stored as number;
  const statuses: Record<number, number> = {};
  let issued = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (issued < requests) {
      const n = issued++;
      const device = ready.devices[n % ready.devices.length];
      // Each request its own minutes, so no two states of a device share a key.
      const body = statesPerRequest === 1 ? batchBody(1, minuteBase + n) : bodies[n % bodies.length];
      const status = await put(agent, ready.port, `/device/${device.id}/state`, device.token, body);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  }));
  const acceptedSeconds = (performance.now() - started) / 1000;
  const points = (statuses[202] ?? 0) * statesPerRequest * 2;
  let stored = 0;
  while ((stored = (await ask(worker, { type: 'stored' })).stored - storedBefore) < points) await new Promise((r) => setTimeout(r, 20));
  const storedSeconds = (performance.now() - started) / 1000;
  agent.destroy();
  return { accepted: points / acceptedSeconds, stored: points / storedSeconds, statuses, points };
}

async function main(): Promise<void> {
  const requests = Number(process.argv[2] ?? 3000);
  const perBatch = Number(process.argv[3] ?? 100);
  const concurrency = Number(process.argv[4] ?? 32);
  const devices = Number(process.argv[5] ?? 64);
  const watch = process.argv[6] ?? 'none';
  if (!['none', 'ground'].includes(watch)) throw new Error(`watch: none or ground, not ${watch}`);
  // The service's start flags (the garbage collector's among them) for its thread, as `npm start` runs it.
  useStartFlags();
  const worker = new Worker(new URL(import.meta.url), { workerData: devices });
  const ready = await new Promise<Ready>((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const watcher = watch === 'ground' ? watchGround(ready) : undefined;
  await run(worker, ready, 200, perBatch, concurrency, 0);
  const single = await run(worker, ready, requests * 4, 1, concurrency, 1_000_000);
  const batch = await run(worker, ready, requests, perBatch, concurrency, 2_000_000);
  watcher?.stop();
  const watched = watcher === undefined ? 'nobody watching live' : `a client following the ground live (${fmt(watcher.events())} state events read${watcher.overflowed() ? ', then dropped for not keeping up' : ''})`;
  console.log(`PUT /device/{id}/state over ${devices} devices, ${concurrency} in flight, 2 data points per device state, embedded service, ${watched}`);
  console.log(`one state per request:   accepted ${fmt(single.accepted)} dp/s   stored ${fmt(single.stored)} dp/s   ${JSON.stringify(single.statuses)}`);
  console.log(`${perBatch} states per request: accepted ${fmt(batch.accepted)} dp/s   stored ${fmt(batch.stored)} dp/s   ${JSON.stringify(batch.statuses)}`);
  console.log(`ratio batch / single (stored): ${(batch.stored / single.stored).toFixed(1)}`);
  await ask(worker, { type: 'stop' });
  await worker.terminate();
}

if (isMainThread) await main();
else await serviceThread(workerData as number);
