/**
 * Embedded state store (DESIGN.md §2): ClickHouse in-process through chDB, data in a directory.
 * Queries and inserts use chDB's async APIs, which run on libuv worker threads, so the event loop
 * keeps serving while the engine works.
 *
 * chDB also offers `chdb/connection`, a Connection for @clickhouse/client, which would let both
 * adapters share the client calls too. It is not used: the SQL is already shared
 * (adapters/clickhouse-sql), and the native Session takes a TSV insert as bytes with no client-side
 * stream or JSON layer in between.
 */
import { Session } from 'chdb';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import { fleetErrorFromClickHouseCode } from '../clickhouse-sql/clickhouseErrors.ts';
import { createSqlStateStore, type SqlStateStore, type SqlExecutor, type SqlStateStoreOptions } from '../clickhouse-sql/createSqlStateStore.ts';

export interface ChdbStoreOptions extends SqlStateStoreOptions {
  /**
   * Data directory (created when missing). chDB allows one data directory per process: opening a
   * second store on another directory fails UNAVAILABLE until the first is closed.
   */
  dir: string;
  /** Per-statement deadline in ms; none by default. chDB rejects at the deadline but the engine
   * finishes the statement in the background (an insert may still land; re-appending is harmless). */
  timeoutMs?: number;
}

export function createChdbStore(options: ChdbStoreOptions): SqlStateStore {
  if (typeof options?.dir !== 'string' || options.dir === '') throw new TypeError('createChdbStore: dir is required');
  let session!: Session;
  const timeout = options.timeoutMs;
  const executor: SqlExecutor = {
    async command(sql) {
      try {
        await session.queryAsync(sql, { timeout });
      } catch (error) {
        throw chdbError(error);
      }
    },
    async select(sql) {
      let text: string;
      try {
        text = (await session.queryAsync(sql, { format: 'JSONEachRow', timeout })).text();
      } catch (error) {
        throw chdbError(error);
      }
      return parseJsonEachRow(text);
    },
    async insertTsv(table, columns, payload) {
      try {
        await session.insert({ table, columns, values: payload, format: 'TabSeparated', timeout });
      } catch (error) {
        throw chdbError(error);
      }
    },
    async close() {
      session.close();
    },
  };
  // Options are checked (by createSqlStateStore) before the data directory is opened.
  const store = createSqlStateStore(executor, options);
  try {
    session = new Session(options.dir);
  } catch (error) {
    throw chdbError(error);
  }
  return store;
}

export function parseJsonEachRow(text: string): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end > start) rows.push(JSON.parse(text.slice(start, end)) as Record<string, unknown>);
    start = end + 1;
  }
  return rows;
}

/** chDB errors carry a stable `code` (CHDB_*) and, for engine errors, the ClickHouse code. */
export function chdbError(error: unknown): FleetError {
  if (error instanceof FleetError) return error;
  const e = error as { code?: unknown; clickhouseCode?: unknown; message?: unknown } | null;
  const message = `chDB: ${typeof e?.message === 'string' ? e.message : String(error)}`;
  if (typeof e?.clickhouseCode === 'number') return fleetErrorFromClickHouseCode(e.clickhouseCode, message, error);
  switch (e?.code) {
    case 'CHDB_CLOSED':
      return new FleetError('CLOSED', message, { cause: error });
    case 'CHDB_TIMEOUT':
    case 'CHDB_ABORT':
      return new FleetError('TIMEOUT', message, { cause: error });
    case 'CHDB_CONNECTION':
      // Opening failed or another data directory is live in this process: configuration, not load.
      return new FleetError('UNAVAILABLE', message, { cause: error, retriable: false });
    default:
      return new FleetError('INTERNAL', message, { cause: error });
  }
}
