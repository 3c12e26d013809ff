/**
 * Aggregate latency on the embedded store: answered from the rollups (stateRollups.ts) beside the
 * same query scanning raw states, both measured in the same run on the same rows. Not part of the
 * test suite.
 *
 *   npx node bench/store-aggregates.bench.ts                      fleet of 1,000 devices × 4 assets × 500 minutes
 *   BENCH_MINUTES=2500 npx node bench/store-aggregates.bench.ts   10 M fleet states
 *
 * Rows: one device's temperature for a whole year at one reading a minute (525,600 states) plus a
 * fleet of 1,000 devices × 4 assets reading once a minute. Queries, 20 rounds each, p50 and p90:
 * - the aggregate API: that year of one device's asset in hourly buckets;
 * - analyst SQL: per-day statistics over all devices of one asset (docs/analytics.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import type { SqlStateStore } from '../adapters/clickhouse-sql/createSqlStateStore.ts';
import { newUplinkId } from '../engine/kernel/ids.ts';
import type { StateRow } from '../schemas/messages.ts';

const MINUTES = Number(process.env.BENCH_MINUTES ?? 500);
const DEVICES = 1000;
const ASSETS = ['temperature', 'humidity', 'battery', 'pressure'];
const T0 = Date.UTC(2025, 0, 1);
const YEAR_MINUTES = 365 * 24 * 60;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

function* yearOfOneDevice(): Generator<StateRow[]> {
  for (let m0 = 0; m0 < YEAR_MINUTES; m0 += 40_000) {
    const rows: StateRow[] = [];
    for (let m = m0; m < Math.min(YEAR_MINUTES, m0 + 40_000); m++) {
      const ts = T0 + m * 60_000;
      rows.push({ deviceId: 'year-device', asset: 'temperature', ts, receivedAt: ts + 120, value: Math.round(2000 + Math.sin(m / 500) * 800) / 100, uplinkId: newUplinkId(ts + 120) });
    }
    yield rows;
  }
}

function* fleet(): Generator<StateRow[]> {
  for (let m0 = 0; m0 < MINUTES; m0 += 10) {
    const rows: StateRow[] = [];
    for (let m = m0; m < Math.min(MINUTES, m0 + 10); m++) {
      for (let d = 0; d < DEVICES; d++) {
        const ts = T0 + m * 60_000 + d * 37;
        const id = newUplinkId(ts + 150);
        ASSETS.forEach((asset, a) => rows.push({ deviceId: `device-${d}`, asset, ts, receivedAt: ts + 150, value: Math.round((20 + a * 10 + Math.sin((m + d) / 30) * 5) * 100) / 100, uplinkId: id }));
      }
    }
    yield rows;
  }
}

async function fill(store: SqlStateStore): Promise<number> {
  const started = performance.now();
  let rows = 0;
  for (const source of [yearOfOneDevice(), fleet()]) {
    for (const batch of source) {
      await store.append(batch);
      rows += batch.length;
    }
  }
  return rows / ((performance.now() - started) / 1000);
}

async function timed(label: string, run: () => Promise<unknown>): Promise<number> {
  await run(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  console.log(`  ${label.padEnd(58)} p50 ${times[10].toFixed(1).padStart(7)} ms  p90 ${times[18].toFixed(1).padStart(7)} ms`);
  return times[10];
}

const dailyAllDevicesRollup = `SELECT bucket - bucket % 86400000 AS day, sum(states) AS states, min(min) AS min, max(max) AS max, sum(sum) / sum(numbers) AS avg
FROM fleetstream.states_hour FINAL WHERE asset = 'temperature' AND numbers > 0 GROUP BY day ORDER BY day`;
const dailyAllDevicesRaw = `SELECT ts - ts % 86400000 AS day, count() AS states, minIf(value_number, value_kind = 'number') AS min,
  maxIf(value_number, value_kind = 'number') AS max, avgIf(value_number, value_kind = 'number') AS avg
FROM fleetstream.states FINAL WHERE asset = 'temperature' GROUP BY day ORDER BY day`;

console.log(`store aggregates bench: one device-asset × ${fmt(YEAR_MINUTES)} minutes + ${fmt(DEVICES * ASSETS.length * MINUTES)} fleet states, node ${process.version}`);
const dir = mkdtempSync(join(tmpdir(), 'fleetstream-aggregates-'));
try {
  const store = createChdbStore({ dir, rollups: true });
  await store.init();
  console.log(`filled at ${fmt(await fill(store))} states/s (rollups refreshed beside the appends)`);
  // Until refreshed, an aggregate over the minutes just appended reads raw states.
  await store.rollupsCaughtUp();
  const year = { deviceId: 'year-device', asset: 'temperature', from: T0, to: T0 + YEAR_MINUTES * 60_000, resolution: 'hour' as const };
  const rolled = await timed('year of one device-asset, hourly: hour rollup', () => store.aggregate(year));
  // A range one millisecond off the hour cannot be tiled by a rollup: the store scans raw states.
  const raw = await timed('year of one device-asset, hourly: raw scan', () => store.aggregate({ ...year, from: T0 - 1 }));
  const dailyRolled = await timed('per day, all devices of an asset: hour rollup', () => store.query(dailyAllDevicesRollup));
  const dailyRaw = await timed('per day, all devices of an asset: raw scan', () => store.query(dailyAllDevicesRaw));
  console.log(`ratios rollup/raw: year hourly ${(rolled / raw).toFixed(2)}, daily all devices ${(dailyRolled / dailyRaw).toFixed(2)}`);
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
