/**
 * What a state store's init() makes and finds: the database, the states table in the layout the
 * server offers (or the one an earlier release made), its migrations and views, and the rollups
 * where asked for.
 */
import type { SqlExecutor } from './SqlExecutor.ts';
import { detectCapabilities, type ServerCapabilities } from './serverCapabilities.ts';
import { compactLayout, createStateTableSql, LEGACY_LAYOUT, tableColumnsSql, type StateLayout } from './stateLayout.ts';
import { addReadingNumber, createStateViews } from './stateMigrations.ts';
import { createRollupSql, rollupTableName, ROLLUPS } from './stateRollups.ts';
import { createDatabaseSql, type StateTableNames } from './stateTable.ts';
import type { RollupRefresh } from './rollupRefresh.ts';

/** The options of SqlStateStoreOptions that shape the tables (documented there). */
export interface StateTablesOptions {
  retentionDays?: number;
  legacyLayout?: boolean;
  rollups?: boolean;
}

export interface StateTables {
  capabilities: ServerCapabilities;
  layout: StateLayout;
  /** The rollups exist and are kept: the table has the compact layout and they were asked for. */
  rollups: boolean;
}

export async function initStateTables(
  executor: SqlExecutor,
  names: StateTableNames,
  options: StateTablesOptions,
  refresh: RollupRefresh,
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
  const rollups = layout.kind === 'compact' && options.rollups === true;
  if (rollups) {
    const existing = (await executor.select(`SELECT name FROM system.tables WHERE database = '${names.database}'`)).map((t) => t.name);
    for (const rollup of ROLLUPS) await executor.command(createRollupSql(names, rollup));
    if (ROLLUPS.some((rollup) => !existing.includes(rollupTableName(names, rollup)))) await refresh.all();
  }
  return { capabilities, layout, rollups };
}
