/**
 * The state retention port (states expired by ground, docs/grounds.md "Quotas") on chDB — the
 * compact layout (lightweight DELETE), the 18.16 layout (an ALTER TABLE … DELETE mutation) and
 * rollups — and on the ClickHouse server of CLICKHOUSE_URL (18.16: a mutation).
 */
import { withEnv } from '../../support/suite.ts';
import { createClickHouseStore } from '../../../adapters/clickhouse/createClickHouseStore.ts';
import { stateRetentionContract } from '../../contracts/stateRetention.contract.ts';
import { clickhouseQuery } from '../../support/clickhouseServer.ts';
import { chdbStoreFixture } from '../../support/chdbFixture.ts';

const chdb = chdbStoreFixture;

stateRetentionContract('chdb', chdb(false)).run();
stateRetentionContract('chdb, 18.16 layout', chdb(true)).run();
stateRetentionContract('chdb, rollups', chdb(false, true)).run();

withEnv('state retention on a ClickHouse server', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  let n = 0;
  stateRetentionContract(`clickhouse server ${url}`, async () => {
    const database = `fleetstream_retention_${process.pid}_${n++}`;
    const store = createClickHouseStore({ url, database });
    return {
      store,
      async cleanup() {
        await store.close();
        await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
      },
    };
  }).run();
});
