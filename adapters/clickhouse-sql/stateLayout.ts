/**
 * The two layouts of the states table (DESIGN.md §9) and what differs between them for writers.
 * Readers see the same columns in both (the compact one derives the legacy columns as ALIAS), so
 * queries are the same SQL on both (stateQueries.ts).
 *
 * - legacy: the 18.16 table of stateTable.ts, kept as is wherever it already exists.
 * - compact: the same rows in types a time-series store would choose (bench/store-bytes.bench.ts:
 *   1.2 bytes per data point after merges for 10 M states, against 21 for the legacy table).
 *   - `ts` DoubleDelta: readings on a schedule leave second differences near zero.
 *   - `received_lag` = received_at - ts, T64: the network's few bits of jitter, where received_at
 *     itself repeats all of ts's bits. `received_at` is an ALIAS, so SQL reads it as before.
 *   - numbers as a decimal mantissa (Delta) and scale: a reading like 21.37 is 2137 and 2, whose
 *     differences take a few bits, where a Float64's decimal-looking mantissa takes five bytes
 *     under any codec. Values with no short decimal form go whole to `value_float`. `value_number`
 *     is an ALIAS that divides them back: m / 10^k is one correctly rounded division, so it is the
 *     same double the row was appended with (encodeStateRowsTsv.ts checks it before choosing).
 *   - device id and asset LowCardinality: the sort key keeps each in long runs of one dictionary
 *     key; a per-part dictionary copes with a fleet's many device ids.
 *   - the uplink id as the receive time plus `uplink_low`, the 20 bits below the time of an id
 *     made by engine/kernel/ids.ts newUplinkId; any other id goes verbatim to `uplink_text`. Both halves
 *     are in the sorting key, so a replayed uplink (same id, same receive time) folds exactly as on
 *     the legacy table.
 *   - `seq` last in the sorting key, as on the legacy table (stateTable.ts): almost always 0.
 *   `retentionDays` adds a TTL on `ts`: rows older than that many days are dropped during merges.
 *   Partitioned by day of `ts`: the rollup refresh (stateRollups.ts) reads the touched minutes of
 *   every device, which without partitions means the `ts` column of the whole table on every
 *   append. Replays still fold: equal keys have equal `ts`, so they share a partition. An insert may
 *   touch at most 100 partitions (max_partitions_per_insert_block), so appends are cut by day first
 *   (insertGroups).
 */
import type { StateRow } from '../../schemas/messages.ts';
import { encodeCompactStateRowsTsv, encodeStateRowsTsv, FLOAT_SCALE } from './encodeStateRowsTsv.ts';
import { encodeStateRowsRowBinary } from './encodeStateRowsRowBinary.ts';
import { encodeCompactStateRowsRowBinary } from './encodeCompactStateRowsRowBinary.ts';
import { createTableSql, qualifiedTable, STATE_COLUMNS, type StateTableNames } from './stateTable.ts';

export interface StateLayout {
  readonly kind: 'legacy' | 'compact';
  /** Insert column order of encode() and encodeRowBinary(). */
  readonly columns: readonly string[];
  /** The type of each column as RowBinary carries it (LowCardinality(String) travels as String). */
  readonly rowBinaryTypes: readonly string[];
  /** TabSeparated. */
  encode(rows: readonly StateRow[]): Buffer;
  /** RowBinary: the same stored values (numbers bit for bit), without text for the engine to parse. */
  encodeRowBinary(rows: readonly StateRow[]): Buffer;
}

const VALUE_KIND_TYPE = "Enum8('null' = 0, 'number' = 1, 'string' = 2, 'boolean' = 3, 'json' = 4)";

export const LEGACY_LAYOUT: StateLayout = {
  kind: 'legacy',
  columns: STATE_COLUMNS,
  rowBinaryTypes: ['String', 'String', 'Int64', 'String', 'Int64', VALUE_KIND_TYPE, 'Float64', 'String', 'UInt8', 'UInt16'],
  encode: encodeStateRowsTsv,
  encodeRowBinary: encodeStateRowsRowBinary,
};

export const COMPACT_COLUMNS = [
  'device_id',
  'asset',
  'ts',
  'received_lag',
  'uplink_low',
  'uplink_text',
  'value_kind',
  'value_mantissa',
  'value_scale',
  'value_float',
  'value_string',
  'value_bool',
  'seq',
] as const;

const COMPACT_ROW_BINARY_TYPES = ['String', 'String', 'Int64', 'Int64', 'UInt32', 'String', VALUE_KIND_TYPE, 'Int64', 'UInt8', 'Float64', 'String', 'UInt8', 'UInt16'] as const;

/** `keepText`: keep the decimal text of Float64-stored numbers in value_string (a server that parses floats inexactly). */
export function compactLayout(keepText: boolean): StateLayout {
  return {
    kind: 'compact',
    columns: COMPACT_COLUMNS,
    rowBinaryTypes: COMPACT_ROW_BINARY_TYPES,
    encode: (rows) => encodeCompactStateRowsTsv(rows, keepText),
    encodeRowBinary: (rows) => encodeCompactStateRowsRowBinary(rows, keepText),
  };
}

const DAY_MS = 86_400_000;
const MAX_DAYS_PER_INSERT = 100;

/** The rows of one append in inserts that each touch at most 100 daily partitions (usually one insert). */
export function insertGroups(rows: readonly StateRow[]): (readonly StateRow[])[] {
  // Usually every row is within a few days of the others: one pass over ts, no map of days.
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < rows.length; i++) {
    const ts = rows[i].ts;
    if (ts < first) first = ts;
    if (ts > last) last = ts;
  }
  if (Math.floor(last / DAY_MS) - Math.floor(first / DAY_MS) < MAX_DAYS_PER_INSERT) return [rows];
  const byDay = new Map<number, StateRow[]>();
  for (const row of rows) {
    const day = Math.floor(row.ts / DAY_MS);
    let group = byDay.get(day);
    if (group === undefined) byDay.set(day, (group = []));
    group.push(row);
  }
  if (byDay.size <= MAX_DAYS_PER_INSERT) return [rows];
  const groups: StateRow[][] = [];
  let count = 0;
  for (const group of byDay.values()) {
    if (count++ % MAX_DAYS_PER_INSERT === 0) groups.push([]);
    groups[groups.length - 1].push(...group);
  }
  return groups;
}

/** hex() of a UInt64 at or above 2^56 is exactly the 16 digits newUplinkId wrote. */
const UPLINK_ID_EXPRESSION = "if(uplink_text = '', hex(bitOr(bitShiftLeft(toUInt64(ts + received_lag), 20), toUInt64(uplink_low))), uplink_text)";

export interface CompactTableOptions {
  /** Days to keep states by `ts`; none (keep forever) when undefined. */
  retentionDays?: number;
}

export function createCompactTableSql(names: StateTableNames, options: CompactTableOptions = {}): string {
  const ttl = options.retentionDays === undefined ? '' : `\nTTL toDateTime(intDiv(ts, 1000)) + INTERVAL ${retention(options.retentionDays)} DAY`;
  return `CREATE TABLE IF NOT EXISTS ${qualifiedTable(names)} (
  device_id LowCardinality(String),
  asset LowCardinality(String),
  ts Int64 CODEC(DoubleDelta, ZSTD(1)),
  received_lag Int64 CODEC(T64, ZSTD(1)),
  received_at Int64 ALIAS ts + received_lag,
  uplink_low UInt32 CODEC(ZSTD(1)),
  uplink_text String CODEC(ZSTD(1)),
  uplink_id String ALIAS ${UPLINK_ID_EXPRESSION},
  value_kind ${VALUE_KIND_TYPE} CODEC(ZSTD(1)),
  value_mantissa Int64 CODEC(Delta, ZSTD(1)),
  value_scale UInt8 CODEC(ZSTD(1)),
  value_float Float64 CODEC(Gorilla, ZSTD(1)),
  value_number Float64 ALIAS if(value_scale = ${FLOAT_SCALE}, value_float, value_mantissa / toFloat64(intExp10(value_scale))),
  value_string String CODEC(ZSTD(1)),
  value_bool UInt8 CODEC(ZSTD(1)),
  seq UInt16 CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree()
PARTITION BY intDiv(ts, 86400000)
ORDER BY (device_id, asset, ts, received_lag, uplink_low, uplink_text, seq)${ttl}`;
}

function retention(days: number): number {
  if (!Number.isSafeInteger(days) || days < 1) throw new TypeError(`retentionDays must be a positive integer (got ${days})`);
  return days;
}

/** The layout DDL for a server: compact where its types exist, 18.16's otherwise. */
export function createStateTableSql(names: StateTableNames, compact: boolean, options: CompactTableOptions = {}): string {
  return compact ? createCompactTableSql(names, options) : createTableSql(names);
}

/** Which layout an existing table has: the compact one is the only one with an `uplink_text` column. */
export function tableColumnsSql(names: StateTableNames): string {
  return `SELECT name FROM system.columns WHERE database = '${names.database}' AND table = '${names.table}'`;
}
