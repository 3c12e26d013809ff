/**
 * Views for analysts (docs/analytics.md), created by init() beside the states table (and made again
 * where an earlier release made them without `seq`, stateMigrations.ts). They give both
 * layouts (stateLayout.ts) the same columns and the same answers, so an analyst's SQL does not
 * depend on the server's version:
 * - `state_rows`: every state once (FINAL folds replays), value_string empty
 *   for numbers (the legacy layout's decimal copy is an internal detail).
 * - `latest_states`: one row per device and asset, the state with the greatest (ts, received_at,
 *   uplink_id, seq), as the store's latest() picks it.
 * Plain CREATE VIEW, which 18.16 has.
 */
import { qualifiedTable, type StateTableNames } from './stateTable.ts';

export function stateRowsViewSql(names: StateTableNames): string {
  return `CREATE VIEW IF NOT EXISTS \`${names.database}\`.\`state_rows\` AS
SELECT device_id, asset, ts, received_at, uplink_id, seq, value_kind, value_number,
  if(value_kind = 'number', '', value_string) AS value_string, value_bool
FROM ${qualifiedTable(names)} FINAL`;
}

export function latestStatesViewSql(names: StateTableNames): string {
  const by = '(t, r, u, q)';
  return `CREATE VIEW IF NOT EXISTS \`${names.database}\`.\`latest_states\` AS
SELECT device_id, asset, argMax(t, ${by}) AS ts, argMax(r, ${by}) AS received_at, argMax(u, ${by}) AS uplink_id, argMax(q, ${by}) AS seq,
  argMax(k, ${by}) AS value_kind, argMax(n, ${by}) AS value_number, argMax(s, ${by}) AS value_string, argMax(b, ${by}) AS value_bool
FROM (
  SELECT device_id, asset, ts AS t, received_at AS r, uplink_id AS u, seq AS q, value_kind AS k, value_number AS n, value_string AS s, value_bool AS b
  FROM \`${names.database}\`.\`state_rows\`
)
GROUP BY device_id, asset`;
}
