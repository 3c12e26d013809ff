/**
 * Brings the states table and its views made by an earlier release up to this one, at init: the
 * service opens tables of either layout that earlier versions created.
 *
 * `seq` (stateTable.ts): added as the last column and appended to the sorting key, in one ALTER —
 * ClickHouse (18.16 too) lets a sorting key grow only by columns the same ALTER adds, and only
 * without a default expression; the type's own default, 0, is what every existing row gets, the
 * number a replay of an old uplink writes again for readings at distinct times. No data is
 * rewritten: parts made before read the column as 0. Two processes opening one server table at
 * once may both try: the one that loses finds the column there and goes on.
 *
 * The views select columns by name when made (stateViews.ts), so views made without `seq` are
 * dropped and made again (latest_states reads state_rows, so it goes first).
 */
import type { SqlExecutor } from './SqlExecutor.ts';
import { qualifiedTable, type StateTableNames } from './stateTable.ts';
import { latestStatesViewSql, stateRowsViewSql } from './stateViews.ts';

function columnsOf(executor: SqlExecutor, database: string, table: string): Promise<string[]> {
  return executor.select(`SELECT name FROM system.columns WHERE database = '${database}' AND table = '${table}'`)
    .then((rows) => rows.map((c) => String(c.name)));
}

/** Adds `seq` where the table has none; `compact`: the table has the compact layout (codecs). */
export async function addReadingNumber(executor: SqlExecutor, names: StateTableNames, compact: boolean): Promise<void> {
  const [{ key }] = await executor.select(`SELECT sorting_key AS key FROM system.tables WHERE database = '${names.database}' AND name = '${names.table}'`);
  try {
    await executor.command(`ALTER TABLE ${qualifiedTable(names)} ADD COLUMN seq UInt16${compact ? ' CODEC(ZSTD(1))' : ''}, MODIFY ORDER BY (${String(key)}, seq)`);
  } catch (error) {
    if (!(await columnsOf(executor, names.database, names.table)).includes('seq')) throw error;
  }
}

/** Makes the analysts' views, again where an earlier release made them without `seq`. */
export async function createStateViews(executor: SqlExecutor, names: StateTableNames): Promise<void> {
  const columns = await columnsOf(executor, names.database, 'state_rows');
  if (columns.length > 0 && !columns.includes('seq')) {
    await executor.command(`DROP TABLE IF EXISTS \`${names.database}\`.\`latest_states\``);
    await executor.command(`DROP TABLE IF EXISTS \`${names.database}\`.\`state_rows\``);
  }
  await executor.command(stateRowsViewSql(names));
  await executor.command(latestStatesViewSql(names));
}
