/**
 * Live events of an embedded service with edge workers (app/liveDemand.ts): each worker reports
 * whether its hub wants events, at once when a subscription or a states feed is added and within
 * its poll otherwise; the primary builds events while any worker wants them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { LiveHub } from '../../../engine/live/LiveHub.ts';
import { reportLiveDemand, WorkersLiveDemand } from '../../../app/liveDemand.ts';
import { tempDir } from '../../support/tmp.ts';

const subscriber = { send: () => true, reset: () => undefined, close: () => undefined };

test("a worker reports its hub's demand when it changes: at once on a subscription or a feed, within the poll when the resume window ends", async () => {
  const tmp = tempDir('live-demand');
  const log = createLocalLog({ dir: tmp.dir });
  try {
    await log.ensureTopics([{ name: 'live', partitions: 2 }]);
    const clock = new SimulatedClock(1_000_000);
    const hub = new LiveHub({ log, clock, topic: 'live', group: 'edge', groundOf: async () => 'g1', resumeWindowMs: 60_000 });
    const reports: boolean[] = [];
    const stop = reportLiveDemand(hub, (wanted) => reports.push(wanted), clock, 50);
    assert.equal(reports, [false], 'nobody yet');
    clock.advance(500);
    assert.equal(reports, [false], 'reported on change only');
    const leave = hub.subscribe({ deviceId: 'd1', kinds: new Set(['state']) }, subscriber);
    assert.equal(reports, [false, true], 'a subscription: at once, before any poll');
    leave();
    clock.advance(59_000);
    assert.equal(reports, [false, true], 'a client may still resume within the window');
    clock.advance(1_100);
    assert.equal(reports, [false, true, false], 'the window over: no, within one poll');
    let following = false;
    hub.followStates(() => undefined, () => following);
    assert.equal(reports, [false, true, false], 'a feed nobody follows yet wants nothing');
    following = true;
    clock.advance(50);
    assert.equal(reports, [false, true, false, true], 'an MQTT client following a feed: within one poll');
    stop();
    following = false;
    clock.advance(120_000);
    assert.is(reports.length, 4, 'stopped: no more reports');
  } finally {
    await log.close();
    tmp.remove();
  }
});

test('the primary wants events while any worker does; a worker that exited wants nothing', () => {
  const demand = new WorkersLiveDemand();
  assert.is(demand.wanted(), false);
  demand.report(0, true);
  demand.report(1, false);
  assert.is(demand.wanted(), true);
  demand.report(1, true);
  demand.report(0, false);
  assert.is(demand.wanted(), true);
  demand.forget(1);
  assert.is(demand.wanted(), false);
});

test.run();
