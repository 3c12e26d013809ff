/**
 * What a state store's init() makes and finds: the database, the states table in the layout the
 * server offers (or the one an earlier release made), its migrations and views, and the rollups
 * unless turned off.
 *
 * Rollups start from the states already stored, once: a database without them (made by an earlier
 * release, or run with rollups off) gets them filled from every state at the first init that keeps
 * them. A store opened with rollups off on a database that has them leaves a marker table
 * (`<table>_rollups_stale`) before it appends anything, since its appends will not be in them; the
 * next store keeping rollups recomputes them from all states and drops the marker. A backfill is an
 * idempotent recomputation (stateRollups.ts), so one cut short (a crash) is simply done again.
 *
 * A store keeping rollups notes the buckets its appends touch in memory and refreshes them later
 * (rollupRefresh.ts): a crash loses those notes. So while it is open the marker
 * `<table>_rollups_pending` exists; close() drops it once every note is refreshed, and an init that
 * finds it (a store died with notes, or another keeping the same rollups is open) recomputes the
 * rollups from all states as after a run without them.
 *
 * A store that only reads the rollups (keepRollups false: a process serving the API that appends
 * nothing) makes none of this: it looks whether the rollups exist and are not stale, and reads them
 * if so.
 */
import type { SqlExecutor } from './SqlExecutor.ts';
import { detectCapabilities, type ServerCapabilities } from './serverCapabilities.ts';
import { compactLayout, createStateTableSql, LEGACY_LAYOUT, tableColumnsSql, type StateLayout } from './stateLayout.ts';
import { addReadingNumber, createStateViews } from './stateMigrations.ts';
import { createRollupSql, rollupTableName, ROLLUPS } from './stateRollups.ts';
import { createDatabaseSql, type StateTableNames } from './stateTable.ts';
import type { Clock } from '../../engine/kernel/clock.ts';
import { createRollupRefresh, type RollupRefresh } from './rollupRefresh.ts';

/** The options of SqlStateStoreOptions that shape the tables (documented there). */
export interface StateTablesOptions {
  retentionDays?: number;
  legacyLayout?: boolean;
  rollups?: boolean;
  keepRollups?: boolean;
  rollupRefreshMs?: number;
  onRollupError?: (error: unknown) => void;
  clock?: Clock;
}

export interface StateTables {
  capabilities: ServerCapabilities;
  layout: StateLayout;
  /** The rollups exist and are kept (unless turned off, on both layouts); for a store that only reads them, that they exist and are not stale. */
  rollups: boolean;
  /** The refreshes of the rollups, beside the appends (undefined when they are not kept). */
  refresh?: RollupRefresh;
  /** Stops the refreshes once what is noted is refreshed, and drops the pending marker; never rejects (a failed refresh goes to onRollupError and leaves the marker). */
  close(): Promise<void>;
}

export async function initStateTables(
  executor: SqlExecutor,
  names: StateTableNames,
  options: StateTablesOptions,
): Promise<StateTables> {
  const capabilities = await detectCapabilities(executor);
  const compact = capabilities.compactTypes && options.legacyLayout !== true;
  await executor.command(createDatabaseSql(names));
  await executor.command(createStateTableSql(names, compact, { retentionDays: options.retentionDays }));
  // A table made before this server (or this release) had the compact layout keeps its own.
  const columns = (await executor.select(tableColumnsSql(names))).map((c) => c.name);
  const layout = columns.includes('uplink_text') ? compactLayout(!capabilities.exactFloatText) : LEGACY_LAYOUT;
  if (!columns.includes('seq')) await addReadingNumber(executor, names, layout.kind === 'compact');
  await createStateViews(executor, names);
  if (options.rollups !== false && options.keepRollups === false) {
    // Reads only: whatever rollups the keeping processes made, unless one ran without them since.
    const existing = await tableNames(executor, names);
    const readable = ROLLUPS.every((rollup) => existing.has(rollupTableName(names, rollup))) && !existing.has(staleMarkerName(names));
    return { capabilities, layout, rollups: readable, close: async () => {} };
  }
  const rollups = options.rollups !== false;
  const refresh = rollups
    ? createRollupRefresh(executor, names, { compact: layout.kind === 'compact', intervalMs: options.rollupRefreshMs, onError: options.onRollupError, clock: options.clock })
    : undefined;
  try {
    await initRollups(executor, names, layout.kind === 'compact', refresh);
  } catch (error) {
    await refresh?.close();
    throw error;
  }
  async function close(): Promise<void> {
    if (refresh === undefined) return;
    try {
      await refresh.close();
      await executor.command(`DROP TABLE IF EXISTS ${marker(names, pendingMarkerName(names))}`);
    } catch (error) {
      // The marker stays (if the database does): the next init rebuilds what was not refreshed.
      options.onRollupError?.(error);
    }
  }
  return { capabilities, layout, rollups, refresh, close };
}

export function staleMarkerName(names: StateTableNames): string {
  return `${names.table}_rollups_stale`;
}

export function pendingMarkerName(names: StateTableNames): string {
  return `${names.table}_rollups_pending`;
}

const marker = (names: StateTableNames, name: string) => `\`${names.database}\`.\`${name}\``;
// TinyLog: an empty table that only says "appends happened that the rollups may lack"; 18.16 has it.
const createMarkerSql = (names: StateTableNames, name: string) => `CREATE TABLE IF NOT EXISTS ${marker(names, name)} (since Int64) ENGINE = TinyLog`;

async function initRollups(executor: SqlExecutor, names: StateTableNames, compact: boolean, refresh: RollupRefresh | undefined): Promise<void> {
  const existing = await tableNames(executor, names);
  const present = ROLLUPS.filter((rollup) => existing.has(rollupTableName(names, rollup)));
  if (refresh === undefined) {
    if (present.length > 0) await executor.command(createMarkerSql(names, staleMarkerName(names)));
    return;
  }
  for (const rollup of ROLLUPS) await executor.command(createRollupSql(names, rollup, compact));
  const stale = existing.has(staleMarkerName(names));
  const pending = existing.has(pendingMarkerName(names));
  // Before the rebuild: a crash during it leaves the marker, and the next init rebuilds again.
  await executor.command(createMarkerSql(names, pendingMarkerName(names)));
  if (present.length < ROLLUPS.length || stale || pending) await refresh.all();
  if (stale) await executor.command(`DROP TABLE IF EXISTS ${marker(names, staleMarkerName(names))}`);
}

async function tableNames(executor: SqlExecutor, names: StateTableNames): Promise<Set<string>> {
  return new Set((await executor.select(`SELECT name FROM system.tables WHERE database = '${names.database}'`)).map((t) => String(t.name)));
}
