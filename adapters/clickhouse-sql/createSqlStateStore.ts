/**
 * The StateStore shared by the chDB and ClickHouse server adapters: all SQL, encoding and
 * validation live here; an adapter only supplies a SqlExecutor that moves text to an engine and maps
 * the engine's errors to FleetError.
 */
import { checkStateRows } from '../../engine/uplink/pipeline/checkStateRows.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { AggregateQuery, Bucket, HistoryQuery, StateStore, StoredState } from '../../engine/ports/store.ts';
import type { StateRow } from '../../schemas/messages.ts';
import type { RejectionStore } from '../../engine/ports/rejections.ts';
import { createSqlRejectionStore } from './createSqlRejectionStore.ts';
import type { CommandHistory } from '../../engine/ports/commandHistory.ts';
import { createSqlCommandHistory } from './createSqlCommandHistory.ts';
import { encodeStateRowsTsv } from './encodeStateRowsTsv.ts';
import { aggregateSql, decodeBucket, decodeStoredState, historySql, latestSql, RESOLUTION_MS } from './stateQueries.ts';
import { checkIdentifier, createDatabaseSql, createTableSql, STATE_COLUMNS, type StateTableNames } from './stateTable.ts';

/** What an adapter provides. Every method rejects with a FleetError. */
export interface SqlExecutor {
  /** A statement without a result (DDL). */
  command(sql: string): Promise<void>;
  /** A SELECT written without FORMAT; returns its rows as JSONEachRow objects. */
  select(sql: string): Promise<Record<string, unknown>[]>;
  /** Inserts a TabSeparated payload; resolves once the engine has committed it. */
  insertTsv(table: string, columns: readonly string[], payload: Buffer): Promise<void>;
  close(): Promise<void>;
}

export interface SqlStateStoreOptions {
  /** Database holding the states table; created by init(). Default 'fleetstream'. */
  database?: string;
  /** Table name. Default 'states'. */
  table?: string;
  /** Default history limit when a query names none. Default 100 (port contract). */
  defaultLimit?: number;
  /** Largest history limit accepted; larger ones fail VALIDATION_FAILED. Default 10 000 rows. */
  maxLimit?: number;
  /** Largest aggregate range accepted, in buckets of the requested resolution. Default 100 000. */
  maxBuckets?: number;
}

/** The state store, with the device rejections and command history kept in the same database (created by init()). */
export interface SqlStateStore extends StateStore {
  readonly rejections: RejectionStore;
  readonly commands: CommandHistory;
}

export function createSqlStateStore(executor: SqlExecutor, options: SqlStateStoreOptions = {}): SqlStateStore {
  const names: StateTableNames = {
    database: checkIdentifier(options.database ?? 'fleetstream', 'database'),
    table: checkIdentifier(options.table ?? 'states', 'table'),
  };
  // Unquoted on purpose: chDB's insert accepts only bare `db.table`; both names are checked identifiers.
  const insertTarget = `${names.database}.${names.table}`;
  const defaultLimit = options.defaultLimit ?? 100;
  const maxLimit = options.maxLimit ?? 10_000;
  const maxBuckets = options.maxBuckets ?? 100_000;
  let closed = false;
  let closing: Promise<void> | undefined;

  function open(): void {
    if (closed) throw new FleetError('CLOSED', 'state store is closed');
  }

  const rejections = createSqlRejectionStore(executor, { database: names.database });
  const commands = createSqlCommandHistory(executor, { database: names.database });

  return {
    rejections,
    commands,

    async init() {
      open();
      await executor.command(createDatabaseSql(names));
      await executor.command(createTableSql(names));
      await rejections.init();
      await commands.init();
    },

    async append(rows: readonly StateRow[]) {
      open();
      checkStateRows(rows);
      if (rows.length === 0) return;
      await executor.insertTsv(insertTarget, STATE_COLUMNS, encodeStateRowsTsv(rows));
    },

    async latest(deviceId: string): Promise<StoredState[]> {
      open();
      checkString(deviceId, 'deviceId');
      return (await executor.select(latestSql(names, deviceId))).map(decodeStoredState);
    },

    async history(query: HistoryQuery): Promise<StoredState[]> {
      open();
      checkString(query?.deviceId, 'deviceId');
      checkString(query.asset, 'asset');
      const from = optionalTime(query.from, 'from');
      const to = optionalTime(query.to, 'to');
      const limit = query.limit ?? defaultLimit;
      if (!Number.isSafeInteger(limit) || limit < 0 || limit > maxLimit) {
        throw badQuery(`limit must be an integer from 0 to ${maxLimit}`, 'limit');
      }
      const order = query.order ?? 'desc';
      if (order !== 'asc' && order !== 'desc') throw badQuery("order must be 'asc' or 'desc'", 'order');
      if (limit === 0 || (from !== undefined && to !== undefined && from >= to)) return [];
      const sql = historySql(names, { deviceId: query.deviceId, asset: query.asset, from, to, limit, order });
      return (await executor.select(sql)).map(decodeStoredState);
    },

    async aggregate(query: AggregateQuery): Promise<Bucket[]> {
      open();
      checkString(query?.deviceId, 'deviceId');
      checkString(query.asset, 'asset');
      const from = optionalTime(query.from, 'from');
      const to = optionalTime(query.to, 'to');
      if (from === undefined || to === undefined) throw badQuery('from and to are required', from === undefined ? 'from' : 'to');
      const size = Object.hasOwn(RESOLUTION_MS, query.resolution) ? RESOLUTION_MS[query.resolution] : undefined;
      if (size === undefined) throw badQuery("resolution must be 'minute', 'hour' or 'day'", 'resolution');
      if (from >= to) return [];
      if ((to - from) / size > maxBuckets) throw badQuery(`range spans more than ${maxBuckets} ${query.resolution} buckets`, 'to');
      const sql = aggregateSql(names, { deviceId: query.deviceId, asset: query.asset, from, to, resolution: query.resolution });
      return (await executor.select(sql)).map(decodeBucket);
    },

    close() {
      closed = true;
      closing ??= executor.close();
      return closing;
    },
  };
}

function badQuery(message: string, field: string): FleetError {
  return new FleetError('VALIDATION_FAILED', message, { detail: { field } });
}

function checkString(value: unknown, field: string): void {
  if (typeof value !== 'string') throw badQuery(`${field} must be a string`, field);
}

function optionalTime(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw badQuery(`${field} must be an integer epoch ms`, field);
  return value;
}
