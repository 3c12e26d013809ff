/**
 * What the Prometheus metrics cost the engine: the service's engine (app/buildEngine.ts) consumes
 * the same uplinks (JSON states of 4 assets, through device actors) with metrics off and on, in
 * alternating rounds of one run (after a warm-up round that is not counted; each pair swaps the
 * order, off-on then on-off, so a drift of the machine weighs on both), each round a fresh consumer
 * group reading from offset 0. "On" is
 * what createService wires: store inserts and log appends timed, the engine watched (lag, actors,
 * in flight), and a scrape every BENCH_SCRAPE_MS (250 ms: far more often than Prometheus would). Not part of the test suite.
 *
 *   npx node bench/metrics.bench.ts
 *   BENCH_UPLINKS=200000 BENCH_ROUNDS=3 BENCH_STORE=chdb npx node bench/metrics.bench.ts
 *
 * BENCH_STORE=memory (default) keeps rows in a counter, so the engine itself is the bottleneck and
 * any metrics cost shows; chdb stores them as the service does. Reports data points/s per round and
 * the ratio of the medians (on/off).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { buildEngine } from '../app/buildEngine.ts';
import { createMetrics } from '../app/metrics.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import { MemoryDirectory } from '../engine/ports/directory.ts';
import type { StateStore } from '../engine/ports/store.ts';
import { encodeEnvelope } from '../engine/uplink/envelope.ts';
import { Topics } from '../schemas/messages.ts';
import { tapLog } from './support/tapLog.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const UPLINKS = env('BENCH_UPLINKS', 200_000);
const DEVICES = env('BENCH_DEVICES', 5_000);
const PARTITIONS = env('BENCH_PARTITIONS', 4);
const ROUNDS = env('BENCH_ROUNDS', 4);
const STORE = process.env.BENCH_STORE ?? 'memory';
/** Scrape interval while metrics are on: 250 ms is 20× Prometheus' usual 5 s, to be pessimistic. */
const SCRAPE_MS = env('BENCH_SCRAPE_MS', 250);
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const root = mkdtempSync(join(tmpdir(), 'fleetstream-metrics-bench-'));
const keepAlive = setInterval(() => {}, 1_000);
try {
  const log = createLocalLog({ dir: join(root, 'log') });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: PARTITIONS }, { name: Topics.deadLetters, partitions: 1 }]);
  const T0 = Date.UTC(2026, 0, 1);
  for (let first = 0; first < UPLINKS; first += 1_000) {
    const records = [];
    for (let i = first; i < Math.min(UPLINKS, first + 1_000); i++) {
      const at = new Date(T0 + i * 100).toISOString();
      const body = `{"temperature":{"value":${(i % 4000) / 100},"at":"${at}"},"humidity":{"value":${i % 101}},"door":{"value":${i % 2 === 0}},"battery":{"value":${100 - (i % 1000) / 10}}}`;
      records.push({ key: `device-${i % DEVICES}`, value: encodeEnvelope({ id: `up-${i}`, channel: 'http', contentType: 'json', deviceId: `device-${i % DEVICES}`, receivedAt: T0 + i * 100, body: Buffer.from(body) }) });
    }
    await log.append(Topics.uplinks, records);
  }
  const directory = new MemoryDirectory();
  for (let d = 0; d < DEVICES; d++) {
    directory.put({ id: `device-${d}`, assets: [
      { id: `${d}-t`, name: 'temperature', is: 'sensor', profile: { type: 'number' } },
      { id: `${d}-h`, name: 'humidity', is: 'sensor', profile: { type: 'integer', minimum: 0, maximum: 100 } },
      { id: `${d}-d`, name: 'door', is: 'sensor', profile: { type: 'boolean' } },
      { id: `${d}-b`, name: 'battery', is: 'sensor', profile: { type: 'number', minimum: 0, maximum: 100 } },
    ] });
  }
  const chdb = STORE === 'chdb' ? createChdbStore({ dir: join(root, 'chdb') }) : undefined;
  await chdb?.init();
  let rowsInMemory = 0;
  const store: Pick<StateStore, 'append'> = chdb ?? { async append(rows) { rowsInMemory += rows.length; } };
  console.log(`metrics bench: ${fmt(UPLINKS)} uplinks × 4 assets, ${fmt(DEVICES)} devices, ${PARTITIONS} partitions, store ${STORE}, ${ROUNDS} rounds each, node ${process.version}`);

  const rates: Record<'off' | 'on', number[]> = { off: [], on: [] };
  const modes: Array<'off' | 'on' | 'warm-up'> = ['warm-up'];
  for (let pair = 0; pair < ROUNDS; pair++) modes.push(...(pair % 2 === 0 ? ['off', 'on'] as const : ['on', 'off'] as const));
  for (let round = 0; round < modes.length; round++) {
    const mode = modes[round];
    const tap = tapLog(log, UPLINKS);
    const metrics = mode === 'on' ? createMetrics() : undefined;
    const group = `bench-${round}`;
    const engine = buildEngine({
      log: metrics ? metrics.log(tap.log) : tap.log,
      store: metrics ? metrics.store(store) : store,
      rejections: { async append() {} },
      directory,
      clock: systemClock,
      names: { uplinks: Topics.uplinks, deadLetters: Topics.deadLetters, engineGroup: group },
      settings: { batchRows: 20_000, batchDelayMs: 50, maxInFlight: 30_000, commitIntervalMs: 50 },
      onError: (error) => { console.error('pipeline failed', error); process.exitCode = 1; },
    });
    let scrapes = 0;
    let scraper: NodeJS.Timeout | undefined;
    if (metrics) {
      metrics.watchEngine(engine.pipeline, log, group);
      scraper = setInterval(() => { metrics.scrape().then(() => { scrapes++; }, () => undefined); }, SCRAPE_MS);
    }
    await engine.start();
    await tap.allCommitted;
    const ms = tap.lastCommitAt - tap.firstBatchAt;
    clearInterval(scraper);
    await engine.stop();
    const rate = (UPLINKS * 4) / (ms / 1000);
    if (mode !== 'warm-up') rates[mode].push(rate);
    console.log(`round ${round} metrics ${mode.padEnd(7)} ${fmt(rate).padStart(10)} data points/s  (${fmt(ms)} ms${metrics ? `, ${scrapes} scrapes` : ''})`);
  }
  const off = median(rates.off);
  const on = median(rates.on);
  console.log(`mean      off ${fmt(mean(rates.off))}  on ${fmt(mean(rates.on))}  ratio on/off ${(mean(rates.on) / mean(rates.off)).toFixed(3)}`);
  console.log(`median    off ${fmt(off)}  on ${fmt(on)}  ratio on/off ${(on / off).toFixed(3)} (target ≥ 0.97)`);
  if (STORE === 'memory' && rowsInMemory !== UPLINKS * 4 * modes.length) throw new Error(`stored ${rowsInMemory} rows, expected ${UPLINKS * 4 * modes.length}`);
  await chdb?.close();
  await log.close();
} finally {
  clearInterval(keepAlive);
  rmSync(root, { recursive: true, force: true });
}
