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
 */
import type { SqlExecutor } from './SqlExecutor.ts';
import { detectCapabilities, type ServerCapabilities } from './serverCapabilities.ts';
import { compactLayout, createStateTableSql, LEGACY_LAYOUT, tableColumnsSql, type StateLayout } from './stateLayout.ts';
import { addReadingNumber, createStateViews } from './stateMigrations.ts';
import { createRollupSql, rollupTableName, ROLLUPS } from './stateRollups.ts';
import { createDatabaseSql, type StateTableNames } from './stateTable.ts';
import { createRollupRefresh, type RollupRefresh } from './rollupRefresh.ts';

/** The options of SqlStateStoreOptions that shape the tables (documented there). */
export interface StateTablesOptions {
  retentionDays?: number;
  legacyLayout?: boolean;
  rollups?: boolean;
}

export interface StateTables {
  capabilities: ServerCapabilities;
  layout: StateLayout;
  /** The rollups exist and are kept (unless turned off, on both layouts). */
  rollups: boolean;
  /** The refreshes of the rollups, after appends (undefined when they are not kept). */
  refresh?: RollupRefresh;
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
  const rollups = options.rollups === true;
  const refresh = rollups ? createRollupRefresh(executor, names, layout.kind === 'compact') : undefined;
  await initRollups(executor, names, layout.kind === 'compact', refresh);
  return { capabilities, layout, rollups, refresh };
}

export function staleMarkerName(names: StateTableNames): string {
  return `${names.table}_rollups_stale`;
}

async function initRollups(executor: SqlExecutor, names: StateTableNames, compact: boolean, refresh: RollupRefresh | undefined): Promise<void> {
  const existing = new Set((await executor.select(`SELECT name FROM system.tables WHERE database = '${names.database}'`)).map((t) => String(t.name)));
  const marker = `\`${names.database}\`.\`${staleMarkerName(names)}\``;
  const present = ROLLUPS.filter((rollup) => existing.has(rollupTableName(names, rollup)));
  if (refresh === undefined) {
    // TinyLog: an empty table that only says "appends happened that the rollups lack"; 18.16 has it.
    if (present.length > 0) await executor.command(`CREATE TABLE IF NOT EXISTS ${marker} (since Int64) ENGINE = TinyLog`);
    return;
  }
  for (const rollup of ROLLUPS) await executor.command(createRollupSql(names, rollup, compact));
  const stale = existing.has(staleMarkerName(names));
  if (present.length < ROLLUPS.length || stale) await refresh.all();
  if (stale) await executor.command(`DROP TABLE IF EXISTS ${marker}`);
}
