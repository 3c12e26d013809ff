/**
 * State store insert throughput (rows/s). Not part of the test suite.
 *
 *   npx node bench/store.bench.ts                  chDB, batches of 1k and 10k rows
 *   CLICKHOUSE_URL=http://127.0.0.1:18123 npx node bench/store.bench.ts   also the server adapter
 *   BENCH_ROWS=400000 npx node bench/store.bench.ts                        rows per case (default 200 000)
 *   BENCH_CONCURRENCY=2 npx node bench/store.bench.ts                      StateBatcher inserts in flight (default 1)
 *   BENCH_ROUNDS=4 npx node bench/store.bench.ts                           server rounds (default 2)
 *   BENCH_CHDB=0 npx node bench/store.bench.ts                             server cases only
 *
 * Baseline measured in the same run: encoding the same rows to the TSV payload alone, so each
 * insert figure is also given as a share of what the encoder could feed. A StateBatcher case shows
 * what many small appends (10 rows, as a device actor makes) reach through batching.
 * Each engine runs today's path (18.16 layout and TabSeparated) and what the store picks for it
 * (chDB: the compact layout, RowBinary from 5 000 rows; server 18.16: RowBinary), and the ratio of
 * the two (chDB: today's first); chDB also the compact layout as TabSeparated, to tell the layout from the format.
 * The StateBatcher case batches as each path's engine does: today's path with the 10 000 rows per
 * insert the engine used before, the store's choice with the engine's default now (40 000), so its
 * ratio is the service's store path against today's; the batch cases keep the size fixed. (chDB's
 * compact-TSV path batches as the store's choice does, so its StateBatcher ratio holds the batch
 * size as well as the layout.)
 *
 * The server cases treat both paths alike (BENCH_ROUNDS rounds, default 2): each path writes its
 * own database; the two paths of a case run back to back, in the other order the next round; each
 * run starts once the server runs no merges; nothing is dropped or deleted until every case has
 * run. On the ext4 this is measured on (no journal), creating a file scans past the inodes deleted
 * in the last minutes, and an 18.16 insert creates a part of ~20 files: right after a DROP of the
 * other path's tables (or the removal of the chDB directory) the same 1 000-row insert took 14-20
 * ms on the server instead of 3 ms, and a case that ran while the server merged the previous
 * case's parts was charged for those merges too. Read the per-round ratios beside the summary:
 * the machine's noise is still there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { createClickHouseStore } from '../adapters/clickhouse/createClickHouseStore.ts';
import { encodeCompactStateRowsTsv, encodeStateRowsTsv } from '../adapters/clickhouse-sql/encodeStateRowsTsv.ts';
import { encodeStateRowsRowBinary } from '../adapters/clickhouse-sql/encodeStateRowsRowBinary.ts';
import { encodeCompactStateRowsRowBinary } from '../adapters/clickhouse-sql/encodeCompactStateRowsRowBinary.ts';
import { newUplinkId } from '../engine/kernel/ids.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import type { StateStore } from '../engine/ports/store.ts';
import { StateBatcher } from '../engine/uplink/pipeline/StateBatcher.ts';
import { defaultConfig } from '../schemas/config.ts';
import type { JsonValue, StateRow } from '../schemas/messages.ts';

const total = Number(process.env.BENCH_ROWS ?? 200_000);
const clickhouseUrl = process.env.CLICKHOUSE_URL;

/** 1000 devices × 4 assets; 80 % numbers, the rest strings, booleans and location objects. */
function makeRows(count: number, run: number): StateRow[] {
  const t0 = Date.UTC(2024, 0, 1) + run * 10_000_000_000;
  const rows = new Array<StateRow>(count);
  // One uplink per 4 rows, time-ordered ids as engine/kernel/ids.ts makes them.
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const kind = i % 10;
    const value: JsonValue = kind < 8 ? Math.round(Math.sin(i) * 10_000) / 100 : kind === 8 ? `status ${i % 7}` : { latitude: 50.85, longitude: 4.35 + i / 1e6 };
    rows[i] = {
      deviceId: `device-${i % 1000}`,
      asset: ['temperature', 'humidity', 'battery', 'location'][(i >> 3) % 4],
      ts: t0 + i * 10,
      receivedAt: t0 + (i >> 2) * 40 + 3,
      value,
      uplinkId: ids[i >> 2] ??= newUplinkId(t0 + (i >> 2) * 40 + 3),
    };
  }
  return rows;
}

function batches(rows: StateRow[], size: number): StateRow[][] {
  const out: StateRow[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

function report(label: string, rows: number, ms: number, baseline?: number): number {
  const rate = rows / (ms / 1000);
  const ratio = baseline ? `  (${((rate / baseline) * 100).toFixed(1)} % of encode-only)` : '';
  console.log(`${label.padEnd(44)} ${Math.round(rate).toLocaleString('en-US').padStart(12)} rows/s  ${ms.toFixed(0).padStart(6)} ms${ratio}`);
  return rate;
}

let run = 0;
function encodeCase(label: string, encode: (rows: StateRow[]) => Buffer): number {
  for (const part of batches(makeRows(50_000, run++), 10_000)) encode(part); // warm-up
  const rows = makeRows(total, run++);
  const parts = batches(rows, 10_000);
  const started = performance.now();
  let bytes = 0;
  for (const part of parts) bytes += encode(part).length;
  const rate = report(label, rows.length, performance.now() - started);
  console.log(`  payload ${(bytes / rows.length).toFixed(1)} bytes/row`);
  return rate;
}

function encodeBaseline(): number {
  const rate = encodeCase('encode TSV only (baseline)', encodeStateRowsTsv);
  encodeCase('encode TSV, compact layout', (rows) => encodeCompactStateRowsTsv(rows, false));
  encodeCase('encode RowBinary, 18.16 layout', encodeStateRowsRowBinary);
  encodeCase('encode RowBinary, compact layout', (rows) => encodeCompactStateRowsRowBinary(rows, false));
  return rate;
}

async function insertCase(label: string, store: StateStore, size: number, baseline: number): Promise<number> {
  const parts = batches(makeRows(total, run++), size);
  const started = performance.now();
  for (const part of parts) await store.append(part);
  return report(`${label} batch ${size.toLocaleString('en-US')}`, total, performance.now() - started, baseline);
}

async function batcherCase(label: string, store: StateStore, baseline: number, rows = defaultConfig.engine.batchRows): Promise<number> {
  // The engine's settings (schemas/config.ts defaults as app/buildEngine.ts applies them: 40 000 rows,
  // 100 ms, 4 batches pending), so the case measures the service's path; `rows` sets another size.
  const batcher = new StateBatcher({ store, clock: systemClock, maxRows: rows, maxDelayMs: defaultConfig.engine.batchDelayMs, maxPendingRows: 4 * rows, concurrency: Number(process.env.BENCH_CONCURRENCY ?? 1) });
  const appends = batches(makeRows(total, run++), 10);
  const started = performance.now();
  // Concurrent callers, each awaiting its append before the next, like device actors: two batches'
  // rows are outstanding (one being stored, the next filling), so batches fill to maxRows rather
  // than waiting for maxDelayMs.
  let next = 0;
  await Promise.all(Array.from({ length: Math.ceil((2 * rows) / 10) }, async () => {
    while (next < appends.length) await batcher.append(appends[next++]);
  }));
  await batcher.close();
  return report(`${label} StateBatcher ${rows.toLocaleString('en-US')} rows, appends of 10`, total, performance.now() - started, baseline);
}

async function queryCase(label: string, store: StateStore, tableRows: number): Promise<void> {
  const rounds = 20;
  const time = async (name: string, query: (i: number) => Promise<unknown>) => {
    const started = performance.now();
    for (let i = 0; i < rounds; i++) await query(i);
    console.log(`${`${label} ${name}`.padEnd(44)} ${((performance.now() - started) / rounds).toFixed(1).padStart(12)} ms per query (${tableRows.toLocaleString('en-US')} rows stored)`);
  };
  await time('latest', (i) => store.latest(`device-${i}`));
  await time('history limit 100', (i) => store.history({ deviceId: `device-${i}`, asset: 'temperature', limit: 100 }));
  const from = Date.UTC(2024, 0, 1);
  await time('aggregate hour', (i) => store.aggregate({ deviceId: `device-${i}`, asset: 'temperature', from, to: from + 365 * 86_400_000, resolution: 'hour' }));
}

console.log(`state store bench: ${total.toLocaleString('en-US')} rows per case, node ${process.version}`);
// systemClock timers are unref'd; this keeps the process alive while the batcher waits on one.
const keepAlive = setInterval(() => {}, 1_000);
const baseline = encodeBaseline();

/** The engine's batch size before it became 40 000 rows: what "today's" path batches with. */
const PREVIOUS_BATCH_ROWS = 10_000;

async function engineCases(label: string, store: StateStore, batchRows = defaultConfig.engine.batchRows): Promise<number[]> {
  await store.init();
  const rates = [
    await insertCase(label, store, 1_000, baseline),
    await insertCase(label, store, 10_000, baseline),
    await batcherCase(label, store, baseline, batchRows),
  ];
  await queryCase(label, store, 3 * total);
  await store.close();
  return rates;
}

function ratios(label: string, today: number[], now: number[]): void {
  console.log(`${label}: ${now.map((rate, i) => (rate / today[i]).toFixed(2)).join(' / ')} × today's rate (batch 1,000 / 10,000 / StateBatcher)`);
}

const dir = mkdtempSync(join(tmpdir(), 'fleetstream-bench-'));
try {
  if (process.env.BENCH_CHDB !== '0') {
    const today = await engineCases('chDB 18.16 layout TSV', createChdbStore({ dir, database: 'bench_legacy', legacyLayout: true, textInsert: true }), PREVIOUS_BATCH_ROWS);
    const text = await engineCases('chDB compact TSV', createChdbStore({ dir, database: 'bench_compact_text', textInsert: true }));
    const now = await engineCases('chDB compact', createChdbStore({ dir, database: 'bench_compact' }));
    ratios('chDB compact layout, TSV', today, text);
    ratios("chDB compact layout (store's choice)", today, now);
  }
  if (clickhouseUrl) await serverCases(clickhouseUrl);
  else console.log('CLICKHOUSE_URL not set: server adapter not measured');
} finally {
  // Only now: deleting files slows the server's part writes for a while (see the header).
  rmSync(dir, { recursive: true, force: true });
}

async function serverCases(url: string): Promise<void> {
  const sql = async (query: string) => {
    const response = await fetch(url, { method: 'POST', body: query });
    if (!response.ok) throw new Error(`${query}: ${await response.text()}`);
    return (await response.text()).trim();
  };
  const version = await sql('SELECT version()');
  const settle = async () => {
    const until = Date.now() + 60_000;
    while (Number(await sql('SELECT count() FROM system.merges')) > 0 && Date.now() < until) await new Promise((wake) => setTimeout(wake, 100));
  };
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const database = (path: string) => `fleetstream_bench_${process.pid}_${path}`;
  const paths = {
    today: { label: `server ${version} TSV`, store: createClickHouseStore({ url, database: database('today'), textInsert: true, legacyLayout: true }) },
    now: { label: `server ${version}`, store: createClickHouseStore({ url, database: database('now') }) },
  };
  const cases = [
    (label: string, store: StateStore) => insertCase(label, store, 1_000, baseline),
    (label: string, store: StateStore) => insertCase(label, store, 10_000, baseline),
    // Each path through the StateBatcher as its engine batches: today's 10 000 rows, now the default.
    (label: string, store: StateStore, path: 'today' | 'now') => batcherCase(label, store, baseline, path === 'today' ? PREVIOUS_BATCH_ROWS : defaultConfig.engine.batchRows),
  ];
  // Seconds per row, summed over rounds: the rate of all rounds together.
  const perRow = { today: [0, 0, 0], now: [0, 0, 0] };
  try {
    for (const { store } of Object.values(paths)) await store.init();
    for (let round = 0; round < rounds; round++) {
      const rates = { today: [0, 0, 0], now: [0, 0, 0] };
      // The two paths of a case run back to back, first one then the other, the next round the other way.
      for (const [i, run] of cases.entries()) {
        for (const path of round % 2 === 0 ? (['today', 'now'] as const) : (['now', 'today'] as const)) {
          await settle();
          rates[path][i] = await run(`${paths[path].label} r${round}`, paths[path].store, path);
          perRow[path][i] += 1 / rates[path][i];
        }
      }
      ratios(`server ${version} (store's choice) round ${round}`, rates.today, rates.now);
    }
    ratios(`server ${version} (store's choice), ${rounds} rounds`, perRow.today.map((s) => 1 / s), perRow.now.map((s) => 1 / s));
    for (const { label, store } of Object.values(paths)) await queryCase(label, store, 3 * rounds * total);
  } finally {
    for (const { store } of Object.values(paths)) await store.close();
    for (const path of Object.keys(paths)) await sql(`DROP DATABASE IF EXISTS ${database(path)}`);
  }
}
clearInterval(keepAlive);
