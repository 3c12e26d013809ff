/**
 * The StateStore shared by the chDB and ClickHouse server adapters: all SQL, encoding and
 * validation live here; an adapter only supplies a SqlExecutor that moves text to an engine and maps
 * the engine's errors to FleetError.
 */
import type { StateRetention } from '../../engine/ports/stateRetention.ts';
import { createSqlStateRetention } from './stateRetention.ts';
import { checkStateRows } from '../../engine/uplink/pipeline/checkStateRows.ts';
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { AggregateQuery, Bucket, HistoryQuery, StateStore, StoredState } from '../../engine/ports/store.ts';
import type { StateRow } from '../../schemas/messages.ts';
import type { RejectionStore } from '../../engine/ports/rejections.ts';
import { createSqlRejectionStore } from './createSqlRejectionStore.ts';
import type { CommandHistory } from '../../engine/ports/commandHistory.ts';
import { createSqlCommandHistory } from './createSqlCommandHistory.ts';
import { aggregateSql, decodeBucket, decodeStoredState, historySql, latestSql } from './stateQueries.ts';
import { checkAggregateQuery, checkHistoryQuery, checkString, type StateQueryLimits } from './checkStateQuery.ts';
import { checkIdentifier, type StateTableNames } from './stateTable.ts';
import { insertGroups, LEGACY_LAYOUT, type StateLayout } from './stateLayout.ts';
import type { ServerCapabilities } from './serverCapabilities.ts';
import { retriableWhenReady } from './retriableWhenReady.ts';
import { initStateTables, type StateTables } from './initStateTables.ts';
import { floorTo, rollupAggregateSql, rollupFor } from './stateRollups.ts';
import type { SqlExecutor } from './SqlExecutor.ts';
import type { StateExport } from '../../engine/ports/stateExport.ts';
import { createSqlStateExport } from './createSqlStateExport.ts';

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
   * Keep per-minute, per-hour and per-day rollups (stateRollups.ts), on both layouts, and answer
   * aggregates from them. Default true. Appends note the buckets they touch and refreshes beside
   * them recompute those from the folded raw states (rollupRefresh.ts): a rollup lags its states
   * by seconds, up to a minute for the minute being written (docs/analytics.md), but an aggregate
   * never reads a lagging rollup (it reads the raw states of a range this store has yet to refresh). Rollups made when
   * states already exist start from all of them, and so do rollups kept again after a store ran
   * without them (initStateTables.ts).
   */
  rollups?: boolean;
  /**
   * Whether this store keeps the rollups (refreshes what its appends touch, and rebuilds them at
   * init when a store died with notes) or only reads them. Default true. A process that serves the
   * API and appends nothing (role edge) reads them: it makes no table and no marker, rebuilds
   * nothing, and answers aggregates from the rollups that the keeping processes made (the last 5
   * minutes from raw states, as always), or from raw states where they are missing or stale.
   */
  keepRollups?: boolean;
  /** Time between refreshes of the rollups, and how long a minute stays untouched before it is refreshed, ms. Default 2000 (rollupRefresh.ts). */
  rollupRefreshMs?: number;
  /** Called with a failed refresh's error (its buckets are tried again at the next refresh). Default: none. */
  onRollupError?: (error: unknown) => void;
  /** Exports running at once (engine/ports/stateExport.ts); one more fails BACKPRESSURE. Default 4. */
  maxConcurrentExports?: number;
  /** Send states as TabSeparated even where the executor offers RowBinary (to measure one against the other, and to compare what each stores). */
  textInsert?: boolean;
  /**
   * Says what "now" is: which buckets of an aggregate are recent enough to be read from raw states,
   * and when the rollups are refreshed. Default systemClock.
   */
  clock?: Clock;
}

/** The state store, with the device rejections and command history kept in the same database (created by init()). */
export interface SqlStateStore extends StateStore, StateExport {
  readonly rejections: RejectionStore;
  readonly commands: CommandHistory;
  /** States expired by ground (engine/ports/stateRetention.ts). */
  readonly retention: StateRetention;
  /** retention.storedOf, as a method of the store itself (a proxied store, an edge worker's, has no nested objects). */
  storedOf: StateRetention['storedOf'];
  /**
   * Runs an analyst's SELECT (written without FORMAT) on the store's engine and returns its rows:
   * the embedded store's door to the SQL of docs/analytics.md. Errors as FleetError.
   */
  query(sql: string): Promise<Record<string, unknown>[]>;
  /**
   * Resolves once the rollups hold every state appended before the call (at once without rollups):
   * for readers of the rollup tables that must see what they just stored.
   */
  rollupsCaughtUp(): Promise<void>;
  /** What init() found: the server's capabilities and the layout of the states table. */
  readonly layout: { readonly capabilities?: ServerCapabilities; readonly kind: StateLayout['kind'] };
}

const BINARY_INSERT_ROWS = 5_000;

/**
 * Aggregates read raw states for buckets that end less than this long ago (by `ts`): a minute
 * still being written is refreshed up to about a minute and a refresh later (rollupRefresh.ts), by
 * whichever process appended it. Late readings of older minutes are refreshed within seconds.
 */
const RECENT_FROM_RAW_MS = 5 * 60_000;

export function createSqlStateStore(engine: SqlExecutor, options: SqlStateStoreOptions = {}): SqlStateStore {
  const ready = retriableWhenReady(engine);
  const executor = ready.executor;
  const binaryFrom = engine.rowBinaryFromRows ?? BINARY_INSERT_ROWS;
  const { names, insertTarget, limits } = settingsOf(options);
  const clock = options.clock ?? systemClock;
  let closed = false;
  let closing: Promise<void> | undefined;
  // Until init() has looked at the table, rows are written and read as the 18.16 layout.
  let tables: Omit<StateTables, 'capabilities'> & { capabilities?: ServerCapabilities } = { layout: LEGACY_LAYOUT, rollups: false, close: async () => {} };

  function open(): void {
    if (closed) throw new FleetError('CLOSED', 'state store is closed');
  }

  const rejections = createSqlRejectionStore(executor, { database: names.database });
  const commands = createSqlCommandHistory(executor, { database: names.database });

  const retention = createSqlStateRetention(executor, names, () => ({ kind: tables.layout.kind, rollups: tables.refresh }));

  const exports = createSqlStateExport(executor, names, {
    maxConcurrent: options.maxConcurrentExports,
    async parquet() {
      const [row] = await executor.select("SELECT count() AS n FROM system.formats WHERE name = 'Parquet'");
      return Number(row?.n) > 0;
    },
  });

  return {
    rejections,
    commands,
    retention,
    exportFormats() {
      open();
      return exports.exportFormats();
    },
    exportStates(selection) {
      open();
      return exports.exportStates(selection);
    },
    storedOf(deviceIds) {
      open();
      return retention.storedOf(deviceIds);
    },
    query(sql: string) {
      open();
      return executor.select(sql);
    },
    async rollupsCaughtUp() {
      open();
      await tables.refresh?.caughtUp();
    },
    get layout() {
      return { capabilities: tables.capabilities, kind: tables.layout.kind };
    },

    async init() {
      open();
      tables = await initStateTables(executor, names, options);
      await rejections.init();
      await commands.init();
      ready.markReady();
    },

    async append(rows: readonly StateRow[]) {
      open();
      checkStateRows(rows);
      if (rows.length === 0) return;
      await insertStates(executor, insertTarget, tables.layout, rows, options.textInsert !== true && rows.length >= binaryFrom);
      tables.refresh?.touched(rows);
    },

    async latest(deviceId: string): Promise<StoredState[]> {
      open();
      checkString(deviceId, 'deviceId');
      return (await executor.select(latestSql(names, deviceId))).map(decodeStoredState);
    },

    async history(query: HistoryQuery): Promise<StoredState[]> {
      open();
      const checked = checkHistoryQuery(query, limits);
      if (checked === undefined) return [];
      return (await executor.select(historySql(names, checked))).map(decodeStoredState);
    },

    async aggregate(query: AggregateQuery): Promise<Bucket[]> {
      open();
      const q = checkAggregateQuery(query, limits);
      if (q === undefined) return [];
      const current = tables.refresh !== undefined ? !tables.refresh.lagging(q.deviceId, q.from, q.to) : tables.rollups;
      const rollup = current ? rollupFor(q.resolutionMs, q.from, q.to) : undefined;
      if (rollup === undefined) return (await executor.select(aggregateSql(names, q))).map(decodeBucket);
      // Buckets from the recent past on come from raw states: another process (the engine, where
      // this one serves the API) may not have refreshed them yet. `cut` is a bucket boundary.
      const cut = Math.min(q.to, Math.max(q.from, floorTo(clock.now() - RECENT_FROM_RAW_MS, q.resolutionMs)));
      const rolled = cut > q.from ? await executor.select(rollupAggregateSql(names, rollup, { ...q, to: cut })) : [];
      const raw = cut < q.to ? await executor.select(aggregateSql(names, { ...q, from: cut })) : [];
      return [...rolled, ...raw].map(decodeBucket);
    },

    close() {
      closed = true;
      // What the rollups lack is refreshed first; if that fails, the pending marker stays and the next init rebuilds them.
      closing ??= tables.close().then(() => engine.close());
      return closing;
    },
  };
}

/**
 * RowBinary carries a number's exact float64 bits (the legacy layout's text needs a decimal copy of
 * every number: 18.16 parses floats inexactly) and the engine copies it instead of parsing text:
 * 2-3× the rows/s of TabSeparated on chDB at 40 000 rows per insert (bench/pipeline.bench.ts).
 * Batches below the executor's rowBinaryFromRows go as text (`binary` false): a binary insert may
 * cost an engine more per insert than the parse saves (chDB writes a payload file for each).
 */
async function insertStates(executor: SqlExecutor, target: string, layout: StateLayout, rows: readonly StateRow[], binary: boolean): Promise<void> {
  const rowBinary = binary && executor.insertRowBinary !== undefined;
  for (const group of layout.kind === 'legacy' ? [rows] : insertGroups(rows)) {
    if (rowBinary) await executor.insertRowBinary!(target, layout.columns, layout.rowBinaryTypes, layout.encodeRowBinary(group));
    else await executor.insertTsv(target, layout.columns, layout.encode(group));
  }
}

function settingsOf(options: SqlStateStoreOptions): { names: StateTableNames; insertTarget: string; limits: StateQueryLimits } {
  const names: StateTableNames = {
    database: checkIdentifier(options.database ?? 'fleetstream', 'database'),
    table: checkIdentifier(options.table ?? 'states', 'table'),
  };
  if (options.retentionDays !== undefined && (!Number.isSafeInteger(options.retentionDays) || options.retentionDays < 1)) {
    throw new TypeError(`retentionDays must be a positive integer (got ${options.retentionDays})`);
  }
  return {
    names,
    // Unquoted on purpose: chDB's insert accepts only bare `db.table`; both names are checked identifiers.
    insertTarget: `${names.database}.${names.table}`,
    limits: {
      defaultLimit: options.defaultLimit ?? 100,
      maxLimit: options.maxLimit ?? 10_000,
      maxBuckets: options.maxBuckets ?? 100_000,
    },
  };
}
