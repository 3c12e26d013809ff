/**
 * The command history contract on chDB and, when CLICKHOUSE_URL is set, on the ClickHouse server
 * (CI: Debian's 18.16 from scripts/clickhouse.sh).
 */
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { commandHistoryContract } from '../../contracts/commandHistory.contract.ts';
import { serverStoreIn } from '../../support/clickhouseServer.ts';
import { withEnv } from '../../support/suite.ts';
import { tempDir } from '../../support/tmp.ts';

commandHistoryContract('chdb', async () => {
  const tmp = tempDir('command-history');
  const store = createChdbStore({ dir: tmp.dir });
  await store.init();
  return {
    history: store.commands,
    async cleanup() {
      await store.close();
      tmp.remove();
    },
  };
}).run();

withEnv('command-history', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  let n = 0;
  commandHistoryContract(`clickhouse server ${url}`, async () => {
    const { store, cleanup } = await serverStoreIn(url, `fleetstream_cmd_test_${process.pid}_${n++}`);
    return { history: store.commands, cleanup };
  }).run();
});
