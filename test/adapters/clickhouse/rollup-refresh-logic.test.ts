/**
 * The bookkeeping of adapters/clickhouse-sql/rollupRefresh.ts over an executor that records the
 * statements (what the statements compute is tested on real engines in rollups-refresh.test.ts):
 * appends only note; a refresh names the noted minutes and devices; a failed refresh keeps its
 * minutes; a minute still being written waits until it settles.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRollupRefresh } from '../../../adapters/clickhouse-sql/rollupRefresh.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import type { StateRow } from '../../../schemas/messages.ts';

const T0 = Date.UTC(2026, 0, 1);
const names = { database: 'db', table: 'states' };
const row = (deviceId: string, ts: number): StateRow => ({ deviceId, asset: 'a', ts, receivedAt: ts, value: 1, uplinkId: '0'.repeat(26) });

function recorder(failures = 0) {
  const statements: string[] = [];
  let failing = failures;
  return {
    statements,
    executor: {
      async command(sql: string) {
        if (failing > 0) {
          failing--;
          throw new Error('server gone');
        }
        statements.push(sql);
      },
    },
  };
}

test('an append only notes; catching up recomputes its minutes, of its devices, then hours and days', async () => {
  const { statements, executor } = recorder();
  const refresh = createRollupRefresh(executor, names, { compact: true, intervalMs: 3_600_000 });
  try {
    refresh.touched([row('d1', T0 + 5), row('d2', T0 + 61_000), row("it's", T0 + 5)]);
    assert.equal(statements, []);
    assert.ok(refresh.lagging('d1', T0, T0 + 60_000));
    assert.ok(refresh.lagging('d2', T0, T0 + 3_600_000));
    assert.not.ok(refresh.lagging('d2', T0, T0 + 60_000), 'd2 wrote in the second minute only');
    assert.not.ok(refresh.lagging('d3', T0, T0 + 3_600_000));
    await refresh.caughtUp();
    assert.is(statements.length, 3);
    assert.match(statements[0], /INSERT INTO `db`.`states_minute`/);
    assert.match(statements[0], `device_id IN ('d1', 'it\\'s', 'd2')`);
    assert.match(statements[0], `ts >= toInt64(${T0}) AND ts < toInt64(${T0 + 120_000})`);
    assert.match(statements[1], /`db`.`states_hour`/);
    assert.match(statements[2], /`db`.`states_day`/);
    assert.not.ok(refresh.lagging('d1', T0, T0 + 60_000));
    await refresh.caughtUp();
    assert.is(statements.length, 3, 'nothing noted, nothing run');
  } finally {
    await refresh.close();
  }
});

test('a fleet-wide append reads every device of its minutes', async () => {
  const { statements, executor } = recorder();
  const refresh = createRollupRefresh(executor, names, { compact: false, intervalMs: 3_600_000 });
  try {
    refresh.touched(Array.from({ length: 501 }, (_, i) => row(`d${i}`, T0)));
    assert.ok(refresh.lagging('anyone', T0, T0 + 60_000));
    await refresh.caughtUp();
    assert.not.match(statements[0], /device_id IN/);
    assert.match(statements[0], `WHERE (ts >= toInt64(${T0}) AND ts < toInt64(${T0 + 60_000}))`);
  } finally {
    await refresh.close();
  }
});

test('a failed refresh keeps its minutes noted: the next one recomputes them', async () => {
  const { statements, executor } = recorder(1);
  const refresh = createRollupRefresh(executor, names, { compact: true, intervalMs: 3_600_000 });
  try {
    refresh.touched([row('d1', T0)]);
    await refresh.caughtUp().then(() => assert.unreachable('the server is gone'), (error: Error) => assert.is(error.message, 'server gone'));
    assert.ok(refresh.lagging('d1', T0, T0 + 60_000));
    refresh.touched([row('d2', T0 + 10)]);
    await refresh.caughtUp();
    assert.match(statements[0], `device_id IN ('d1', 'd2')`);
    assert.not.ok(refresh.lagging('d1', T0, T0 + 60_000));
  } finally {
    await refresh.close();
  }
});

test('the timer leaves a minute still being written; it refreshes a settled one; close refreshes the rest', async () => {
  const { statements, executor } = recorder();
  const refresh = createRollupRefresh(executor, names, { compact: true, intervalMs: 500, maxLagMs: 3_600_000 });
  try {
    refresh.touched([row('old', T0)]);
    // Keep touching one minute, faster than it settles, until the other has been refreshed.
    const live = setInterval(() => refresh.touched([row('live', T0 + 600_000)]), 10);
    try {
      while (statements.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      clearInterval(live);
    }
    assert.match(statements[0], `device_id IN ('old')`);
    assert.ok(refresh.lagging('live', T0 + 600_000, T0 + 660_000), 'the minute being written waits');
  } finally {
    await refresh.close();
  }
  assert.ok(statements.some((s) => s.includes(`device_id IN ('live')`)), 'close refreshed the rest');
});
/** Lets the refresh that a timer started run its statements (no time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}

test('on the injected clock: a minute settles once untouched for the interval, or noted the longest lag ago', async () => {
  const { statements, executor } = recorder();
  const clock = new SimulatedClock(T0 + 3_600_000);
  const refresh = createRollupRefresh(executor, names, { compact: true, intervalMs: 2_000, maxLagMs: 60_000, clock });
  try {
    refresh.touched([row('quiet', T0)]);
    clock.advance(1_999);
    await settle();
    assert.equal(statements, [], 'no timer due yet');
    clock.advance(1);
    await settle();
    assert.is(statements.length, 3);
    assert.match(statements[0], `device_id IN ('quiet')`);
    // Touched every second: never untouched for 2 s, so it waits for the longest lag, 60 s after its first note.
    const busy = T0 + 600_000;
    refresh.touched([row('busy', busy)]);
    for (let s = 1; s < 60; s++) {
      clock.advance(1_000);
      refresh.touched([row('busy', busy)]);
      await settle();
    }
    assert.is(statements.length, 3, 'still being written: left for a later refresh');
    assert.ok(refresh.lagging('busy', busy, busy + 60_000));
    clock.advance(1_000);
    await settle();
    assert.is(statements.length, 6, 'noted 60 s ago by the clock: refreshed');
    assert.match(statements[3], `device_id IN ('busy')`);
    assert.not.ok(refresh.lagging('busy', busy, busy + 60_000));
  } finally {
    await refresh.close();
  }
  assert.is(clock.pending, 0, 'close leaves no timer');
});

test.run();
