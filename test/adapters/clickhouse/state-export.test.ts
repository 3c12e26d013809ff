/**
 * The state export port on chDB (compact layout and the 18.16 layout; Parquet written) and on the
 * ClickHouse server of CLICKHOUSE_URL (18.16: CSV and NDJSON, no Parquet; ids spliced as escaped
 * literals, as 18.16 has no query parameters).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withEnv } from '../../support/suite.ts';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { createClickHouseStore } from '../../../adapters/clickhouse/createClickHouseStore.ts';
import { stateExportContract } from '../../contracts/stateExport.contract.ts';
import { clickhouseQuery } from '../../support/clickhouseServer.ts';

let n = 0;
function chdb(legacyLayout: boolean) {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
    const store = createChdbStore({ dir, legacyLayout, maxConcurrentExports: 2 });
    return {
      store,
      parquet: true,
      async running() {
        const [row] = await store.query("SELECT count() AS n FROM system.processes WHERE query LIKE '%FINAL%' AND position(query, 'system.processes') = 0");
        return Number(row?.n);
      },
      async parquetRows(bytes: Buffer) {
        const file = join(dir, 'user_files', `read-${n++}.parquet`);
        writeFileSync(file, bytes);
        return store.query(`SELECT * FROM file('${file}', 'Parquet')`);
      },
      async cleanup() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  };
}

stateExportContract('chdb', chdb(false)).run();
stateExportContract('chdb, 18.16 layout', chdb(true)).run();

withEnv('state export on a ClickHouse server', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  stateExportContract(`clickhouse server ${url}`, async () => {
    const database = `fleetstream_export_${process.pid}_${n++}`;
    const store = createClickHouseStore({ url, database, maxConcurrentExports: 2 });
    return {
      store,
      parquet: false,
      async running() {
        const text = await clickhouseQuery(url, `SELECT count() FROM system.processes WHERE query LIKE '%${database}%FINAL%' AND position(query, 'system.processes') = 0`);
        return Number(text.trim());
      },
      async cleanup() {
        await store.close();
        await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
      },
    };
  }).run();
});
