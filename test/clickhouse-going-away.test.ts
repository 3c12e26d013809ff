/**
 * "Unknown table/database" from ClickHouse: final before the store's init() found its tables (a
 * misconfiguration), retriable after (a server being stopped under load). Engine-free: a scripted
 * executor stands in for chDB or the server.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createSqlStateStore, type SqlExecutor } from '../adapters/clickhouse-sql/createSqlStateStore.ts';
import { fleetErrorFromClickHouseCode } from '../adapters/clickhouse-sql/clickhouseErrors.ts';
import { FleetError } from '../engine/errors.ts';
import { row } from './contracts/store.contract.ts';

function scripted(): SqlExecutor & { failWith?: number } {
  const executor: SqlExecutor & { failWith?: number } = {
    async command() {},
    async select(sql) {
      if (executor.failWith !== undefined) throw fleetErrorFromClickHouseCode(executor.failWith, `Code: ${executor.failWith}`, undefined);
      return sql.startsWith('SELECT version()') ? [{ v: '18.16.1' }] : [];
    },
    async insertTsv() {
      if (executor.failWith !== undefined) throw fleetErrorFromClickHouseCode(executor.failWith, `Code: ${executor.failWith}`, undefined);
    },
    async close() {},
  };
  return executor;
}

async function rejection(promise: Promise<unknown>): Promise<FleetError> {
  try {
    await promise;
  } catch (error) {
    assert.instance(error, FleetError);
    return error as FleetError;
  }
  throw new Error('expected a rejection');
}

for (const code of [60, 81, 218]) {
  test(`code ${code} is final before init and retriable after`, async () => {
    const executor = scripted();
    const store = createSqlStateStore(executor);
    executor.failWith = code;
    const before = await rejection(store.append([row('d1', 'a', 1, 1)]));
    assert.is(before.code, 'INTERNAL');
    assert.is(before.retriable, false);
    assert.is((await rejection(store.init())).retriable, false);
    executor.failWith = undefined;
    await store.init();
    executor.failWith = code;
    for (const call of [store.append([row('d1', 'a', 1, 1)]), store.latest('d1'), store.rejections.recent('d1')]) {
      const after = await rejection(call);
      assert.is(after.code, 'UNAVAILABLE');
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
  const error = await rejection(store.latest('d1'));
  assert.is(error.code, 'INTERNAL');
  assert.is(error.retriable, false);
});

test.run();
