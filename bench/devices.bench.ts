/**
 * A fleet far larger than what is active at once: 1,000,000 distinct device ids, one uplink each
 * (a JSON device state of 4 assets), cycled through one engine process from the local log into
 * chDB. Actors passivate after 2 s idle, so memory must follow the active devices, not the fleet.
 * Not part of the test suite.
 *
 *   npx node bench/devices.bench.ts
 *   BENCH_DEVICE_IDS=200000 BENCH_DEADLINE_S=120 npx node bench/devices.bench.ts
 *   BENCH_HEAP_MB=0 npx node bench/devices.bench.ts        V8's default heap limit (see below)
 *
 * Reports peak RSS (sampled every 50 ms; target < 1 GiB), actors created and passivated, the peak of
 * live actors, and the time taken. Bounded: it stops at BENCH_DEADLINE_S (default 300 s) whatever
 * is left, and says so.
 *
 * The process runs with the V8 old space capped at BENCH_HEAP_MB (default 512), as a deployment
 * sizes it: with V8's default limit (a quarter of the machine's memory) garbage of passivated actors
 * is left to pile up and RSS says more about the collector's laziness than about the live set.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import { encodeEnvelope } from '../engine/uplink/envelope.ts';
import type { AssetInfo, DeviceDirectory, DeviceInfo } from '../engine/ports/directory.ts';
import { StateBatcher } from '../engine/uplink/pipeline/StateBatcher.ts';
import { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import { deviceActors } from '../engine/actors/DeviceActors.ts';
import { Topics } from '../schemas/messages.ts';
import { RssSampler } from './support/RssSampler.ts';
import { tapLog } from './support/tapLog.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const HEAP_MB = env('BENCH_HEAP_MB', 512);
if (HEAP_MB > 0 && !process.execArgv.some((flag) => flag.startsWith('--max-old-space-size'))) {
  const run = spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, ...process.execArgv, new URL(import.meta.url).pathname], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}
const DEVICE_IDS = env('BENCH_DEVICE_IDS', 1_000_000);
const DEADLINE_MS = env('BENCH_DEADLINE_S', 300) * 1000;
// Smaller than bench/pipeline.bench.ts's: this run is bound by actor churn, not by chDB, and
// every row held in flight counts against the memory target.
const MAX_ROWS = env('BENCH_MAX_ROWS', 20_000);
const IN_FLIGHT = env('BENCH_IN_FLIGHT', 10_000);
const PASSIVATE_AFTER_MS = 2_000;
const SWEEP_INTERVAL_MS = 500;
const PARTITIONS = 4;
const T0 = Date.UTC(2026, 0, 1);
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** Every device is of one device type: the same assets, so the profiles compile once and are shared. */
const ASSETS: readonly AssetInfo[] = [
  { id: 'temperature', name: 'temperature', is: 'sensor', profile: { type: 'number', minimum: -40, maximum: 85 } },
  { id: 'humidity', name: 'humidity', is: 'sensor', profile: { type: 'integer', minimum: 0, maximum: 100 } },
  { id: 'door', name: 'door', is: 'sensor', profile: { type: 'boolean' } },
  { id: 'battery', name: 'battery', is: 'sensor', profile: { type: 'number', minimum: 0, maximum: 100 } },
];
class AnyDeviceDirectory implements DeviceDirectory {
  lookups = 0;
  async getDevice(deviceId: string): Promise<DeviceInfo> {
    this.lookups++;
    return { id: deviceId, assets: ASSETS };
  }
}

function body(i: number): Uint8Array {
  return Buffer.from(`{"temperature":{"value":${(i % 1000) / 20}},"humidity":{"value":${i % 101}},"door":{"value":${i % 2 === 0}},"battery":{"value":${(i % 100) + 0.5}}}`);
}

const rss = new RssSampler(50);
const root = mkdtempSync(join(tmpdir(), 'fleetstream-devices-bench-'));
const keepAlive = setInterval(() => {}, 1_000);
const heapFlag = process.execArgv.find((flag) => flag.startsWith('--max-old-space-size'));
console.log(`devices bench: ${fmt(DEVICE_IDS)} distinct device ids, 1 uplink × 4 assets each, passivateAfterMs ${PASSIVATE_AFTER_MS}, ` +
  `sweepIntervalMs ${SWEEP_INTERVAL_MS}, deadline ${DEADLINE_MS / 1000} s, ${heapFlag ?? 'default V8 heap limit'}, node ${process.version}`);

try {
  const started = performance.now();
  rss.phase('append');
  const log = createLocalLog({ dir: join(root, 'log') });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: PARTITIONS }, { name: Topics.deadLetters, partitions: 1 }]);
  for (let first = 0; first < DEVICE_IDS; first += 2_000) {
    const records = [];
    for (let i = first; i < Math.min(DEVICE_IDS, first + 2_000); i++) {
      const deviceId = `fleet-device-${i.toString(36).padStart(6, '0')}`;
      records.push({ key: deviceId, value: encodeEnvelope({ id: `u${i}`, channel: 'http', contentType: 'json', deviceId, receivedAt: T0 + i, body: body(i) }) });
    }
    await log.append(Topics.uplinks, records);
  }
  const appendMs = performance.now() - started;
  console.log(`append    ${fmt(DEVICE_IDS)} uplinks in ${fmt(appendMs)} ms (${fmt(DEVICE_IDS / (appendMs / 1000))} uplinks/s)`);

  rss.phase('engine');
  const store = createChdbStore({ dir: join(root, 'chdb') });
  await store.init();
  const directory = new AnyDeviceDirectory();
  const tap = tapLog(log, DEVICE_IDS);
  const batcher = new StateBatcher({ store, clock: systemClock, maxRows: MAX_ROWS, maxPendingRows: 3 * MAX_ROWS, maxDelayMs: 50 });
  const pipeline = new UplinkPipeline({
    log: tap.log, rows: batcher, undecided: deviceActors({ directory, clock: systemClock, passivateAfterMs: PASSIVATE_AFTER_MS, sweepIntervalMs: SWEEP_INTERVAL_MS }),
    clock: systemClock, group: 'devices-bench', maxInFlight: IN_FLIGHT, maxBatchRecords: 2_000, commitIntervalMs: 50,
    onError: (error) => { console.error('pipeline failed', error); process.exitCode = 1; },
  });
  let liveActorsPeak = 0;
  let heapPeak = 0;
  const sampler = setInterval(() => {
    liveActorsPeak = Math.max(liveActorsPeak, pipeline.stats.actors);
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  }, 50);
  const consumeStarted = performance.now();
  await pipeline.start();
  let timedOut = false;
  const deadline = new Promise<void>((resolve) => setTimeout(() => { timedOut = true; resolve(); }, Math.max(0, DEADLINE_MS - (performance.now() - started))).unref());
  await Promise.race([tap.allCommitted, deadline]);
  const consumedMs = (timedOut ? performance.now() : tap.lastCommitAt) - consumeStarted;
  // Let the sweeps passivate what is still idle (bounded by the deadline too).
  const settleUntil = performance.now() + PASSIVATE_AFTER_MS + 2 * SWEEP_INTERVAL_MS + 500;
  while (!timedOut && pipeline.stats.actors > 0 && performance.now() < settleUntil) await new Promise((resolve) => setTimeout(resolve, 50));
  clearInterval(sampler);
  const { received, stored, rejected, actorsCreated, actorsPassivated, actors } = { ...pipeline.stats };
  await pipeline.stop();
  await batcher.close();
  await store.close();
  await log.close();
  rss.stop();
  if (timedOut) console.log(`STOPPED AT THE DEADLINE: ${fmt(received)} of ${fmt(DEVICE_IDS)} uplinks received`);
  console.log(`engine    ${fmt(received)} uplinks, ${fmt(stored)} states stored, ${rejected} rejected, in ${fmt(consumedMs)} ms ` +
    `(${fmt(stored / (consumedMs / 1000))} data points/s, first consume → last commit)`);
  console.log(`actors    created ${fmt(actorsCreated)}, passivated ${fmt(actorsPassivated)}, live peak ${fmt(liveActorsPeak)}, live at the end ${fmt(actors)}; ` +
    `directory lookups ${fmt(directory.lookups)}`);
  console.log(`memory    peak RSS ${mib(rss.peak)} (${rss.report(mib)}), peak heap used ${mib(heapPeak)}; target < 1024 MiB: ${rss.peak < 1024 ** 3 ? 'met' : 'MISSED'}`);
  console.log(`total     ${fmt(performance.now() - started)} ms`);
} finally {
  rss.stop();
  clearInterval(keepAlive);
  rmSync(root, { recursive: true, force: true });
}
