/**
 * The state retention port (engine/ports/stateRetention.ts) in ClickHouse SQL, per the table's layout:
 * - compact (chDB, ClickHouse 19.6+; lightweight DELETE needs 23.3+, which chDB 26 is): `DELETE FROM`
 *   the states and the rollups — rows are hidden at once and dropped at the next merges;
 * - legacy (ClickHouse 18.16): `ALTER TABLE … DELETE WHERE`, a mutation that rewrites the parts
 *   holding matching rows in the background (18.16 has mutations, no lightweight DELETE, no TTL).
 * Devices go by chunks so that a statement stays well under the server's max_query_size (256 KiB).
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { StateRetention } from '../../engine/ports/stateRetention.ts';
import { ROLLUPS, rollupTableName } from './stateRollups.ts';
import type { RollupRefresh } from './rollupRefresh.ts';
import type { SqlExecutor } from './SqlExecutor.ts';
import { int64Literal, qualifiedTable, quoteString, type StateTableNames } from './stateTable.ts';

const DEVICES_PER_STATEMENT = 1000;

export interface RetentionTables {
  /** The states table's layout, as init() found it. */
  kind: 'legacy' | 'compact';
  /** The rollups' refreshes, when kept: deletions run between two, lest one that read the rows before undo them. */
  rollups: Pick<RollupRefresh, 'exclusive'> | undefined;
}

function requireDeviceIds(deviceIds: readonly string[]): void {
  for (const id of deviceIds) {
    if (typeof id !== 'string' || id.length === 0 || id.length > 64) throw new FleetError('VALIDATION_FAILED', 'deviceIds: not device ids', { detail: { field: 'deviceIds' } });
  }
}

export function createSqlStateRetention(executor: SqlExecutor, names: StateTableNames, tables: () => RetentionTables): StateRetention {
  return {
    async storedOf(deviceIds) {
      requireDeviceIds(deviceIds);
      let rows = 0;
      for (let i = 0; i < deviceIds.length; i += DEVICES_PER_STATEMENT) {
        const devices = deviceIds.slice(i, i + DEVICES_PER_STATEMENT).map(quoteString).join(', ');
        const [counted] = await executor.select(`SELECT count() AS n FROM ${qualifiedTable(names)} WHERE device_id IN (${devices})`);
        rows += Number(counted?.n ?? 0);
      }
      const [parts] = await executor.select(`SELECT sum(rows) AS r, sum(data_compressed_bytes) AS b FROM system.parts
        WHERE database = ${quoteString(names.database)} AND table = ${quoteString(names.table)} AND active`);
      const tableRows = Number(parts?.r ?? 0);
      const perRow = tableRows > 0 ? Number(parts?.b ?? 0) / tableRows : 0;
      return { rows, compressedBytes: Math.round(rows * perRow) };
    },

    async expireStates(deviceIds, before) {
      if (!Number.isSafeInteger(before)) throw new FleetError('VALIDATION_FAILED', 'before: not a time', { detail: { field: 'before' } });
      requireDeviceIds(deviceIds);
      const { kind, rollups } = tables();
      for (let i = 0; i < deviceIds.length; i += DEVICES_PER_STATEMENT) {
        const devices = deviceIds.slice(i, i + DEVICES_PER_STATEMENT).map(quoteString).join(', ');
        const where = `device_id IN (${devices}) AND ts < ${int64Literal(before)}`;
        if (kind === 'legacy') {
          await executor.command(`ALTER TABLE ${qualifiedTable(names)} DELETE WHERE ${where}`);
          continue;
        }
        if (rollups === undefined) {
          await executor.command(`DELETE FROM ${qualifiedTable(names)} WHERE ${where}`);
          continue;
        }
        await rollups.exclusive(async () => {
          await executor.command(`DELETE FROM ${qualifiedTable(names)} WHERE ${where}`);
          for (const rollup of ROLLUPS) {
            const table = `\`${names.database}\`.\`${rollupTableName(names, rollup)}\``;
            await executor.command(`DELETE FROM ${table} WHERE device_id IN (${devices}) AND bucket + ${int64Literal(rollup.size)} <= ${int64Literal(before)}`);
          }
        });
      }
    },
  };
}
