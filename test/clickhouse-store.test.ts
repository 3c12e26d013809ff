/**
 * The state store contract against a real ClickHouse server (CI: Debian's clickhouse-server 18.16
 * started by scripts/clickhouse.sh). Runs only when CLICKHOUSE_URL is set.
 */
import { test, withEnv } from './support/suite.ts';
import * as assert from 'uvu/assert';
import { createClickHouseStore } from '../adapters/clickhouse/createClickHouseStore.ts';
import { FleetError } from '../engine/kernel/errors.ts';
import { row, storeContract } from './contracts/store.contract.ts';
import { rejectionsContract } from './contracts/rejections.contract.ts';

const url = process.env.CLICKHOUSE_URL;

async function adminQuery(sql: string): Promise<string> {
  const response = await fetch(`${url}/?query=${encodeURIComponent(sql)}`, { method: 'POST' });
  const text = await response.text();
  if (!response.ok) throw new Error(text);
  return text;
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

withEnv('clickhouse-store', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  let n = 0;
  const databases: string[] = [];
  storeContract(`clickhouse server ${url}`, async () => {
    const database = `fleetstream_test_${process.pid}_${n++}`;
    databases.push(database);
    const store = createClickHouseStore({ url, database });
    return {
      store,
      async cleanup() {
        await store.close();
        await adminQuery(`DROP DATABASE IF EXISTS ${database}`);
      },
    };
  }).run();

  rejectionsContract(`clickhouse server ${url}`, async () => {
    const database = `fleetstream_test_${process.pid}_${n++}`;
    const store = createClickHouseStore({ url, database });
    await store.init();
    return {
      rejections: store.rejections,
      async cleanup() {
        await store.close();
        await adminQuery(`DROP DATABASE IF EXISTS ${database}`);
      },
    };
  }).run();

  test('server version is reported', async () => {
    console.log(`clickhouse-store: server version ${(await adminQuery('SELECT version()')).trim()}`);
  });

  test('an unreachable server fails UNAVAILABLE, retriable', async () => {
    const store = createClickHouseStore({ url: 'http://127.0.0.1:9', database: 'nowhere' });
    const error = await rejection(store.init());
    assert.is(error.code, 'UNAVAILABLE');
    assert.is(error.retriable, true);
    await store.close();
  });

  test('a missing table (init not called) maps the ClickHouse code, not retriable', async () => {
    const store = createClickHouseStore({ url, database: `fleetstream_missing_${process.pid}` });
    const error = await rejection(store.append([row('d1', 'a', 1, 1)]));
    assert.is(error.code, 'INTERNAL');
    assert.is(error.retriable, false);
    assert.ok([60, 81].includes(error.detail?.clickhouseCode as number), String(error.detail?.clickhouseCode));
    await store.close();
  });

  test('wrong credentials fail UNAVAILABLE, not retriable', async () => {
    const store = createClickHouseStore({ url, database: 'x', username: 'nobody', password: 'wrong' });
    const error = await rejection(store.init());
    assert.is(error.code, 'UNAVAILABLE');
    assert.is(error.retriable, false);
    await store.close();
  });

  test('a request past its deadline fails TIMEOUT, retriable', async () => {
    const store = createClickHouseStore({ url, database: 'x', requestTimeoutMs: 1 });
    const error = await rejection(store.latest('d1'));
    assert.is(error.code, 'TIMEOUT');
    assert.is(error.retriable, true);
    await store.close();
  });

  test.after(async () => {
    for (const database of databases) await adminQuery(`DROP DATABASE IF EXISTS ${database}`);
  });

  test.run();
});
