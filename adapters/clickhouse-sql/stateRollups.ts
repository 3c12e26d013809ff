/**
 * Per-minute and per-hour rollups of the states table (compact layout only): per device, asset and
 * bucket the count of states and, over numbers, their count, min, max, sum, first and last.
 *
 * Why not a materialized view: a view aggregates each insert block as it comes, and a replayed
 * uplink re-inserts rows the raw table folds (ReplacingMergeTree + FINAL) but a view would count
 * again. So the store refreshes rollups itself after each append, from the raw table read with
 * FINAL, for the minute ranges (of the devices, when few) the append touched: a replay recomputes the same buckets
 * to the same answer. Hours are refreshed from the minute rollup. The cost of a refresh is the rows
 * already in the touched buckets: about the append itself for devices reading once a minute, up to
 * 60 minute rows per device and asset for the hour (pipeline bench: ~60-100 ms per 40 000 rows). Rollup rows are
 * ReplacingMergeTree on a version that grows with each refresh; a store serialises its refreshes,
 * so a later version was computed from a later (never smaller) set of raw rows. Two processes
 * refreshing the same bucket at once may leave the older answer until the next append touching it.
 *
 * Sums of Float64 depend on the order of addition: a rollup's avg can differ from a raw scan's in
 * the last bits (as two raw scans can, aggregated on different threads); counts, min, max, first
 * and last are exact.
 */
import type { Resolution } from '../../engine/ports/store.ts';
import type { StateRow } from '../../schemas/messages.ts';
import { int64Literal, quoteString, type StateTableNames } from './stateTable.ts';
import { STATE_ORDER } from './stateQueries.ts';

export const ROLLUPS = [
  { suffix: 'minute', size: 60_000 },
  { suffix: 'hour', size: 3_600_000 },
] as const;
export type Rollup = (typeof ROLLUPS)[number];

const qualified = (names: StateTableNames, rollup: Rollup) => `\`${names.database}\`.\`${names.table}_${rollup.suffix}\``;

/** Epoch-aligned bucket start (floor, also for negative ts); the divisor is Int64 (see stateQueries.ts). */
const bucketOf = (column: string, size: number) => `${column} - ((${column} % ${int64Literal(size)}) + ${int64Literal(size)}) % ${int64Literal(size)}`;
const floorTo = (t: number, size: number) => t - ((t % size) + size) % size;

export function rollupTableName(names: StateTableNames, rollup: Rollup): string {
  return `${names.table}_${rollup.suffix}`;
}

/** Minutes are partitioned by day, as the states table, since the hour refresh reads them by time range. */
export function createRollupSql(names: StateTableNames, rollup: Rollup): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(names, rollup)} (
  device_id LowCardinality(String),
  asset LowCardinality(String),
  bucket Int64 CODEC(DoubleDelta, ZSTD(1)),
  states UInt64 CODEC(T64, ZSTD(1)),
  numbers UInt64 CODEC(T64, ZSTD(1)),
  min Float64 CODEC(ZSTD(1)),
  max Float64 CODEC(ZSTD(1)),
  sum Float64 CODEC(ZSTD(1)),
  first Float64 CODEC(ZSTD(1)),
  last Float64 CODEC(ZSTD(1)),
  version UInt64 CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree(version)${rollup.suffix === 'minute' ? '\nPARTITION BY intDiv(bucket, 86400000)' : ''}
ORDER BY (device_id, asset, bucket)`;
}

/** What one append touched: its devices (a quoted list, or undefined for all) and its minute buckets as ranges. */
export interface Touched {
  devices: string | undefined;
  /** [from, to) ranges of ts, minute-aligned, disjoint, ascending. */
  ranges: Array<[number, number]>;
}

/**
 * An append of a few devices names them, so the refresh reads only their granules (the sorting key
 * starts with device_id). A large one (the usual engine batch spans the fleet) reads every device in
 * the touched minutes instead: parsing a list of 10 000 ids costs more than reading the minutes,
 * and a list that size would pass the server's max_query_size (256 KiB).
 */
const MAX_LISTED_DEVICES = 500;

export function touchedBy(rows: readonly StateRow[]): Touched {
  const devices = new Set<string>();
  const minutes = new Set<number>();
  for (const row of rows) {
    if (devices.size <= MAX_LISTED_DEVICES) devices.add(row.deviceId);
    minutes.add(floorTo(row.ts, 60_000));
  }
  const listed = devices.size <= MAX_LISTED_DEVICES ? [...devices].map(quoteString).join(', ') : undefined;
  return { devices: listed !== undefined && listed.length < 100_000 ? listed : undefined, ranges: ranges(minutes) };
}

function ranges(minutes: Set<number>): Array<[number, number]> {
  const sorted = [...minutes].sort((a, b) => a - b);
  const ranges: Array<[number, number]> = [];
  for (const m of sorted) {
    const last = ranges.at(-1);
    // Gaps of up to an hour are bridged: fewer ranges to test, little extra to read.
    if (last && m - last[1] <= 3_600_000) last[1] = m + 60_000;
    else ranges.push([m, m + 60_000]);
  }
  return ranges;
}

/** The WHERE clause for what was touched; none (every row) for a backfill. */
function where(column: string, touched: Touched | undefined, ranges = touched?.ranges): string {
  if (touched === undefined || ranges === undefined) return '';
  const times = ranges.map(([from, to]) => `(${column} >= ${int64Literal(from)} AND ${column} < ${int64Literal(to)})`).join(' OR ');
  return touched.devices === undefined ? `\nWHERE ${times}` : `\nWHERE device_id IN (${touched.devices}) AND (${times})`;
}

/**
 * Refreshes run on compact servers only (19.6+), which take SETTINGS in a query. A refresh writes
 * the minute partitions of every day it touched: a backfill or an append spread over years of `at`
 * passes the default limit of 100 partitions per insert, which guards against a bad partition key,
 * not against this.
 */
const ANY_PARTITIONS = 'SETTINGS max_partitions_per_insert_block = 0';

/** Recomputes the touched minute buckets (every one when `touched` is undefined) from the raw table. */
export function refreshMinutesSql(names: StateTableNames, touched: Touched | undefined, version: number): string {
  const by = STATE_ORDER;
  const isNumber = "value_kind = 'number'";
  return `INSERT INTO ${qualified(names, ROLLUPS[0])} (device_id, asset, bucket, states, numbers, min, max, sum, first, last, version)
SELECT device_id, asset, ${bucketOf('ts', 60_000)} AS b, count(), countIf(${isNumber}), minIf(value_number, ${isNumber}),
  maxIf(value_number, ${isNumber}), sumIf(value_number, ${isNumber}), argMinIf(value_number, ${by}, ${isNumber}),
  argMaxIf(value_number, ${by}, ${isNumber}), ${version}
FROM \`${names.database}\`.\`${names.table}\` FINAL${where('ts', touched)}
GROUP BY device_id, asset, b
${ANY_PARTITIONS}`;
}

/** Recomputes the hours holding the touched minutes (every hour when undefined) from the minute rollup. */
export function refreshHoursSql(names: StateTableNames, touched: Touched | undefined, version: number): string {
  const hours = touched?.ranges.map(([from, to]): [number, number] => [floorTo(from, 3_600_000), floorTo(to - 1, 3_600_000) + 3_600_000]);
  return `INSERT INTO ${qualified(names, ROLLUPS[1])} (device_id, asset, bucket, states, numbers, min, max, sum, first, last, version)
SELECT device_id, asset, ${bucketOf('bucket', 3_600_000)} AS b, sum(states), sum(numbers), minIf(min, numbers > 0),
  maxIf(max, numbers > 0), sum(sum), argMinIf(first, bucket, numbers > 0), argMaxIf(last, bucket, numbers > 0), ${version}
FROM ${qualified(names, ROLLUPS[0])} FINAL${where('bucket', touched, hours)}
GROUP BY device_id, asset, b`;
}

/**
 * The coarsest rollup whose buckets tile both the resolution's buckets and [from, to) exactly, or
 * undefined (read raw rows).
 */
export function rollupFor(resolutionMs: number, from: number, to: number): Rollup | undefined {
  for (let i = ROLLUPS.length - 1; i >= 0; i--) {
    const { size } = ROLLUPS[i];
    if (resolutionMs % size === 0 && floorTo(from, size) === from && floorTo(to, size) === to) return ROLLUPS[i];
  }
  return undefined;
}

/** The aggregate API's answer from a rollup; same columns as stateQueries.ts aggregateSql. */
export function rollupAggregateSql(
  names: StateTableNames,
  rollup: Rollup,
  q: { deviceId: string; asset: string; from: number; to: number; resolution: Resolution; resolutionMs: number },
): string {
  return `SELECT ${bucketOf('bucket', q.resolutionMs)} AS start, sum(states) AS c, sum(numbers) AS nc,
  minIf(min, numbers > 0) AS mn, maxIf(max, numbers > 0) AS mx, sum(sum) / sum(numbers) AS av
FROM ${qualified(names, rollup)} FINAL
WHERE device_id = ${quoteString(q.deviceId)} AND asset = ${quoteString(q.asset)} AND bucket >= ${int64Literal(q.from)} AND bucket < ${int64Literal(q.to)}
GROUP BY start
ORDER BY start`;
}
