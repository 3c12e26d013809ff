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
import { aggregateSql, decodeBucket, decodeStoredState, historySql, latestSql, RESOLUTION_MS } from './stateQueries.ts';
import { checkIdentifier, createDatabaseSql, type StateTableNames } from './stateTable.ts';
import { compactLayout, createStateTableSql, insertGroups, LEGACY_LAYOUT, tableColumnsSql, type StateLayout } from './stateLayout.ts';
import { detectCapabilities, type ServerCapabilities } from './serverCapabilities.ts';
import { retriableWhenReady } from './retriableWhenReady.ts';
import { addReadingNumber, createStateViews } from './stateMigrations.ts';
import { createRollupSql, refreshHoursSql, refreshMinutesSql, rollupAggregateSql, rollupFor, rollupTableName, ROLLUPS, touchedBy } from './stateRollups.ts';

/** What an adapter provides. Every method rejects with a FleetError. */
export interface SqlExecutor {
  /** A statement without a result (DDL). */
  command(sql: string): Promise<void>;
  /** A SELECT written without FORMAT; returns its rows as JSONEachRow objects. */
  select(sql: string): Promise<Record<string, unknown>[]>;
  /** Inserts a TabSeparated payload; resolves once the engine has committed it. */
  insertTsv(table: string, columns: readonly string[], payload: Buffer): Promise<void>;
  /**
   * Inserts a RowBinary payload whose columns have these types (as RowBinary carries them), where
   * the engine can take one; resolves once the engine has committed it.
   */
  insertRowBinary?(table: string, columns: readonly string[], types: readonly string[], payload: Buffer): Promise<void>;
  /**
   * Smallest insert, in rows, sent as RowBinary where insertRowBinary exists; smaller ones go as
   * TabSeparated. Default 5 000 (what a binary insert costs beyond a text one differs per engine).
   */
  readonly rowBinaryFromRows?: number;
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
  /**
   * States older than this many days (by `ts`) are dropped during merges. Only where the server
   * has TTL (19.6 and later, every chDB); ignored on 18.16. Default: kept forever.
   */
  retentionDays?: number;
  /** Create the 18.16 layout even where the server has the compact one (benchmarks, tests). */
  legacyLayout?: boolean;
  /**
   * Keep per-minute and per-hour rollups (stateRollups.ts) where the table has the compact layout,
   * refreshed by every append, and answer aggregates from them. Default false: the refresh is exact
   * but reads the touched buckets back with FINAL after every append, which costs 2-5× the insert
   * (bench/pipeline.bench.ts with BENCH_ROLLUPS=1). Rollups made when states already exist start
   * from all of them; states appended while a store ran without rollups are not in them.
   */
  rollups?: boolean;
  /** Send states as TabSeparated even where the executor offers RowBinary (to measure one against the other, and to compare what each stores). */
  textInsert?: boolean;
}

/** The state store, with the device rejections and command history kept in the same database (created by init()). */
export interface SqlStateStore extends StateStore {
  readonly rejections: RejectionStore;
  readonly commands: CommandHistory;
  /**
   * Runs an analyst's SELECT (written without FORMAT) on the store's engine and returns its rows:
   * the embedded store's door to the SQL of docs/analytics.md. Errors as FleetError.
   */
  query(sql: string): Promise<Record<string, unknown>[]>;
  /** What init() found: the server's capabilities and the layout of the states table. */
  readonly layout: { readonly capabilities?: ServerCapabilities; readonly kind: StateLayout['kind'] };
}

const BINARY_INSERT_ROWS = 5_000;

export function createSqlStateStore(engine: SqlExecutor, options: SqlStateStoreOptions = {}): SqlStateStore {
  const ready = retriableWhenReady(engine);
  const executor = ready.executor;
  const binaryFrom = engine.rowBinaryFromRows ?? BINARY_INSERT_ROWS;
  const names: StateTableNames = {
    database: checkIdentifier(options.database ?? 'fleetstream', 'database'),
    table: checkIdentifier(options.table ?? 'states', 'table'),
  };
  // Unquoted on purpose: chDB's insert accepts only bare `db.table`; both names are checked identifiers.
  const insertTarget = `${names.database}.${names.table}`;
  const defaultLimit = options.defaultLimit ?? 100;
  const maxLimit = options.maxLimit ?? 10_000;
  const maxBuckets = options.maxBuckets ?? 100_000;
  if (options.retentionDays !== undefined && (!Number.isSafeInteger(options.retentionDays) || options.retentionDays < 1)) {
    throw new TypeError(`retentionDays must be a positive integer (got ${options.retentionDays})`);
  }
  let closed = false;
  let closing: Promise<void> | undefined;
  // Until init() has looked at the table, rows are written and read as the 18.16 layout.
  let layout: StateLayout = LEGACY_LAYOUT;
  let capabilities: ServerCapabilities | undefined;
  let rollups = false;
  // Refreshes run one after another, each with a greater version (see stateRollups.ts).
  let refreshing: Promise<void> = Promise.resolve();
  let lastVersion = 0;
  const nextVersion = () => (lastVersion = Math.max(Date.now() * 1000, lastVersion + 1));

  function refreshRollups(rows: readonly StateRow[]): Promise<void> {
    const touched = touchedBy(rows);
    const run = refreshing.catch(() => {}).then(async () => {
      await executor.command(refreshMinutesSql(names, touched, nextVersion()));
      await executor.command(refreshHoursSql(names, touched, nextVersion()));
    });
    refreshing = run;
    return run;
  }

  function open(): void {
    if (closed) throw new FleetError('CLOSED', 'state store is closed');
  }

  const rejections = createSqlRejectionStore(executor, { database: names.database });
  const commands = createSqlCommandHistory(executor, { database: names.database });

  return {
    rejections,
    commands,
    query(sql: string) {
      open();
      return executor.select(sql);
    },
    get layout() {
      return { capabilities, kind: layout.kind };
    },

    async init() {
      open();
      capabilities = await detectCapabilities(executor);
      const compact = capabilities.compactTypes && options.legacyLayout !== true;
      await executor.command(createDatabaseSql(names));
      await executor.command(createStateTableSql(names, compact, { retentionDays: options.retentionDays }));
      // A table made before this server (or this release) had the compact layout keeps its own.
      const columns = (await executor.select(tableColumnsSql(names))).map((c) => c.name);
      layout = columns.includes('uplink_text') ? compactLayout(!capabilities.exactFloatText) : LEGACY_LAYOUT;
      if (!columns.includes('seq')) await addReadingNumber(executor, names, layout.kind === 'compact');
      await createStateViews(executor, names);
      rollups = layout.kind === 'compact' && options.rollups === true;
      if (rollups) {
        const existing = (await executor.select(`SELECT name FROM system.tables WHERE database = '${names.database}'`)).map((t) => t.name);
        for (const rollup of ROLLUPS) await executor.command(createRollupSql(names, rollup));
        // Rollups made beside states already stored start from all of them (in order: hours read minutes).
        if (ROLLUPS.some((rollup) => !existing.includes(rollupTableName(names, rollup)))) {
          await executor.command(refreshMinutesSql(names, undefined, nextVersion()));
          await executor.command(refreshHoursSql(names, undefined, nextVersion()));
        }
      }
      await rejections.init();
      await commands.init();
      ready.markReady();
    },

    async append(rows: readonly StateRow[]) {
      open();
      checkStateRows(rows);
      if (rows.length === 0) return;
      // RowBinary carries a number's exact float64 bits (the legacy layout's text needs a decimal
      // copy of every number: 18.16 parses floats inexactly) and the engine copies it instead of
      // parsing text: 2-3× the rows/s of TabSeparated on chDB at 40 000 rows per insert
      // (bench/pipeline.bench.ts). Below the executor's rowBinaryFromRows batches go as text: a
      // binary insert may cost an engine more per insert than the parse saves (chDB writes a
      // payload file for each).
      const binary = executor.insertRowBinary !== undefined && options.textInsert !== true && rows.length >= binaryFrom;
      for (const group of layout.kind === 'legacy' ? [rows] : insertGroups(rows)) {
        if (binary) await executor.insertRowBinary!(insertTarget, layout.columns, layout.rowBinaryTypes, layout.encodeRowBinary(group));
        else await executor.insertTsv(insertTarget, layout.columns, layout.encode(group));
      }
      if (rollups) await refreshRollups(rows);
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
      const rollup = rollups ? rollupFor(size, from, to) : undefined;
      const sql = rollup
        ? rollupAggregateSql(names, rollup, { deviceId: query.deviceId, asset: query.asset, from, to, resolution: query.resolution, resolutionMs: size })
        : aggregateSql(names, { deviceId: query.deviceId, asset: query.asset, from, to, resolution: query.resolution });
      return (await executor.select(sql)).map(decodeBucket);
    },

    close() {
      closed = true;
      closing ??= engine.close();
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
