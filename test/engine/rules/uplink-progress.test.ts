/**
 * UplinkProgress (engine/rules/UplinkProgress.ts), on a log's end offsets and a simulated clock: a
 * partition is through the time of the previous read once its judged offset reaches the ends read
 * then; one behind is not; one with no batch yet stands at its group's committed offset.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { UplinkProgress } from '../../../engine/rules/UplinkProgress.ts';

test('through the previous read where caught up with it; nothing the first time', async () => {
  const clock = new SimulatedClock(1_000_000);
  let ends = [10, 20, 5];
  const positions = new Map<number, number | undefined>([[0, 10], [1, 15], [2, undefined]]);
  const progress = new UplinkProgress({
    positions: () => positions,
    log: { endOffsets: async () => ends, committed: async (_g, _t, partition) => (partition === 2 ? 5 : 0) },
    topic: 'uplinks', group: 'engine', clock,
  });
  assert.is(await progress.through(), undefined, 'nothing to compare with yet');
  clock.advance(1000);
  ends = [12, 25, 5];
  assert.equal(await progress.through(), { progress: [{ partition: 0, through: 1_000_000 }, { partition: 2, through: 1_000_000 }], partitions: 3 }, '1 is behind the ends read then');
  clock.advance(1000);
  positions.set(0, 11);
  positions.set(1, 25);
  assert.equal(await progress.through(), { progress: [{ partition: 1, through: 1_001_000 }, { partition: 2, through: 1_001_000 }], partitions: 3 }, '0 is behind now, 1 caught up');
});

test.run();
