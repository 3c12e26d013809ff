/**
 * The rejections table as releases before `item` made it, and one check that a store opening it
 * migrates it: the old rows read as before (no item), a replay of an old rejection still folds,
 * refusals of one asset in different items of one uplink are each kept. Run by
 * test/adapters/clickhouse/chdb-store.test.ts and test/adapters/clickhouse/clickhouse-store.test.ts.
 */
import * as assert from 'uvu/assert';
import type { SqlStateStore } from '../../adapters/clickhouse-sql/createSqlStateStore.ts';
import type { RejectionRow } from '../../engine/ports/rejections.ts';

const T0 = Date.UTC(2024, 0, 1);

const old: RejectionRow = { deviceId: 'd1', rejectedAt: T0, code: 'PROFILE_VIOLATION', reason: 'value 500 is above the maximum 100', asset: 'a', uplinkId: 'u-1', channel: 'mqtt' };

/** CREATE statements and one row (uplink u-1 at T0) of a rejections table made before `item`. */
export function earlierRejectionsTable(database: string): string[] {
  const table = `\`${database}\`.\`rejections\``;
  return [
    `CREATE DATABASE IF NOT EXISTS \`${database}\``,
    `CREATE TABLE ${table} (
  device_id String,
  rejected_at Int64,
  uplink_id String,
  code String,
  asset String,
  reason String,
  channel String
) ENGINE = ReplacingMergeTree()
ORDER BY (device_id, rejected_at, uplink_id, code, asset)`,
    `INSERT INTO ${table} (device_id, rejected_at, uplink_id, code, asset, reason, channel)
VALUES ('${old.deviceId}', ${old.rejectedAt}, '${old.uplinkId}', '${old.code}', '${old.asset}', '${old.reason}', '${old.channel}')`,
  ];
}

/** `open()` makes a store on the database earlierRejectionsTable filled (a new one each call). */
export async function checkRejectionsMigrated(open: () => SqlStateStore, database: string): Promise<void> {
  const items = [3, 0].map((item): RejectionRow => ({ ...old, rejectedAt: T0 + 1000, uplinkId: 'u-2', item }));
  const expected = [items[1], items[0], old];
  const store = open();
  try {
    await store.init();
    assert.equal(await store.rejections.recent('d1'), [old], 'a row made before item reads as one of no item');
    await store.rejections.append([old]);
    await store.rejections.append(items);
    await store.rejections.append(items);
    assert.equal(await store.rejections.recent('d1'), expected);
    const [{ key }] = await store.query(`SELECT sorting_key AS key FROM system.tables WHERE database = '${database}' AND name = 'rejections'`);
    assert.is(String(key).replace(/\s/g, ''), 'device_id,rejected_at,uplink_id,code,asset,item');
  } finally {
    await store.close();
  }
  // Opening the migrated table again changes nothing.
  const again = open();
  try {
    await again.init();
    assert.equal(await again.rejections.recent('d1'), expected);
  } finally {
    await again.close();
  }
}
