/**
 * Rollups are on by default and start from the states stored before them: a database made without
 * rollups is filled once when a store keeping them opens it; a store run with rollups off leaves the
 * rollups marked stale, and the next one keeping them rebuilds them; a backfill done twice changes
 * nothing. On chDB (both layouts) and on the ClickHouse server (18.16 in CI) when CLICKHOUSE_URL is set.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { test, withEnv } from '../../support/suite.ts';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { createClickHouseStore } from '../../../adapters/clickhouse/createClickHouseStore.ts';
import type { SqlStateStore } from '../../../adapters/clickhouse-sql/createSqlStateStore.ts';
import { newUplinkId } from '../../../engine/kernel/ids.ts';
import type { StateRow } from '../../../schemas/messages.ts';
import { clickhouseQuery } from '../../support/clickhouseServer.ts';

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;

/** One state per device every 7 minutes over `days` days from `start`, numbers in quarters (exact sums). */
function states(start: number, days: number): StateRow[] {
  const out: StateRow[] = [];
  for (let t = start; t < start + days * DAY; t += 7 * 60_000) {
    for (const deviceId of ['d0', 'd1']) {
      const receivedAt = t + 100;
      out.push({ deviceId, asset: 'temperature', ts: t, receivedAt, value: ((t / 60_000) % 97) / 4, uplinkId: newUplinkId(receivedAt) });
    }
  }
  return out;
}

type Open = (rollups: boolean | undefined) => SqlStateStore;

/** What the rollups hold, per table: rows, states and the sum over numbers; and what the raw states hold. */
async function totals(store: SqlStateStore, database: string) {
  const out: Record<string, [number, number, number]> = {};
  for (const table of ['states_minute', 'states_hour', 'states_day']) {
    const [r] = await store.query(`SELECT count() AS n, sum(states) AS s, sum(sum) AS v FROM ${database}.${table} FINAL`);
    out[table] = [Number(r.n), Number(r.s), Number(r.v)];
  }
  const [raw] = await store.query(`SELECT count() AS s, sumIf(value_number, value_kind = 'number') AS v FROM ${database}.state_rows`);
  return { rollups: out, raw: [Number(raw.s), Number(raw.v)] };
}

async function tables(store: SqlStateStore, database: string): Promise<string[]> {
  return (await store.query(`SELECT name FROM system.tables WHERE database = '${database}' ORDER BY name`)).map((t) => String(t.name));
}

/** Opens, inits, runs `body`, closes. */
async function session<T>(open: Open, rollups: boolean | undefined, body: (store: SqlStateStore) => Promise<T>): Promise<T> {
  const store = open(rollups);
  try {
    await store.init();
    return await body(store);
  } finally {
    await store.close();
  }
}

async function backfillScenario(open: Open, database: string): Promise<void> {
  const first = states(T0, 3);
  // An older database: states stored without rollups.
  await session(open, false, async (store) => {
    await store.append(first);
    assert.not.ok((await tables(store, database)).includes('states_minute'), 'rollups off: no rollup tables made');
  });
  // Reopened with rollups on: they exist and hold every state stored before.
  const filled = await session(open, true, async (store) => {
    const t = await totals(store, database);
    assert.is(t.raw[0], first.length);
    for (const [table, [rows, count, sum]] of Object.entries(t.rollups)) {
      assert.ok(rows > 0, table);
      assert.equal([count, sum], t.raw, table);
    }
    const hour = { deviceId: 'd1', asset: 'temperature', from: T0, to: T0 + 3 * DAY, resolution: 'hour' as const };
    // The same answer from the rollup (aligned range) as from raw states (a range one ms wider).
    assert.equal(await store.aggregate(hour), await store.aggregate({ ...hour, from: T0 - 1 }));
    return t;
  });
  // Opened again: nothing to fill, the same totals (a backfill is done once, and would be idempotent).
  await session(open, true, async (store) => assert.equal(await totals(store, database), filled));
  // A run with rollups off appends states the rollups lack, and says so.
  const later = states(T0 + 3 * DAY, 2);
  await session(open, false, async (store) => {
    await store.append(later);
    assert.ok((await tables(store, database)).includes('states_rollups_stale'));
  });
  // Back on: rebuilt from all states, marker gone.
  await session(open, true, async (store) => {
    const t = await totals(store, database);
    assert.is(t.raw[0], first.length + later.length);
    for (const [table, [, count, sum]] of Object.entries(t.rollups)) assert.equal([count, sum], t.raw, table);
    assert.not.ok((await tables(store, database)).includes('states_rollups_stale'));
    // Appends refresh them from here on, a replay counted once.
    await store.append([...later.slice(0, 10), ...states(T0 + 5 * DAY, 1)]);
    await store.rollupsCaughtUp();
    const after = await totals(store, database);
    for (const [table, [, count, sum]] of Object.entries(after.rollups)) assert.equal([count, sum], after.raw, table);
  });
}

for (const legacyLayout of [false, true]) {
  test(`chDB${legacyLayout ? ', 18.16 layout' : ''}: rollups of a database made without them are filled once; after a run without them, rebuilt`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-backfill-'));
    try {
      await backfillScenario((rollups) => createChdbStore({ dir, legacyLayout, rollups }), 'fleetstream');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

withEnv('rollups backfill on a server', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  test('ClickHouse server: rollups of a database made without them are filled once; after a run without them, rebuilt', async () => {
    const database = `fleetstream_backfill_${process.pid}`;
    try {
      await backfillScenario((rollups) => createClickHouseStore({ url, database, rollups }), database);
    } finally {
      await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
    }
  });
});

test.run();
