/**
 * Per-minute, per-hour and per-day rollups of the states table, on both layouts: per device, asset
 * and bucket the count of states and, over numbers, their count, min, max, sum, first and last.
 *
 * Why not a materialized view: a view aggregates each insert block as it comes, and a replayed
 * uplink re-inserts rows the raw table folds (ReplacingMergeTree + FINAL) but a view would count
 * again. 18.16's AggregatingMergeTree behind a view has the same flaw (its states merge, they never
 * replace). So the store refreshes rollups itself, from the raw table read with FINAL, for the
 * minute ranges (of the devices, when few) appends touched: a replay recomputes the same buckets to
 * the same answer. The refresh runs beside the appends, every few seconds (rollupRefresh.ts), so its
 * cost is paid once per bucket per refresh rather than once per append. Hours are refreshed from the
 * minute rollup, days from the hour rollup. Rollup rows are ReplacingMergeTree on a version that
 * grows with each refresh; a store serialises its refreshes, so a later version was computed from a
 * later (never smaller) set of raw rows. Two processes refreshing the same bucket at once may leave
 * the older answer until the next append touching it.
 *
 * The same SQL runs on 18.16 (ClickHouse server of the distributed deployment) and on the compact
 * servers; only the DDL differs (no codecs, no LowCardinality on 18.16), and the refresh's SETTINGS,
 * which 18.16 neither has nor needs (it has no partitions-per-insert limit).
 *
 * Sums of Float64 depend on the order of addition: a rollup's avg can differ from a raw scan's in
 * the last bits (as two raw scans can, aggregated on different threads); counts, min, max, first
 * and last are exact.
 */
import type { Resolution } from '../../engine/ports/store.ts';
import { int64Literal, quoteString, type StateTableNames } from './stateTable.ts';
import { STATE_ORDER } from './stateQueries.ts';

export const ROLLUPS = [
  { suffix: 'minute', size: 60_000 },
  { suffix: 'hour', size: 3_600_000 },
  { suffix: 'day', size: 86_400_000 },
] as const;
export type Rollup = (typeof ROLLUPS)[number];

const qualified = (names: StateTableNames, rollup: Rollup) => `\`${names.database}\`.\`${names.table}_${rollup.suffix}\``;

/** Epoch-aligned bucket start (floor, also for negative ts); the divisor is Int64 (see stateQueries.ts). */
const bucketOf = (column: string, size: number) => `${column} - ((${column} % ${int64Literal(size)}) + ${int64Literal(size)}) % ${int64Literal(size)}`;
export const floorTo = (t: number, size: number) => t - ((t % size) + size) % size;

export function rollupTableName(names: StateTableNames, rollup: Rollup): string {
  return `${names.table}_${rollup.suffix}`;
}

/**
 * `compact`: the states table has the compact layout (a 19.6+ server or chDB). There minutes are
 * partitioned by day, as the states table, since the coarser refreshes read them by time range. In
 * plain types (18.16's layout) they are not, as the states table is not: 18.16 opens a writer per
 * partition an insert touches, and a backfill or an append spread over 250 days of `at` then
 * needs more than its 2 GB per query.
 */
export function createRollupSql(names: StateTableNames, rollup: Rollup, compact: boolean): string {
  const codec = (c: string) => (compact ? ` CODEC(${c}, ZSTD(1))` : '');
  const zstd = compact ? ' CODEC(ZSTD(1))' : '';
  const key = compact ? 'LowCardinality(String)' : 'String';
  return `CREATE TABLE IF NOT EXISTS ${qualified(names, rollup)} (
  device_id ${key},
  asset ${key},
  bucket Int64${codec('DoubleDelta')},
  states UInt64${codec('T64')},
  numbers UInt64${codec('T64')},
  min Float64${zstd},
  max Float64${zstd},
  sum Float64${zstd},
  first Float64${zstd},
  last Float64${zstd},
  version UInt64${zstd}
) ENGINE = ReplacingMergeTree(version)${compact && rollup.suffix === 'minute' ? '\nPARTITION BY intDiv(bucket, 86400000)' : ''}
ORDER BY (device_id, asset, bucket)`;
}

/** What a refresh recomputes: devices (a quoted list, or undefined for all) and minute buckets as ranges. */
export interface Touched {
  devices: string | undefined;
  /** [from, to) ranges of ts, minute-aligned, disjoint, ascending. */
  ranges: Array<[number, number]>;
}

/**
 * A refresh of a few devices' minutes names them, so it reads only their granules (the sorting key
 * starts with device_id). One of more (the usual engine batch spans the fleet) reads every device in
 * the touched minutes instead: parsing a list of 10 000 ids costs more than reading the minutes,
 * and a list that size would pass the server's max_query_size (256 KiB; 500 ids of at most 64
 * characters stay under 40 KiB).
 */
export const MAX_LISTED_DEVICES = 500;

/** Minute starts as [from, to) ranges, disjoint and ascending. */
export function minuteRanges(minutes: Iterable<number>): Array<[number, number]> {
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
 * A refresh writes the minute partitions of every day it touched (compact layout): a backfill or an
 * append spread over years of `at` passes the default limit of 100 partitions per insert, which
 * guards against a bad partition key, not against this. The plain layout's rollups have no
 * partitions (and 18.16 neither the limit nor the setting).
 */
const anyPartitions = (compact: boolean) => (compact ? '\nSETTINGS max_partitions_per_insert_block = 0' : '');

/** Recomputes the touched minute buckets (every one when `touched` is undefined) from the raw table. */
export function refreshMinutesSql(names: StateTableNames, touched: Touched | undefined, version: number, compact = true): string {
  const by = STATE_ORDER;
  const isNumber = "value_kind = 'number'";
  return `INSERT INTO ${qualified(names, ROLLUPS[0])} (device_id, asset, bucket, states, numbers, min, max, sum, first, last, version)
SELECT device_id, asset, ${bucketOf('ts', 60_000)} AS b, count(), countIf(${isNumber}), minIf(value_number, ${isNumber}),
  maxIf(value_number, ${isNumber}), sumIf(value_number, ${isNumber}), argMinIf(value_number, ${by}, ${isNumber}),
  argMaxIf(value_number, ${by}, ${isNumber}), ${version}
FROM \`${names.database}\`.\`${names.table}\` FINAL${where('ts', touched)}
GROUP BY device_id, asset, b${anyPartitions(compact)}`;
}

/**
 * Recomputes the buckets of `rollup` (hour, day) holding the touched minutes (every bucket when
 * undefined) from the next finer rollup.
 */
export function refreshCoarserSql(names: StateTableNames, rollup: Rollup, touched: Touched | undefined, version: number): string {
  const finer = ROLLUPS[ROLLUPS.indexOf(rollup) - 1];
  const size = rollup.size;
  const spans = touched?.ranges.map(([from, to]): [number, number] => [floorTo(from, size), floorTo(to - 1, size) + size]);
  return `INSERT INTO ${qualified(names, rollup)} (device_id, asset, bucket, states, numbers, min, max, sum, first, last, version)
SELECT device_id, asset, ${bucketOf('bucket', size)} AS b, sum(states), sum(numbers), minIf(min, numbers > 0),
  maxIf(max, numbers > 0), sum(sum), argMinIf(first, bucket, numbers > 0), argMaxIf(last, bucket, numbers > 0), ${version}
FROM ${qualified(names, finer)} FINAL${where('bucket', touched, spans)}
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
