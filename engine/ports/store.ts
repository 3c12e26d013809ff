/**
 * State store port: append timestamped states, query history. Implemented by adapters/chdb
 * (embedded default) and adapters/clickhouse (server); both pass test/contracts/store.contract.ts.
 * The same SQL runs on both (DESIGN.md §2: ClickHouse 18.16 and current ClickHouse).
 */
import type { JsonValue, StateRow } from '../../schemas/messages.ts';

export type Order = 'asc' | 'desc';
export type Resolution = 'minute' | 'hour' | 'day';

export interface HistoryQuery {
  deviceId: string;
  asset: string;
  /** Inclusive lower bound of `ts`, epoch ms. */
  from?: number;
  /** Exclusive upper bound of `ts`, epoch ms. */
  to?: number;
  /** Maximum rows, default 100. */
  limit?: number;
  /**
   * By `ts`, default 'desc' (newest first); ties on ts by receivedAt, then uplinkId, then seq (the
   * readings of one uplink at one time, in the order the uplink held them), in the same direction —
   * the order latest() picks by, so the newest of history is the latest.
   */
  order?: Order;
}

export interface AggregateQuery {
  deviceId: string;
  asset: string;
  from: number;
  to: number;
  resolution: Resolution;
}

export interface Bucket {
  /** Bucket start, epoch ms. */
  start: number;
  count: number;
  /** Over numeric values only; null when the bucket holds none. */
  min: number | null;
  max: number | null;
  avg: number | null;
}

export interface StoredState {
  asset: string;
  ts: number;
  receivedAt: number;
  value: JsonValue;
  uplinkId: string;
  /** StateRow.seq (0 when the row had none): which reading of its uplink at this asset and ts. */
  seq: number;
}

export interface StateStore {
  /** Creates tables when missing (idempotent). */
  init(): Promise<void>;
  /**
   * Appends rows; resolves when they are durable. Appending rows of an uplink id already stored
   * (same asset, ts and seq) must not make any query show them twice; rows of one uplink that
   * differ only in seq are distinct readings, all kept.
   */
  append(rows: readonly StateRow[]): Promise<void>;
  /** Latest state per asset of a device: one entry per asset, the greatest by (ts, receivedAt, uplinkId, seq). */
  latest(deviceId: string): Promise<StoredState[]>;
  history(query: HistoryQuery): Promise<StoredState[]>;
  aggregate(query: AggregateQuery): Promise<Bucket[]>;
  close(): Promise<void>;
}
