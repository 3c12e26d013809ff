/**
 * Rollups (adapters/clickhouse-sql/stateRollups.ts) answer exactly what a scan of the raw states
 * answers, also after replays, duplicates inside one append and appends out of time order.
 * The raw answer comes from the same store: a range that is not minute-aligned cannot be served by
 * a rollup, so `from - 1` (no state there) reads raw rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { rollupFor, ROLLUPS } from '../../../adapters/clickhouse-sql/stateRollups.ts';
import { newUplinkId } from '../../../engine/kernel/ids.ts';
import type { Resolution } from '../../../engine/ports/store.ts';
import type { JsonValue, StateRow } from '../../../schemas/messages.ts';

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;

function prng(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** 3 devices × 2 assets over two days; numbers in quarters (sums exact in any order), some strings and nulls. */
function uplinks(count: number): StateRow[][] {
  const random = prng(7);
  return Array.from({ length: count }, () => {
    const receivedAt = T0 + Math.floor(random() * 2 * DAY);
    const id = newUplinkId(receivedAt);
    const deviceId = `d${Math.floor(random() * 3)}`;
    return ['a', 'b'].map((asset): StateRow => {
      const r = random();
      const value: JsonValue = r < 0.8 ? Math.round((random() - 0.5) * 4000) / 4 : r < 0.9 ? 'text' : null;
      return { deviceId, asset, ts: receivedAt - Math.floor(random() * 5000), receivedAt, value, uplinkId: id };
    });
  });
}

test('rollup aggregates equal raw aggregates, after replays and out-of-order appends', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-rollups-'));
  const store = createChdbStore({ dir, rollups: true });
  try {
    await store.init();
    const all = uplinks(3000);
    // In batches, then a replay of a third of them, some twice within one append, shuffled.
    for (let i = 0; i < all.length; i += 500) await store.append(all.slice(i, i + 500).flat());
    const replay = all.filter((_, i) => i % 3 === 0).flat();
    await store.append([...replay.slice(0, 400), ...replay.slice(0, 400)].reverse());
    await store.append(replay.slice(400));
    // Until refreshed, aggregates over the appended minutes read raw states; from here on, rollups.
    await store.rollupsCaughtUp();
    const checks: Array<[Resolution, number, number]> = [
      ['minute', T0 + 3_600_000, T0 + 2 * 3_600_000],
      ['hour', T0, T0 + 2 * DAY],
      ['day', T0, T0 + 2 * DAY],
      ['day', T0 + 3_600_000, T0 + 2 * DAY], // hour-aligned: days from the hour rollup
      ['day', T0 - DAY, T0 + 3 * DAY], // day-aligned: days from the day rollup
    ];
    for (const deviceId of ['d0', 'd1', 'd2']) {
      for (const asset of ['a', 'b']) {
        for (const [resolution, from, to] of checks) {
          const rolled = await store.aggregate({ deviceId, asset, from, to, resolution });
          const raw = await store.aggregate({ deviceId, asset, from: from - 1, to, resolution });
          assert.ok(rolled.length > 0);
          assert.equal(rolled, raw, `${deviceId} ${asset} ${resolution}`);
        }
      }
    }
    // first, last and sum as analysts read them, against the raw rows.
    const [minute] = await store.query(`SELECT sum(states) AS c, sum(sum) AS s FROM fleetstream.states_minute FINAL WHERE device_id = 'd1' AND asset = 'a'`);
    const [raw] = await store.query(`SELECT count() AS c, sumIf(value_number, value_kind = 'number') AS s FROM fleetstream.states FINAL WHERE device_id = 'd1' AND asset = 'a'`);
    assert.equal([Number(minute.c), Number(minute.s)], [Number(raw.c), Number(raw.s)]);
    const by = '(ts, received_at, uplink_id)';
    const rawEnds = await store.query(`SELECT ts - ts % 3600000 AS b, argMinIf(value_number, ${by}, value_kind = 'number') AS f,
      argMaxIf(value_number, ${by}, value_kind = 'number') AS l
      FROM fleetstream.states FINAL WHERE device_id = 'd2' AND asset = 'b' GROUP BY b HAVING countIf(value_kind = 'number') > 0 ORDER BY b`);
    const hourEnds = await store.query(`SELECT bucket AS b, first AS f, last AS l FROM fleetstream.states_hour FINAL WHERE device_id = 'd2' AND asset = 'b' AND numbers > 0 ORDER BY b`);
    assert.ok(rawEnds.length > 10);
    assert.equal(hourEnds.map((r) => [Number(r.b), r.f, r.l]), rawEnds.map((r) => [Number(r.b), r.f, r.l]));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the coarsest rollup that tiles the range and the resolution is chosen, raw rows otherwise', () => {
  const [minute, hour, day] = ROLLUPS;
  assert.is(rollupFor(DAY, T0, T0 + DAY), day);
  assert.is(rollupFor(DAY, T0 + 3_600_000, T0 + DAY), hour);
  assert.is(rollupFor(3_600_000, T0, T0 + DAY), hour);
  assert.is(rollupFor(DAY, T0 + 60_000, T0 + DAY), minute);
  assert.is(rollupFor(3_600_000, -3_600_000, 0), hour);
  assert.is(rollupFor(60_000, T0, T0 + DAY), minute);
  assert.is(rollupFor(60_000, T0 + 1, T0 + DAY), undefined);
  assert.is(rollupFor(DAY, T0, T0 + DAY - 1), undefined);
});

test.run();
