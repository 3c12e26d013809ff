/**
 * Export memory: exporting 1 M and then 10 M states as CSV through the state export port
 * (engine/ports/stateExport.ts), the bytes read and dropped as a client would send them on. The
 * figure is the process's peak RSS growth over its resting RSS during each export (RSS: chDB's
 * memory is outside the V8 heap), and their ratio 10 M : 1 M — constant memory is about 1×, a file
 * built in memory would be about 10×. Baseline in the same run: the 1 M export. Also rows/s.
 * Each export runs in a fresh process on the filled store (chDB's allocator keeps what the fill
 * took, which would hide or blur an export's growth), small and large alternating over two rounds;
 * the figure of each size is its larger round.
 *
 *   node --expose-gc bench/export.bench.ts                      chDB, 10 M rows (100 devices)
 *   BENCH_ROWS=2000000 node --expose-gc bench/export.bench.ts   fewer rows (the small case is a tenth)
 *   BENCH_FORMAT=ndjson node --expose-gc bench/export.bench.ts  another format (csv, ndjson, parquet)
 *   CLICKHOUSE_URL=http://127.0.0.1:18123 BENCH_SERVER=1 node --expose-gc bench/export.bench.ts   the server instead of chDB
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { createClickHouseStore } from '../adapters/clickhouse/createClickHouseStore.ts';
import type { SqlStateStore } from '../adapters/clickhouse-sql/createSqlStateStore.ts';
import type { ExportFormat } from '../engine/ports/stateExport.ts';
import type { StateRow } from '../schemas/messages.ts';
import { RssSampler } from './support/RssSampler.ts';

const total = Number(process.env.BENCH_ROWS ?? 10_000_000);
const format = (process.env.BENCH_FORMAT ?? 'csv') as ExportFormat;
const server = process.env.BENCH_SERVER === '1' ? process.env.CLICKHOUSE_URL : undefined;
const DEVICES = 100;
const BATCH = 200_000;
const T0 = Date.UTC(2025, 0, 1);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const mb = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MB`;

/** Row i: device i % DEVICES, one reading a second per device, numbers mostly, some strings. */
function batch(start: number, count: number): StateRow[] {
  const rows = new Array<StateRow>(count);
  for (let k = 0; k < count; k++) {
    const i = start + k;
    const ts = T0 + Math.floor(i / DEVICES) * 1000;
    rows[k] = { deviceId: `device${String(i % DEVICES).padStart(16, '0')}`, asset: 'temperature', ts, receivedAt: ts + 40, uplinkId: `u${i}`, value: i % 10 === 9 ? `status ${i % 7}` : Math.round(Math.sin(i) * 10_000) / 100 };
  }
  return rows;
}

async function fill(store: SqlStateStore): Promise<void> {
  const started = Date.now();
  for (let i = 0; i < total; i += BATCH) await store.append(batch(i, Math.min(BATCH, total - i)));
  console.log(`stored ${total} rows in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** In a child: exports the first `rows` rows by time from the store at `dir`; prints peak RSS growth over rest, bytes and rows/s. */
async function measure(store: SqlStateStore, rows: number): Promise<{ growth: number; firstHalfGrowth: number; secondHalfGrowth?: number; bytes: number; rowsPerSecond: number }> {
  gc!();
  await new Promise((r) => setTimeout(r, 300));
  gc!();
  const rest = process.memoryUsage.rss();
  const sampler = new RssSampler(20);
  sampler.phase('export');
  const devices = Array.from({ length: DEVICES }, (_, d) => `device${String(d).padStart(16, '0')}`);
  const started = performance.now();
  let bytes = 0;
  // CSV and NDJSON: a line a row, so the second half of the rows is told apart from the first.
  let lines = 0;
  const countsLines = format !== 'parquet';
  for await (const chunk of await store.exportStates({ devices, to: T0 + (rows / DEVICES) * 1000, format })) {
    bytes += chunk.byteLength;
    if (!countsLines || lines >= rows / 2) continue;
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
    if (lines >= rows / 2) sampler.phase('second half');
  }
  const seconds = (performance.now() - started) / 1000;
  sampler.stop();
  const firstHalf = sampler.peaks.get('export') ?? rest;
  const secondHalf = sampler.peaks.get('second half');
  return {
    growth: Math.max(0, Math.max(firstHalf, secondHalf ?? 0) - rest),
    firstHalfGrowth: Math.max(0, firstHalf - rest),
    secondHalfGrowth: secondHalf === undefined ? undefined : Math.max(0, secondHalf - rest),
    bytes,
    rowsPerSecond: rows / seconds,
  };
}

type Figures = Awaited<ReturnType<typeof measure>>;

function openStore(dir: string, database: string): SqlStateStore {
  return server === undefined ? createChdbStore({ dir, database }) : createClickHouseStore({ url: server, database });
}

function child(dir: string, database: string, rows: number): Figures {
  const out = execFileSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), 'measure', dir, database, String(rows)], { env: process.env, encoding: 'utf8', maxBuffer: 1 << 20 });
  return JSON.parse(out.trim().split('\n').at(-1)!) as Figures;
}

async function main(): Promise<void> {
  if (process.argv[2] === 'measure') {
    const [, , , dir, database, rows] = process.argv;
    const store = openStore(dir!, database!);
    await store.init();
    const figures = await measure(store, Number(rows));
    await store.close();
    console.log(JSON.stringify(figures));
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-export-bench-'));
  const database = `fleetstream_export_bench_${process.pid}`;
  const store = openStore(dir, database);
  await store.init();
  try {
    await fill(store);
    await store.close();
    const runs: { small: Figures[]; large: Figures[] } = { small: [], large: [] };
    for (let round = 0; round < 2; round++) {
      runs.small.push(child(dir, database, total / 10));
      runs.large.push(child(dir, database, total));
    }
    const worst = (all: Figures[]) => all.reduce((a, b) => (b.growth > a.growth ? b : a));
    const small = worst(runs.small);
    const large = worst(runs.large);
    const line = (label: string, r: Figures, rows: number, all: Figures[]) =>
      `${label.padEnd(5)} ${String(rows).padStart(9)} rows  ${mb(r.bytes).padStart(8)} of ${format}  ${Math.round(r.rowsPerSecond).toLocaleString('en').padStart(10)} rows/s  peak RSS growth ${mb(r.growth)} (rounds: ${all.map((f) => mb(f.growth)).join(', ')})`;
    console.log(`export from ${server ?? 'chDB'}, ${format}, each in a fresh process:`);
    console.log(line('small', small, total / 10, runs.small));
    console.log(line('large', large, total, runs.large));
    // Under 16 MB of growth the ratio is noise around a constant: say so rather than divide noise.
    const ratio = large.growth / Math.max(small.growth, 16 * 1048576);
    console.log(`peak RSS growth ratio, ${total} : ${total / 10} rows = ${ratio.toFixed(2)}× (constant memory ≈ 1×; a file built in memory ≈ 10×; the small case's growth taken as at least 16 MB)`);
    // Within the large export: the engine's working set is reached early (the small export may end
    // before it is); constant memory is a second half that takes no more than the first.
    if (large.secondHalfGrowth !== undefined) {
      const firstHalf = Math.max(...runs.large.map((r) => r.firstHalfGrowth));
      const secondHalf = Math.max(...runs.large.map((r) => r.secondHalfGrowth ?? 0));
      console.log(`within the ${total}-row export: peak RSS growth over its first half of the rows ${mb(firstHalf)}, over its second half ${mb(secondHalf)}: ${(secondHalf / Math.max(firstHalf, 1)).toFixed(2)}× (constant memory ≈ 1×; memory growing with the rows ≈ 2×)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (server !== undefined) await fetch(`${server}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS ${database}`)}`, { method: 'POST' });
  }
}

await main();
