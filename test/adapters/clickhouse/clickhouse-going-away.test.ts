/**
 * "Unknown table/database" from ClickHouse: final before the store's init() found its tables (a
 * misconfiguration), retriable after (a server being stopped under load). Engine-free: a scripted
 * executor stands in for chDB or the server.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createSqlStateStore } from '../../../adapters/clickhouse-sql/createSqlStateStore.ts';
import type { SqlExecutor } from '../../../adapters/clickhouse-sql/SqlExecutor.ts';
import { fleetErrorFromClickHouseCode } from '../../../adapters/clickhouse-sql/clickhouseErrors.ts';
import { rejectsWith, row } from '../../contracts/store.contract.ts';

function scripted(): SqlExecutor & { failWith?: number } {
  const executor: SqlExecutor & { failWith?: number } = {
    async command() {},
    async select(sql) {
      if (executor.failWith !== undefined) throw fleetErrorFromClickHouseCode(executor.failWith, `Code: ${executor.failWith}`, undefined);
      if (sql.startsWith('SELECT version()')) return [{ v: '18.16.1' }];
      // Tables as this release makes them: init finds nothing to migrate.
      if (sql.includes('FROM system.columns')) return [{ name: 'seq' }, { name: 'item' }];
      return [];
    },
    async insertTsv() {
      if (executor.failWith !== undefined) throw fleetErrorFromClickHouseCode(executor.failWith, `Code: ${executor.failWith}`, undefined);
    },
    async close() {},
  };
  return executor;
}

for (const code of [60, 81, 218]) {
  test(`code ${code} is final before init and retriable after`, async () => {
    const executor = scripted();
    const store = createSqlStateStore(executor);
    executor.failWith = code;
    const before = await rejectsWith(store.append([row('d1', 'a', 1, 1)]), 'INTERNAL');
    assert.is(before.retriable, false);
    assert.is((await rejectsWith(store.init(), 'INTERNAL')).retriable, false);
    executor.failWith = undefined;
    await store.init();
    executor.failWith = code;
    for (const call of [store.append([row('d1', 'a', 1, 1)]), store.latest('d1'), store.rejections.recent('d1')]) {
      const after = await rejectsWith(call, 'UNAVAILABLE');
      assert.is(after.retriable, true);
      assert.is(after.detail?.clickhouseCode, code);
    }
  });
}

test('other query errors stay final after init', async () => {
  const executor = scripted();
  const store = createSqlStateStore(executor);
  await store.init();
  executor.failWith = 62; // SYNTAX_ERROR
  const error = await rejectsWith(store.latest('d1'), 'INTERNAL');
  assert.is(error.retriable, false);
});

test.run();
