/**
 * Contract of the state retention port (engine/ports/stateRetention.ts), run beside the store
 * contract on chDB (compact, 18.16 layout, rollups) and on the ClickHouse server of CLICKHOUSE_URL
 * (18.16: a mutation, applied in the background, so the suite waits for it): the states of the
 * devices named measured before the time go, with their rollups; others stay; sweeping again
 * deletes nothing more; hostile ids are quoted, never run.
 */
import { suite } from '../support/suite.ts';
import * as assert from 'uvu/assert';
import type { StateRetention } from '../../engine/ports/stateRetention.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import { waitFor } from '../support/tmp.ts';
import { rejectsWith, row } from './store.contract.ts';

export interface RetentionFixture {
  store: StateStore & { retention: StateRetention };
  cleanup(): Promise<void>;
}

const DAY = 86_400_000;
const NOW = Date.UTC(2025, 5, 1);

export function stateRetentionContract(name: string, factory: () => Promise<RetentionFixture>) {
  const test = suite<{ fixture?: RetentionFixture }>(`state retention contract: ${name}`);
  test.before.each(async (ctx) => {
    ctx.fixture = await factory();
    await ctx.fixture.store.init();
  });
  test.after.each(async (ctx) => {
    await ctx.fixture?.cleanup();
    ctx.fixture = undefined;
  });

  const count = async (s: StateStore, deviceId: string) => (await s.history({ deviceId, asset: 't', from: 0, to: NOW + DAY, limit: 1000 })).length;

  test('the named devices\' states before the time go (aggregates too); newer states and other devices stay; again is a no-op', async (ctx) => {
    const s = ctx.fixture!.store;
    const old = [0, 1, 2].map((i) => row('d1', 't', NOW - 40 * DAY + i * 60_000, i));
    const recent = [0, 1].map((i) => row('d1', 't', NOW - 2 * DAY + i * 60_000, 10 + i));
    await s.append([...old, ...recent, row('d2', 't', NOW - 40 * DAY, 99), row("d'3", 't', NOW - 40 * DAY, 7)]);
    assert.is(await count(s, 'd1'), 5);
    await s.retention.expireStates(['d1', "d'3"], NOW - 30 * DAY);
    await waitFor(async () => (await count(s, 'd1')) === 2 && (await count(s, "d'3")) === 0, 20_000, 'the deletion applied');
    assert.equal((await s.history({ deviceId: 'd1', asset: 't', from: 0, to: NOW + DAY })).map((x) => x.value).sort(), [10, 11]);
    assert.is(await count(s, 'd2'), 1, 'a device not named keeps its states');
    const buckets = await s.aggregate({ deviceId: 'd1', asset: 't', from: NOW - 50 * DAY, to: NOW, resolution: 'hour' });
    assert.is(buckets.reduce((n, b) => n + b.count, 0), 2, 'aggregates count only what is left');
    await s.retention.expireStates(['d1', "d'3"], NOW - 30 * DAY);
    await s.retention.expireStates([], NOW);
    assert.is(await count(s, 'd1'), 2);
  });

  test('hostile input: ids with quotes and SQL are data; a time that is not one is refused', async (ctx) => {
    const s = ctx.fixture!.store;
    await s.append([row('d1', 't', NOW - 40 * DAY, 1)]);
    await s.retention.expireStates(["x') OR 1=1 --", "' OR ''='"], NOW);
    assert.is(await count(s, 'd1'), 1);
    await rejectsWith(s.retention.expireStates(['d1'], Number.NaN), 'VALIDATION_FAILED');
    await rejectsWith(s.retention.expireStates([''], NOW), 'VALIDATION_FAILED');
    await rejectsWith(s.retention.expireStates([5 as unknown as string], NOW), 'VALIDATION_FAILED');
  });

  test('stored size: the rows of the devices named, in chunks past a thousand devices; bytes by the table\'s bytes per row; hostile ids are data', async (ctx) => {
    const s = ctx.fixture!.store;
    assert.equal(await s.retention.storedOf(['d1']), { rows: 0, compressedBytes: 0 }, 'nothing stored yet');
    await s.append([...[0, 1, 2].map((i) => row('d1', 't', NOW - i * 60_000, i)), row('d2', 't', NOW, 5), row("d'3", 't', NOW, 7)]);
    const many = [...Array.from({ length: 1500 }, (_, i) => `other-${i}`), 'd1', "d'3"];
    const stored = await s.retention.storedOf(many);
    assert.is(stored.rows, 4);
    assert.ok(stored.compressedBytes > 0, `an estimate of their bytes: ${stored.compressedBytes}`);
    const all = await s.retention.storedOf(['d1', 'd2', "d'3"]);
    assert.is(all.rows, 5);
    assert.ok(all.compressedBytes >= stored.compressedBytes);
    assert.equal(await s.retention.storedOf([]), { rows: 0, compressedBytes: 0 });
    assert.is((await s.retention.storedOf(["x') OR 1=1 --"])).rows, 0);
    await rejectsWith(s.retention.storedOf(['']), 'VALIDATION_FAILED');
  });

  return test;
}
