/**
 * The states table and views as releases before `seq` made them (both layouts), and one check that
 * a store opening them migrates them: the old rows read as before, a batch's readings at one time
 * are all kept, a replay of an old uplink still folds, the views show `seq`. Run by
 * test/adapters/clickhouse/chdb-store.test.ts (both layouts) and test/adapters/clickhouse/clickhouse-store.test.ts (the server's layout).
 */
import * as assert from 'uvu/assert';
import type { SqlStateStore } from '../../adapters/clickhouse-sql/createSqlStateStore.ts';
import type { StateRow } from '../../schemas/messages.ts';

const T0 = Date.UTC(2024, 0, 1);

/** CREATE statements and two rows (uplink u-1 at T0, u-2 at T0 + 1000) of a table made before `seq`. */
export function earlierStateTable(database: string, layout: 'legacy' | 'compact'): string[] {
  const table = `\`${database}\`.\`states\``;
  const ddl = layout === 'legacy'
    ? `CREATE TABLE ${table} (
  device_id String,
  asset String,
  ts Int64,
  uplink_id String,
  received_at Int64,
  value_kind Enum8('null' = 0, 'number' = 1, 'string' = 2, 'boolean' = 3, 'json' = 4),
  value_number Float64,
  value_string String,
  value_bool UInt8
) ENGINE = ReplacingMergeTree()
ORDER BY (device_id, asset, ts, uplink_id)`
    : `CREATE TABLE ${table} (
  device_id LowCardinality(String),
  asset LowCardinality(String),
  ts Int64 CODEC(DoubleDelta, ZSTD(1)),
  received_lag Int64 CODEC(T64, ZSTD(1)),
  received_at Int64 ALIAS ts + received_lag,
  uplink_low UInt32 CODEC(ZSTD(1)),
  uplink_text String CODEC(ZSTD(1)),
  uplink_id String ALIAS if(uplink_text = '', hex(bitOr(bitShiftLeft(toUInt64(ts + received_lag), 20), toUInt64(uplink_low))), uplink_text),
  value_kind Enum8('null' = 0, 'number' = 1, 'string' = 2, 'boolean' = 3, 'json' = 4) CODEC(ZSTD(1)),
  value_mantissa Int64 CODEC(Delta, ZSTD(1)),
  value_scale UInt8 CODEC(ZSTD(1)),
  value_float Float64 CODEC(Gorilla, ZSTD(1)),
  value_number Float64 ALIAS if(value_scale = 255, value_float, value_mantissa / toFloat64(intExp10(value_scale))),
  value_string String CODEC(ZSTD(1)),
  value_bool UInt8 CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree()
PARTITION BY intDiv(ts, 86400000)
ORDER BY (device_id, asset, ts, received_lag, uplink_low, uplink_text)`;
  const rows = layout === 'legacy'
    ? `INSERT INTO ${table} (device_id, asset, ts, uplink_id, received_at, value_kind, value_number, value_string, value_bool)
VALUES ('d1', 'a', ${T0}, 'u-1', ${T0 + 5}, 'number', 1, '1', 0), ('d1', 'a', ${T0 + 1000}, 'u-2', ${T0 + 1005}, 'number', 2, '2', 0)`
    : `INSERT INTO ${table} (device_id, asset, ts, received_lag, uplink_low, uplink_text, value_kind, value_mantissa, value_scale, value_float, value_string, value_bool)
VALUES ('d1', 'a', ${T0}, 5, 0, 'u-1', 'number', 1, 0, 0, '', 0), ('d1', 'a', ${T0 + 1000}, 5, 0, 'u-2', 'number', 2, 0, 0, '', 0)`;
  return [
    `CREATE DATABASE IF NOT EXISTS \`${database}\``,
    ddl,
    rows,
    `CREATE VIEW \`${database}\`.\`state_rows\` AS
SELECT device_id, asset, ts, received_at, uplink_id, value_kind, value_number,
  if(value_kind = 'number', '', value_string) AS value_string, value_bool
FROM ${table} FINAL`,
    `CREATE VIEW \`${database}\`.\`latest_states\` AS
SELECT device_id, asset, argMax(t, (t, r, u)) AS ts, argMax(r, (t, r, u)) AS received_at, argMax(u, (t, r, u)) AS uplink_id,
  argMax(k, (t, r, u)) AS value_kind, argMax(n, (t, r, u)) AS value_number, argMax(s, (t, r, u)) AS value_string, argMax(b, (t, r, u)) AS value_bool
FROM (
  SELECT device_id, asset, ts AS t, received_at AS r, uplink_id AS u, value_kind AS k, value_number AS n, value_string AS s, value_bool AS b
  FROM \`${database}\`.\`state_rows\`
)
GROUP BY device_id, asset`,
  ];
}

/** `open()` makes a store on the database earlierStateTable filled (a new one each call). */
export async function checkMigrated(open: () => SqlStateStore, database: string, layout: 'legacy' | 'compact'): Promise<void> {
  const store = open();
  try {
    await store.init();
    assert.is(store.layout.kind, layout, 'the table keeps its layout');
    const history = async () => (await store.history({ deviceId: 'd1', asset: 'a', order: 'asc' })).map((s) => [s.value, s.uplinkId, s.seq]);
    assert.equal(await history(), [[1, 'u-1', 0], [2, 'u-2', 0]], 'rows made before seq read as seq 0');
    // A replay of an old uplink (its readings at distinct times, so no seq) folds into its rows.
    const replay: StateRow = { deviceId: 'd1', asset: 'a', ts: T0, receivedAt: T0 + 5, value: 1, uplinkId: 'u-1' };
    await store.append([replay]);
    // Three readings of one uplink at one time (a batch without at).
    const batch = [7, 8, 9].map((value, seq): StateRow => ({ deviceId: 'd1', asset: 'a', ts: T0 + 2000, receivedAt: T0 + 2000, value, uplinkId: 'u-3', seq }));
    await store.append(batch);
    await store.append(batch);
    const expected = [[1, 'u-1', 0], [2, 'u-2', 0], [7, 'u-3', 0], [8, 'u-3', 1], [9, 'u-3', 2]];
    assert.equal(await history(), expected);
    assert.equal((await store.latest('d1')).map((s) => [s.value, s.seq]), [[9, 2]]);
    const viewed = await store.query(`SELECT value_number AS v, seq FROM \`${database}\`.state_rows WHERE device_id = 'd1' ORDER BY ts, received_at, uplink_id, seq`);
    assert.equal(viewed.map((r) => [Number(r.v), Number(r.seq)]), expected.map(([v, , seq]) => [v, seq]));
    const [latest] = await store.query(`SELECT value_number AS v, seq FROM \`${database}\`.latest_states WHERE device_id = 'd1'`);
    assert.equal([Number(latest.v), Number(latest.seq)], [9, 2]);
  } finally {
    await store.close();
  }
  // Opening the migrated table again changes nothing.
  const again = open();
  try {
    await again.init();
    assert.is((await again.history({ deviceId: 'd1', asset: 'a', limit: 10 })).length, 5);
  } finally {
    await again.close();
  }
}
