/** Tests against a ClickHouse server over its HTTP interface: raw statements, and stores in databases of their own. */
import { createClickHouseStore } from '../../adapters/clickhouse/createClickHouseStore.ts';

/** Runs `sql` on the server at `url`: its answer as text; a refused statement throws with the server's message. */
export async function clickhouseQuery(url: string, sql: string): Promise<string> {
  const response = await fetch(`${url}/?query=${encodeURIComponent(sql)}`, { method: 'POST' });
  const text = await response.text();
  if (!response.ok) throw new Error(text);
  return text;
}

/** A store over `database` on the server at `url`, initialised, and its cleanup: close the store, drop the database. */
export async function serverStoreIn(url: string, database: string) {
  const store = createClickHouseStore({ url, database });
  await store.init();
  return {
    store,
    async cleanup() {
      await store.close();
      await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
    },
  };
}
