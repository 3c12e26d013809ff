/**
 * The three reads of the state store port, as SQL that runs on ClickHouse 18.16 and current
 * ClickHouse, and the decoding of their JSONEachRow rows; the same on both layouts (stateLayout.ts). Every read uses FINAL so rows re-appended
 * for the same uplink are folded before they are counted or returned (see stateTable.ts).
 *
 * Callers pass validated numbers; strings go through quoteString.
 */
import type { Bucket, Order, Resolution, StoredState } from '../../engine/ports/store.ts';
import type { JsonValue } from '../../schemas/messages.ts';
import { int64Literal, qualifiedTable, quoteString, type StateTableNames } from './stateTable.ts';

export const RESOLUTION_MS: Record<Resolution, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
};

/** A row as JSONEachRow gives it: Int64 may arrive quoted (18.16) or bare (chDB), hence Number(). */
type Row = Record<string, unknown>;

/**
 * The one order of an asset's states every read uses (engine/ports/store.ts): ts, then receive
 * time, then uplink id, then seq (readings of one uplink at one time, in item order). So the latest
 * of an asset is the same row whether it is read as latest(), as history's newest, or page by page
 * — whatever the order parts were merged in.
 */
export const STATE_ORDER = '(ts, received_at, uplink_id, seq)';

/** One entry per asset: the greatest row in STATE_ORDER. Sorted by asset. */
export function latestSql(names: StateTableNames, deviceId: string): string {
  const by = STATE_ORDER;
  return `SELECT asset AS a, argMax(ts, ${by}) AS t, argMax(received_at, ${by}) AS r, argMax(uplink_id, ${by}) AS u, argMax(seq, ${by}) AS q,
  argMax(value_kind, ${by}) AS k, argMax(value_number, ${by}) AS n, argMax(value_string, ${by}) AS s, argMax(value_bool, ${by}) AS b
FROM ${qualifiedTable(names)} FINAL
WHERE device_id = ${quoteString(deviceId)}
GROUP BY asset
ORDER BY asset`;
}

export interface HistorySqlInput {
  deviceId: string;
  asset: string;
  from: number | undefined;
  to: number | undefined;
  limit: number;
  order: Order;
}

/** `from` inclusive, `to` exclusive; ties on ts ordered by receive time, then uplink id, then seq, in the same direction (STATE_ORDER). */
export function historySql(names: StateTableNames, q: HistorySqlInput): string {
  const dir = q.order === 'asc' ? 'ASC' : 'DESC';
  return `SELECT asset AS a, ts AS t, received_at AS r, uplink_id AS u, seq AS q, value_kind AS k, value_number AS n, value_string AS s, value_bool AS b
FROM ${qualifiedTable(names)} FINAL
WHERE ${keyRange(q.deviceId, q.asset, q.from, q.to)}
ORDER BY ts ${dir}, received_at ${dir}, uplink_id ${dir}, seq ${dir}
LIMIT ${q.limit}`;
}

/**
 * Buckets aligned to the epoch in UTC (floor, also for negative ts). Only buckets holding rows are
 * returned, oldest first. `count` counts every state; min/max/avg cover kind 'number' only.
 * The divisor is cast to Int64 on purpose: on 18.16 `Int64 % 60000` is typed Int16 and overflows.
 */
export function aggregateSql(names: StateTableNames, q: { deviceId: string; asset: string; from: number; to: number; resolution: Resolution }): string {
  const size = int64Literal(RESOLUTION_MS[q.resolution]);
  return `SELECT ts - ((ts % ${size}) + ${size}) % ${size} AS start, count() AS c, countIf(value_kind = 'number') AS nc,
  minIf(value_number, value_kind = 'number') AS mn, maxIf(value_number, value_kind = 'number') AS mx, avgIf(value_number, value_kind = 'number') AS av
FROM ${qualifiedTable(names)} FINAL
WHERE ${keyRange(q.deviceId, q.asset, q.from, q.to)}
GROUP BY start
ORDER BY start`;
}

function keyRange(deviceId: string, asset: string, from: number | undefined, to: number | undefined): string {
  let where = `device_id = ${quoteString(deviceId)} AND asset = ${quoteString(asset)}`;
  if (from !== undefined) where += ` AND ts >= ${int64Literal(from)}`;
  if (to !== undefined) where += ` AND ts < ${int64Literal(to)}`;
  return where;
}

export function decodeStoredState(row: Row): StoredState {
  return {
    asset: String(row.a),
    ts: Number(row.t),
    receivedAt: Number(row.r),
    value: decodeValue(row),
    uplinkId: String(row.u),
    seq: Number(row.q),
  };
}

function decodeValue(row: Row): JsonValue {
  const text = String(row.s);
  switch (row.k) {
    case 'number':
      // The exact decimal text when this store wrote the row; the Float64 when someone else did.
      return text === '' ? Number(row.n) : Number(text);
    case 'string':
      return text;
    case 'boolean':
      return Number(row.b) !== 0;
    case 'json':
      return JSON.parse(text) as JsonValue;
    default:
      return null;
  }
}

export function decodeBucket(row: Row): Bucket {
  const numbers = Number(row.nc);
  return {
    start: Number(row.start),
    count: Number(row.c),
    min: numbers === 0 ? null : Number(row.mn),
    max: numbers === 0 ? null : Number(row.mx),
    avg: numbers === 0 ? null : Number(row.av),
  };
}
