/**
 * Rollups refreshed beside the appends (adapters/clickhouse-sql/rollupRefresh.ts): after a burst
 * spread over more minutes than one refresh takes, replays included, they catch up by themselves
 * to what the raw states hold, a replay counted once; meanwhile the aggregate API answers what
 * the raw states answer. A store that died with buckets still to refresh leaves a marker, and the
 * next store opening the database rebuilds the rollups. On chDB (both layouts) and on the
 * ClickHouse server (18.16 in CI) when CLICKHOUSE_URL is set.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { test, withEnv } from '../../support/suite.ts';
import { waitFor } from '../../support/tmp.ts';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { createClickHouseStore } from '../../../adapters/clickhouse/createClickHouseStore.ts';
import type { SqlStateStore } from '../../../adapters/clickhouse-sql/createSqlStateStore.ts';
import { MINUTES_PER_REFRESH } from '../../../adapters/clickhouse-sql/rollupRefresh.ts';
import { newUplinkId } from '../../../engine/kernel/ids.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import type { StateRow } from '../../../schemas/messages.ts';
import { clickhouseQuery } from '../../support/clickhouseServer.ts';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const DAY = 86_400_000;

/** One state a minute for each of `devices` devices, over `minutes` minutes from `start`; numbers in quarters (exact sums). */
function burst(start: number, minutes: number, devices: number): StateRow[][] {
  const batches: StateRow[][] = [];
  for (let m = 0; m < minutes; m += 60) {
    const batch: StateRow[] = [];
    for (let i = m; i < Math.min(m + 60, minutes); i++) {
      for (let d = 0; d < devices; d++) {
        const ts = start + i * MINUTE + d;
        batch.push({ deviceId: `d${d}`, asset: 'temperature', ts, receivedAt: ts + 50, value: ((i * 7 + d) % 101) / 4, uplinkId: newUplinkId(ts + 50) });
      }
    }
    batches.push(batch);
  }
  return batches;
}

/** Per rollup table: states and the sum over numbers; and the same over the raw states. */
async function totals(store: SqlStateStore, database: string) {
  const out: Array<[number, number]> = [];
  for (const table of ['states_minute', 'states_hour', 'states_day']) {
    const [r] = await store.query(`SELECT sum(states) AS s, sum(sum) AS v FROM ${database}.${table} FINAL`);
    out.push([Number(r.s), Number(r.v)]);
  }
  const [raw] = await store.query(`SELECT count() AS s, sumIf(value_number, value_kind = 'number') AS v FROM ${database}.state_rows`);
  return { rollups: out, raw: [Number(raw.s), Number(raw.v)] as [number, number] };
}

async function tables(store: SqlStateStore, database: string): Promise<string[]> {
  return (await store.query(`SELECT name FROM system.tables WHERE database = '${database}'`)).map((t) => String(t.name));
}

/** A burst over 3 days of minutes (more than two refreshes take), a replay of a third of it within. */
async function burstCatchesUp(store: SqlStateStore, database: string): Promise<void> {
  await store.init();
  const minutes = 3 * DAY / MINUTE;
  assert.ok(minutes > 2 * MINUTES_PER_REFRESH);
  const batches = burst(T0, minutes, 3);
  for (const [i, batch] of batches.entries()) {
    await store.append(batch);
    if (i % 3 === 0) await store.append(batches[Math.floor(i / 2)]); // a replay of an earlier batch
  }
  const stored = batches.flat();
  // Whether refreshed yet or not, the aggregate API answers what the raw states answer.
  const day = { deviceId: 'd1', asset: 'temperature', from: T0, to: T0 + 3 * DAY, resolution: 'day' as const };
  const raw = await store.aggregate({ ...day, from: T0 - 1 });
  assert.is(raw.reduce((n, b) => n + b.count, 0), stored.length / 3);
  assert.equal(await store.aggregate(day), raw);
  // The rollups catch up by themselves, each state once.
  const expected = (await totals(store, database)).raw;
  assert.is(expected[0], stored.length);
  await waitFor(async () => (await totals(store, database)).rollups.every(([s, v]) => s === expected[0] && v === expected[1]), 120_000, 'rollups caught up');
  assert.equal((await totals(store, database)).rollups, [expected, expected, expected]);
  assert.equal(await store.aggregate(day), raw);
  assert.ok((await tables(store, database)).includes('states_rollups_pending'), 'marked while open');
}

for (const legacyLayout of [false, true]) {
  test(`chDB${legacyLayout ? ', 18.16 layout' : ''}: rollups catch up after a burst with replays, counted once`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-rollup-burst-'));
    try {
      const store = createChdbStore({ dir, legacyLayout, rollupRefreshMs: 100 });
      try {
        await burstCatchesUp(store, 'fleetstream');
      } finally {
        await store.close();
      }
      // Closed after the last refresh: the marker is gone and the next store finds nothing to rebuild.
      const again = createChdbStore({ dir, legacyLayout });
      try {
        await again.init();
        const t = await totals(again, 'fleetstream');
        assert.equal(t.rollups, [t.raw, t.raw, t.raw]);
      } finally {
        await again.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('chDB: the recent buckets an aggregate reads from raw states are those of the last 5 minutes by the store\'s clock', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-rollup-recent-'));
  try {
    const keeper = createChdbStore({ dir });
    try {
      await keeper.init();
      for (const batch of burst(T0, 180, 1)) await keeper.append(batch);
      await keeper.rollupsCaughtUp();
    } finally {
      await keeper.close();
    }
    const clock = new SimulatedClock(T0 + 3 * 60 * MINUTE + 2 * MINUTE);
    const reader = createChdbStore({ dir, keepRollups: false, clock });
    try {
      await reader.init();
      // A state in the last hour that no refresh has seen (this store only reads the rollups).
      const late = T0 + 2 * 60 * MINUTE + 5;
      await reader.append([{ deviceId: 'd0', asset: 'temperature', ts: late, receivedAt: late + 1, value: 100, uplinkId: newUplinkId(late + 1) }]);
      const hours = { deviceId: 'd0', asset: 'temperature', from: T0, to: T0 + 3 * 60 * MINUTE, resolution: 'hour' as const };
      const counts = async () => (await reader.aggregate(hours)).map((b) => b.count);
      assert.equal((await reader.aggregate({ ...hours, from: hours.from - 1 })).map((b) => b.count), [60, 60, 61], 'the raw states');
      // 2 minutes after the last hour ended: that hour lies within the last 5 minutes, read raw.
      assert.equal(await counts(), [60, 60, 61]);
      // 8 minutes later the last hour is past the window: every hour from the rollups.
      clock.advance(8 * MINUTE);
      assert.equal(await counts(), [60, 60, 60]);
    } finally {
      await reader.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

withEnv('rollup refresh on a server', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  test('ClickHouse server: rollups catch up after a burst with replays, counted once', async () => {
    const database = `fleetstream_burst_${process.pid}`;
    const store = createClickHouseStore({ url, database, rollupRefreshMs: 100 });
    try {
      await burstCatchesUp(store, database);
    } finally {
      await store.close();
      await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
    }
  });

  test('ClickHouse server: a store that has yet to refresh what it appended leaves a marker, and the next store rebuilds the rollups; two stores, one replaying the other, count once', async () => {
    const database = `fleetstream_pending_${process.pid}`;
    // Never refreshes while the test runs: as if it died after these appends.
    const first = createClickHouseStore({ url, database, rollupRefreshMs: 3_600_000 });
    const second = createClickHouseStore({ url, database, rollupRefreshMs: 3_600_000 });
    try {
      await first.init();
      for (const batch of burst(T0, 180, 2)) await first.append(batch);
      const before = await totals(first, database);
      assert.equal(before.rollups, [[0, 0], [0, 0], [0, 0]], 'not refreshed yet');
      assert.ok((await tables(first, database)).includes('states_rollups_pending'));
      await second.init();
      const after = await totals(second, database);
      assert.is(after.raw[0], 360);
      assert.equal(after.rollups, [after.raw, after.raw, after.raw]);
      // Two engines appending to one database, the second replaying the first's states: counted once.
      const more = burst(T0 + 180 * MINUTE, 120, 2);
      await first.append(more[0]);
      await second.append([...more[0], ...more[1]]);
      await first.rollupsCaughtUp();
      await second.rollupsCaughtUp();
      const both = await totals(second, database);
      assert.is(both.raw[0], 360 + 240);
      assert.equal(both.rollups, [both.raw, both.raw, both.raw]);
    } finally {
      await first.close();
      await second.close();
      await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
    }
  });

  test('ClickHouse server: the API of one process reads recent states another has appended and not yet refreshed', async () => {
    const database = `fleetstream_recent_${process.pid}`;
    const engine = createClickHouseStore({ url, database, rollupRefreshMs: 3_600_000 });
    const api = createClickHouseStore({ url, database, rollupRefreshMs: 3_600_000 });
    try {
      await engine.init();
      await api.init();
      const hour = 3_600_000;
      const now = Date.now();
      // Within the last 5 minutes, which aggregates always read from raw states (whatever the hour's boundary).
      await engine.append(burst(now - 4 * MINUTE, 4, 1).flat());
      const query = { deviceId: 'd0', asset: 'temperature', from: Math.floor(now / hour) * hour - hour, to: Math.floor(now / hour) * hour + hour, resolution: 'hour' as const };
      assert.equal((await totals(api, database)).rollups[0], [0, 0], 'not refreshed');
      const fromRaw = await api.aggregate({ ...query, from: query.from - 1 });
      assert.is(fromRaw.reduce((n, b) => n + b.count, 0), 4);
      assert.equal(await api.aggregate(query), fromRaw);
    } finally {
      await engine.close();
      await api.close();
      await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
    }
  });

  test('ClickHouse server: a store that only reads the rollups (an edge) makes no table or marker, leaves the keeper\'s marker, and reads what the keeper refreshed', async () => {
    const database = `fleetstream_reader_${process.pid}`;
    const early = createClickHouseStore({ url, database, keepRollups: false });
    const keeper = createClickHouseStore({ url, database, rollupRefreshMs: 3_600_000 });
    const reader = createClickHouseStore({ url, database, keepRollups: false });
    const hour = { deviceId: 'd0', asset: 'temperature', from: T0, to: T0 + 3 * 3_600_000, resolution: 'hour' as const };
    try {
      // Started before any engine: no rollups yet, so raw states; nothing made but the states tables.
      await early.init();
      assert.not.ok((await tables(early, database)).some((t) => t.startsWith('states_')), 'no rollup table, no marker');
      assert.equal(await early.aggregate(hour), []);
      await keeper.init();
      for (const batch of burst(T0, 180, 2)) await keeper.append(batch);
      await keeper.rollupsCaughtUp();
      await reader.init();
      await reader.close();
      assert.ok((await tables(keeper, database)).includes('states_rollups_pending'), 'the keeper\'s marker stays while it is open');
      const fresh = createClickHouseStore({ url, database, keepRollups: false });
      await fresh.init();
      try {
        // A state the keeper has appended and not refreshed, in an hour long past: the raw answer has it, the rollups not yet.
        await keeper.append([{ deviceId: 'd0', asset: 'temperature', ts: T0 + 5, receivedAt: T0 + 6, value: 100, uplinkId: newUplinkId(T0 + 6) }]);
        const fromRollups = await fresh.aggregate(hour);
        const fromRaw = await fresh.aggregate({ ...hour, from: hour.from - 1 });
        assert.equal(fromRollups.map((b) => b.count), [60, 60, 60], 'read from the rollups the keeper refreshed');
        assert.equal(fromRaw.map((b) => b.count), [61, 60, 60]);
        assert.equal(await early.aggregate({ ...hour, from: hour.from - 1 }), fromRaw, 'the store that found no rollups reads raw states');
      } finally {
        await fresh.close();
      }
    } finally {
      await early.close();
      await keeper.close();
      await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
    }
  });

  test('ClickHouse server: a store whose refresh fails at close still closes, and says why', async () => {
    const database = `fleetstream_gone_${process.pid}`;
    const errors: unknown[] = [];
    const store = createClickHouseStore({ url, database, rollupRefreshMs: 3_600_000, onRollupError: (error) => errors.push(error) });
    await store.init();
    await store.append(burst(T0, 2, 1).flat());
    await clickhouseQuery(url, `DROP DATABASE IF EXISTS ${database}`);
    await store.close();
    assert.is(errors.length, 1);
    assert.match(String((errors[0] as Error).message), /doesn't exist|does not exist|UNKNOWN_DATABASE/);
  });
});

test.run();
