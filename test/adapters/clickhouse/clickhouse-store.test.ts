/**
 * The state store contract against a real ClickHouse server (CI: Debian's clickhouse-server 18.16
 * started by scripts/clickhouse.sh). Runs only when CLICKHOUSE_URL is set.
 */
import { test, withEnv } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { createClickHouseStore } from '../../../adapters/clickhouse/createClickHouseStore.ts';
import { compactTypesIn } from '../../../adapters/clickhouse-sql/serverCapabilities.ts';
import type { JsonValue } from '../../../schemas/messages.ts';
import { randomDoubles, row, storeContract } from '../../contracts/store.contract.ts';
import { rejectionsContract } from '../../contracts/rejections.contract.ts';
import { checkMigrated, earlierStateTable } from '../../support/earlierStateTables.ts';
import { checkRejectionsMigrated, earlierRejectionsTable } from '../../support/earlierRejectionsTable.ts';
import { rejection } from '../../support/fleetErrors.ts';
import { clickhouseQuery, serverStoreIn } from '../../support/clickhouseServer.ts';

const url = process.env.CLICKHOUSE_URL;
const adminQuery = (sql: string) => clickhouseQuery(url!, sql);

withEnv('clickhouse-store', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  let n = 0;
  const databases: string[] = [];
  /** A store over `database`, initialised; the database is dropped after the suite. */
  const initialisedIn = async (database: string) => {
    databases.push(database);
    const store = createClickHouseStore({ url, database });
    await store.init();
    return { database, store };
  };
  // The store sends every append as RowBinary to the server; textInsert keeps its TabSeparated path
  // (the benches' baseline) under the same contract.
  for (const textInsert of [false, true]) {
    storeContract(`clickhouse server ${url}${textInsert ? ', TabSeparated' : ''}`, async () => {
      const database = `fleetstream_test_${process.pid}_${n++}`;
      databases.push(database);
      const store = createClickHouseStore({ url, database, textInsert });
      return {
        store,
        async cleanup() {
          await store.close();
          await adminQuery(`DROP DATABASE IF EXISTS ${database}`);
        },
      };
    }).run();
  }

  rejectionsContract(`clickhouse server ${url}`, async () => {
    const { store, cleanup } = await serverStoreIn(url, `fleetstream_test_${process.pid}_${n++}`);
    return { rejections: store.rejections, cleanup };
  }).run();

  test('a states table made before seq (the server\'s layout) is migrated at init: old rows read, a batch\'s readings at one time kept, replays fold', async () => {
    const database = `fleetstream_test_${process.pid}_${n++}`;
    databases.push(database);
    const version = (await adminQuery('SELECT version()')).trim();
    const layout = compactTypesIn(version) ? 'compact' : 'legacy';
    for (const sql of earlierStateTable(database, layout)) await adminQuery(sql);
    await checkMigrated(() => createClickHouseStore({ url, database }), database, layout);
  });

  test('a rejections table made before item is migrated at init: old rows read, replays fold, refusals in different items of one uplink are each kept', async () => {
    const database = `fleetstream_test_${process.pid}_${n++}`;
    databases.push(database);
    for (const sql of earlierRejectionsTable(database)) await adminQuery(sql);
    await checkRejectionsMigrated(() => createClickHouseStore({ url, database }), database);
  });

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

  test('a table that goes away after init (a server being stopped) fails UNAVAILABLE, retriable', async () => {
    const { database, store } = await initialisedIn(`fleetstream_gone_${process.pid}`);
    await adminQuery(`DROP TABLE ${database}.states`);
    const table = await rejection(store.append([row('d1', 'a', 1, 1)]));
    assert.is(table.code, 'UNAVAILABLE');
    assert.is(table.retriable, true);
    assert.is(table.detail?.clickhouseCode, 60);
    await adminQuery(`DROP DATABASE ${database}`);
    const db = await rejection(store.latest('d1'));
    assert.is(db.retriable, true);
    assert.is(db.detail?.clickhouseCode, 81);
    await store.close();
  });

  test('a batch as RowBinary keeps every double bit for bit, and every value kind', async () => {
    const { store } = await initialisedIn(`fleetstream_binary_${process.pid}`);
    const values: JsonValue[] = randomDoubles(6000, 99);
    values.push(-0, 'tab\tand é 😀', true, false, null, { nested: [1, 'x'] }, '');
    await store.append(values.map((value, i) => row('d1', 'a', i, value, `u-${i}`)));
    const back = await store.history({ deviceId: 'd1', asset: 'a', order: 'asc', limit: 10_000 });
    assert.is(back.length, values.length);
    back.forEach((state, i) => assert.ok(Object.is(state.value, values[i]) || JSON.stringify(state.value) === JSON.stringify(values[i]), `${state.value} vs ${values[i]}`));
    await store.close();
  });

  test('the server version picks the layout: 18.16 keeps its own', async () => {
    const { store } = await initialisedIn(`fleetstream_layout_${process.pid}`);
    const version = (await adminQuery('SELECT version()')).trim();
    assert.is(store.layout.capabilities?.version, version);
    assert.is(store.layout.kind, compactTypesIn(version) ? 'compact' : 'legacy');
    await store.close();
  });

  test('wrong credentials fail UNAVAILABLE, not retriable', async () => {
    const store = createClickHouseStore({ url, database: 'x', username: 'nobody', password: 'wrong' });
    const error = await rejection(store.init());
    assert.is(error.code, 'UNAVAILABLE');
    assert.is(error.retriable, false);
    await store.close();
  });

  test('an append fails as the other calls do: unreachable UNAVAILABLE retriable, wrong credentials not retriable, past its deadline TIMEOUT', async () => {
    const nowhere = createClickHouseStore({ url: 'http://127.0.0.1:9', database: 'nowhere' });
    const unreachable = await rejection(nowhere.append([row('d1', 'a', 1, 1)]));
    assert.equal([unreachable.code, unreachable.retriable], ['UNAVAILABLE', true]);
    await nowhere.close();
    const { database, store } = await initialisedIn(`fleetstream_append_errors_${process.pid}`);
    await store.close();
    const stranger = createClickHouseStore({ url, database, username: 'nobody', password: 'wrong' });
    const credentials = await rejection(stranger.append([row('d1', 'a', 1, 1)]));
    assert.equal([credentials.code, credentials.retriable], ['UNAVAILABLE', false]);
    assert.ok(typeof credentials.detail?.clickhouseCode === 'number', 'the server\'s code is read from its answer');
    await stranger.close();
    const hurried = createClickHouseStore({ url, database, requestTimeoutMs: 1 });
    const late = await rejection(hurried.append(Array.from({ length: 50_000 }, (_, i) => row('d1', 'a', i, i))));
    assert.equal([late.code, late.retriable], ['TIMEOUT', true]);
    await hurried.close();
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
