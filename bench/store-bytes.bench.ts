/**
 * Bytes on disk per data point of the states table, after merges (OPTIMIZE … FINAL), for the
 * layout of today's 18.16 table beside the compact layout, in the same run on chDB. Not part of
 * the test suite.
 *
 *   npx node bench/store-bytes.bench.ts                       2 M data points (1,000 devices × 4 assets × 500 minutes)
 *   BENCH_MINUTES=2500 npx node bench/store-bytes.bench.ts    10 M data points
 *   BENCH_RANDOM_IDS=1 …                                      also the compact layout fed 22-character random ids
 *
 * Realistic shape: every device reads its 4 numeric assets once a minute on its own schedule
 * (`at` on the minute plus a per-device phase), the uplink reaches the engine 80-200 ms later, and
 * values drift slowly: a temperature random walk in hundredths, an integer humidity that changes
 * now and then, a battery draining by 0.01 %, a pressure walk in tenths of hPa.
 * Uplink ids: the legacy case gets today's random ids (engine/kernel/ids.ts newId), the compact case the
 * time-ordered ones (newUplinkId). Per column figures are compressed bytes per row; the total is
 * the parts' bytes on disk (columns, marks, primary index) per row.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'chdb';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { newId, newUplinkId } from '../engine/kernel/ids.ts';
import type { StateRow } from '../schemas/messages.ts';

const MINUTES = Number(process.env.BENCH_MINUTES ?? 500);
const DEVICES = 1000;
const ASSETS = ['temperature', 'humidity', 'battery', 'pressure'];
const T0 = Date.UTC(2026, 0, 1);
const BATCH_MINUTES = 10;

/** A small deterministic PRNG, so every case stores the same values. */
function prng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

interface DeviceState {
  phase: number;
  temperature: number;
  humidity: number;
  battery: number;
  pressure: number;
}

/** Yields batches of rows (BATCH_MINUTES minutes of the whole fleet), in receive order. */
function* fleet(ids: 'ordered' | 'random'): Generator<StateRow[]> {
  const random = prng(42);
  const devices: DeviceState[] = Array.from({ length: DEVICES }, () => ({
    phase: Math.floor(random() * 60_000),
    temperature: 1800 + Math.floor(random() * 600),
    humidity: 40 + Math.floor(random() * 30),
    battery: 10_000,
    pressure: 10_130 + Math.floor(random() * 100),
  }));
  const order = devices.map((_, d) => d).sort((a, b) => devices[a].phase - devices[b].phase);
  for (let m0 = 0; m0 < MINUTES; m0 += BATCH_MINUTES) {
    const rows: StateRow[] = [];
    for (let m = m0; m < Math.min(MINUTES, m0 + BATCH_MINUTES); m++) {
      for (const d of order) {
        const s = devices[d];
        s.temperature += Math.round((random() - 0.5) * 6);
        if (random() < 0.05) s.humidity += random() < 0.5 ? -1 : 1;
        s.battery -= 1;
        s.pressure += Math.round((random() - 0.5) * 3);
        const ts = T0 + m * 60_000 + s.phase;
        const receivedAt = ts + 80 + Math.floor(random() * 120);
        const uplinkId = ids === 'ordered' ? newUplinkId(receivedAt) : newId();
        const values = [s.temperature / 100, s.humidity, s.battery / 100, s.pressure / 10];
        for (let a = 0; a < ASSETS.length; a++) {
          rows.push({ deviceId: `device-${d}`, asset: ASSETS[a], ts, receivedAt, value: values[a], uplinkId });
        }
      }
    }
    yield rows;
  }
}

interface Case {
  label: string;
  database: string;
  legacyLayout: boolean;
  ids: 'ordered' | 'random';
}

const cases: Case[] = [
  { label: "today's layout (18.16 DDL, random ids)", database: 'bytes_legacy', legacyLayout: true, ids: 'random' },
  { label: 'compact layout (ordered ids)', database: 'bytes_compact', legacyLayout: false, ids: 'ordered' },
];
if (process.env.BENCH_RANDOM_IDS === '1') cases.push({ label: 'compact layout, random ids', database: 'bytes_compact_random', legacyLayout: false, ids: 'random' });

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const dir = mkdtempSync(join(tmpdir(), 'fleetstream-bytes-'));
console.log(`store bytes bench: ${fmt(MINUTES * DEVICES * ASSETS.length)} data points (${DEVICES} devices × ${ASSETS.length} assets × ${MINUTES} minutes), node ${process.version}`);
const results: Array<{ label: string; total: number; rawTotal: number }> = [];
try {
  for (const c of cases) {
    const store = createChdbStore({ dir, database: c.database, legacyLayout: c.legacyLayout });
    await store.init();
    let rows = 0;
    const started = performance.now();
    for (const batch of fleet(c.ids)) {
      await store.append(batch);
      rows += batch.length;
    }
    const insertMs = performance.now() - started;
    await store.close();
    const session = new Session(dir);
    const q = async (sql: string) => (await session.queryAsync(sql, { format: 'JSONEachRow' })).text().trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const onDisk = async () => Number((await q(`SELECT sum(bytes_on_disk) AS b FROM system.parts WHERE database = '${c.database}' AND table = 'states' AND active`))[0].b);
    const ingested = await onDisk();
    const mergeStart = performance.now();
    await session.queryAsync(`OPTIMIZE TABLE ${c.database}.states FINAL`);
    const mergeMs = performance.now() - mergeStart;
    const merged = await onDisk();
    const columns = await q(`SELECT name, sum(data_compressed_bytes) AS c, sum(data_uncompressed_bytes) AS u FROM system.columns WHERE database = '${c.database}' AND table = 'states' GROUP BY name ORDER BY c DESC`);
    session.close();
    console.log(`\n${c.label}: inserted ${fmt(rows)} rows at ${fmt(rows / (insertMs / 1000))} rows/s, merged in ${fmt(mergeMs)} ms`);
    console.log(`  bytes on disk per data point: ${(ingested / rows).toFixed(2)} as ingested, ${(merged / rows).toFixed(2)} after OPTIMIZE FINAL`);
    console.log(`  per column (compressed bytes per row): ${columns.map((col) => `${col.name} ${(Number(col.c) / rows).toFixed(2)}`).join(', ')}`);
    results.push({ label: c.label, total: merged / rows, rawTotal: columns.reduce((sum, col) => sum + Number(col.u), 0) / rows });
  }
  const base = results[0].total;
  console.log('\nsummary (after merges)');
  for (const r of results) console.log(`  ${r.label.padEnd(42)} ${r.total.toFixed(2).padStart(6)} B/point  ${(r.total / base).toFixed(2)}× of today's  (uncompressed ${r.rawTotal.toFixed(1)} B)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
