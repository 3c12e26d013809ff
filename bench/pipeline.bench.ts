/**
 * End-to-end embedded pipeline: uplinks (JSON device states of 4 assets) from many devices are
 * appended to the local log first, then consumed by the engine (device actors → StateBatcher →
 * chDB) until every offset is committed. Not part of the test suite.
 *
 *   npx node bench/pipeline.bench.ts
 *   BENCH_UPLINKS=500000 BENCH_DEVICES=10000 npx node bench/pipeline.bench.ts
 *   BENCH_MAX_ROWS=20000 BENCH_PENDING_ROWS=80000 BENCH_IN_FLIGHT=40000 BENCH_FETCH=4000 …   tuning
 *   BENCH_CONCURRENCY=2 npx node bench/pipeline.bench.ts          two store inserts in flight (StateBatcher)
 *   BENCH_RAW=0 npx node --cpu-prof bench/pipeline.bench.ts      profile the engine without the baseline
 *   BENCH_ROLLUPS=1 npx node bench/pipeline.bench.ts              the store keeping rollups, refreshed beside the appends (the service's
 *                                                                 default; the bench's store runs without them unless asked)
 *   BENCH_LEGACY=1 npx node bench/pipeline.bench.ts               the 18.16 table layout
 *
 * Reports the append rate (uplinks/s, encode measured apart), data points (states) stored per
 * second from the first consumed batch to the commit that covers the last record, peak RSS (sampled
 * every 50 ms) per phase, and a baseline measured in the same run: a raw chDB insert of the same
 * number of rows, prebuilt, in batches of the engine's batch size (ratio engine/raw).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import { encodeEnvelope } from '../engine/uplink/envelope.ts';
import { MemoryDirectory, type DeviceInfo } from '../engine/ports/directory.ts';
import type { StateStore } from '../engine/ports/store.ts';
import { StateBatcher } from '../engine/uplink/pipeline/StateBatcher.ts';
import { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import { deviceActors } from '../engine/actors/DeviceActors.ts';
import { defaultConfig } from '../schemas/config.ts';
import { Topics, type StateRow, type UplinkEnvelope } from '../schemas/messages.ts';
import { RssSampler } from './support/RssSampler.ts';
import { tapLog } from './support/tapLog.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const UPLINKS = env('BENCH_UPLINKS', 250_000);
const DEVICES = env('BENCH_DEVICES', 10_000);
const PARTITIONS = env('BENCH_PARTITIONS', 4);
const APPEND_BATCH = env('BENCH_APPEND_BATCH', 1_000);
// Engine options: the service's defaults (schemas/config.ts, as app/buildEngine.ts applies them), so
// the figure is the service's path. chDB inserts are the bottleneck and cost much less per row in
// batches of tens of thousands: with 10 000 rows and 20 000 uplinks in flight (the defaults before)
// this bench gave 257-263k data points/s, with 40 000 and 40 000 315-337k (2 rounds each).
const MAX_ROWS = env('BENCH_MAX_ROWS', defaultConfig.engine.batchRows);
const PENDING_ROWS = env('BENCH_PENDING_ROWS', 4 * MAX_ROWS);
const IN_FLIGHT = env('BENCH_IN_FLIGHT', defaultConfig.engine.maxInFlight);
const FETCH = env('BENCH_FETCH', 2_000);
const MAX_DELAY_MS = env('BENCH_MAX_DELAY_MS', defaultConfig.engine.batchDelayMs);
/** BENCH_RAW=0 skips the baseline (to profile the engine alone with --cpu-prof). */
const RAW = env('BENCH_RAW', 1) !== 0;
const STORE_OPTIONS = { rollups: env('BENCH_ROLLUPS', 0) === 1, legacyLayout: env('BENCH_LEGACY', 0) === 1 };

const ASSETS = ['temperature', 'humidity', 'door', 'battery'];
const T0 = Date.UTC(2026, 0, 1);
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

function deviceInfo(d: number): DeviceInfo {
  return {
    id: `device-${d}`,
    assets: [
      { id: `${d}-t`, name: 'temperature', is: 'sensor', profile: { type: 'number', minimum: -40, maximum: 85 } },
      { id: `${d}-h`, name: 'humidity', is: 'sensor', profile: { type: 'integer', minimum: 0, maximum: 100 } },
      { id: `${d}-d`, name: 'door', is: 'sensor', profile: { type: 'boolean' } },
      { id: `${d}-b`, name: 'battery', is: 'sensor', profile: { type: 'number', minimum: 0, maximum: 100 } },
    ],
  };
}

/** Uplink i: device i % DEVICES; the temperature carries `at`, the other assets take the receive time. */
function values(i: number): [number, number, boolean, number] {
  return [Math.round(Math.sin(i) * 4000) / 100, i % 101, i % 2 === 0, 100 - (i % 1000) / 10];
}

function uplink(i: number): UplinkEnvelope {
  const [temperature, humidity, door, battery] = values(i);
  const at = new Date(T0 + i * 100).toISOString();
  const body = `{"temperature":{"value":${temperature},"at":"${at}"},"humidity":{"value":${humidity}},"door":{"value":${door}},"battery":{"value":${battery}}}`;
  return { id: `up-${i}`, channel: 'http', contentType: 'json', deviceId: `device-${i % DEVICES}`, receivedAt: T0 + i * 100 + 7, body: Buffer.from(body) };
}

/** The rows the engine makes of uplink i, built directly (baseline input). */
function rowsOf(i: number, run: string): StateRow[] {
  const v = values(i);
  const receivedAt = T0 + i * 100 + 7;
  return ASSETS.map((asset, a) => ({ deviceId: `${run}device-${i % DEVICES}`, asset, ts: a === 0 ? T0 + i * 100 : receivedAt, receivedAt, value: v[a], uplinkId: `up-${i}` }));
}

const rss = new RssSampler(50);
const root = mkdtempSync(join(tmpdir(), 'fleetstream-pipeline-bench-'));

/** Raw chDB insert of as many prebuilt rows, in batches of the engine's batch size; rows/s. */
async function rawInsert(): Promise<number> {
  rss.phase('raw insert');
  const raw = createChdbStore({ dir: join(root, 'chdb-raw'), ...STORE_OPTIONS });
  await raw.init();
  const batches: StateRow[][] = [];
  let batch: StateRow[] = [];
  for (let i = 0; i < UPLINKS; i++) {
    for (const row of rowsOf(i, 'raw-')) batch.push(row);
    if (batch.length >= MAX_ROWS) { batches.push(batch); batch = []; }
  }
  if (batch.length > 0) batches.push(batch);
  const rawStarted = performance.now();
  for (const b of batches) await raw.append(b);
  const rawMs = performance.now() - rawStarted;
  batches.length = 0;
  await raw.close();
  const rawRate = (UPLINKS * 4) / (rawMs / 1000);
  console.log(`raw chDB  ${fmt(rawRate).padStart(10)} rows/s     (${fmt(UPLINKS * 4)} rows in ${fmt(rawMs)} ms, batches of ${fmt(MAX_ROWS)}, sequential)`);
  return rawRate;
}

// systemClock timers are unref'd; this keeps the process alive while the batcher waits on one.
const keepAlive = setInterval(() => {}, 1_000);
console.log(`pipeline bench: ${fmt(UPLINKS)} uplinks × 4 assets from ${fmt(DEVICES)} devices, ${PARTITIONS} partitions, node ${process.version}`);
console.log(`engine options: StateBatcher maxRows ${fmt(MAX_ROWS)}, maxPendingRows ${fmt(PENDING_ROWS)}, maxDelayMs ${MAX_DELAY_MS}; ` +
  `pipeline maxInFlight ${fmt(IN_FLIGHT)}; consumer maxBatchRecords ${fmt(FETCH)}`);

try {
  // 1. Append: encode envelopes and append them in batches, each append durable (fsynced).
  rss.phase('append');
  const log = createLocalLog({ dir: join(root, 'log') });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: PARTITIONS }, { name: Topics.deadLetters, partitions: 1 }]);
  let encodeMs = 0;
  let appendMs = 0;
  let bytes = 0;
  for (let first = 0; first < UPLINKS; first += APPEND_BATCH) {
    const t0 = performance.now();
    const records = [];
    for (let i = first; i < Math.min(UPLINKS, first + APPEND_BATCH); i++) {
      const value = encodeEnvelope(uplink(i));
      bytes += value.length;
      records.push({ key: `device-${i % DEVICES}`, value });
    }
    const t1 = performance.now();
    await log.append(Topics.uplinks, records);
    encodeMs += t1 - t0;
    appendMs += performance.now() - t1;
  }
  console.log(`append    ${fmt(UPLINKS / (appendMs / 1000)).padStart(10)} uplinks/s  ${(bytes / 1024 / 1024 / (appendMs / 1000)).toFixed(1)} MiB/s  ` +
    `(${fmt(appendMs)} ms, batches of ${fmt(APPEND_BATCH)}, ${(bytes / UPLINKS).toFixed(0)} bytes/envelope; encoding apart: ${fmt(UPLINKS / (encodeMs / 1000))} uplinks/s)`);

  // 2. Baseline: raw chDB insert of as many prebuilt rows, in batches of the engine's batch size.
  const rawRate = RAW ? await rawInsert() : Number.NaN;

  // 3. Engine: consume everything appended, durable in chDB, offsets committed.
  rss.phase('engine');
  const store = createChdbStore({ dir: join(root, 'chdb'), ...STORE_OPTIONS });
  await store.init();
  const inserts = { calls: 0, rows: 0, busyMs: 0 };
  const timedStore: Pick<StateStore, 'append'> = {
    async append(rows) {
      const t = performance.now();
      await store.append(rows);
      inserts.calls++;
      inserts.rows += rows.length;
      inserts.busyMs += performance.now() - t;
    },
  };
  const directory = new MemoryDirectory();
  for (let d = 0; d < DEVICES; d++) directory.put(deviceInfo(d));
  const tap = tapLog(log, UPLINKS);
  const batcher = new StateBatcher({ store: timedStore, clock: systemClock, maxRows: MAX_ROWS, maxPendingRows: PENDING_ROWS, maxDelayMs: MAX_DELAY_MS, concurrency: Number(process.env.BENCH_CONCURRENCY ?? 1) });
  const pipeline = new UplinkPipeline({
    log: tap.log, rows: batcher, undecided: deviceActors({ directory, clock: systemClock }), clock: systemClock, group: 'bench',
    maxInFlight: IN_FLIGHT, maxBatchRecords: FETCH, commitIntervalMs: 50,
    onError: (error) => { console.error('pipeline failed', error); process.exitCode = 1; },
  });
  const elu = performance.eventLoopUtilization();
  await pipeline.start();
  await tap.allCommitted;
  const busy = performance.eventLoopUtilization(elu);
  const engineMs = tap.lastCommitAt - tap.firstBatchAt;
  await pipeline.stop();
  await batcher.close();
  const rate = (UPLINKS * 4) / (engineMs / 1000);
  console.log(`engine    ${fmt(rate).padStart(10)} data points/s  (${fmt(UPLINKS * 4)} states of ${fmt(UPLINKS)} uplinks in ${fmt(engineMs)} ms, first consume → last commit)`);
  console.log(`          ratio engine/raw ${RAW ? (rate / rawRate).toFixed(2) : 'not measured'}; ${fmt(inserts.calls)} inserts of ${fmt(inserts.rows / inserts.calls)} rows, ` +
    `chDB busy ${((inserts.busyMs / engineMs) * 100).toFixed(0)} % of the time, event loop busy ${(busy.utilization * 100).toFixed(0)} %; ` +
    `actors created ${fmt(pipeline.stats.actorsCreated)}, rejected ${pipeline.stats.rejected}`);

  // Sanity: the states are there (one device, every asset, as queries see them).
  const perDevice = Math.ceil(UPLINKS / DEVICES);
  for (const asset of ASSETS) {
    const n = (await store.history({ deviceId: 'device-0', asset, limit: 10_000 })).length;
    if (n !== Math.min(perDevice, 10_000)) throw new Error(`device-0/${asset}: ${n} states stored, expected ${perDevice}`);
  }
  if (pipeline.stats.stored !== UPLINKS * 4 || pipeline.stats.rejected !== 0) throw new Error(`stored ${pipeline.stats.stored}, rejected ${pipeline.stats.rejected}`);
  await store.close();
  await log.close();
  rss.stop();
  console.log(`peak RSS  ${rss.report(mib)}`);
  if (rate < 100_000) console.log(`below the 100,000 data points/s target (${fmt(rate)})`);
} finally {
  rss.stop();
  clearInterval(keepAlive);
  rmSync(root, { recursive: true, force: true });
}
