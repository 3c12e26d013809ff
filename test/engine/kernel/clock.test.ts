import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { partitionFor } from '../../../engine/kernel/partition.ts';

test('simulated clock fires due timers in time order', () => {
  const clock = new SimulatedClock(1000);
  const fired: string[] = [];
  clock.setTimeout(() => fired.push('b'), 20);
  clock.setTimeout(() => fired.push('a'), 10);
  const c = clock.setTimeout(() => fired.push('c'), 15);
  c.cancel();
  clock.advance(15);
  assert.equal(fired, ['a']);
  assert.is(clock.now(), 1015);
  clock.advance(5);
  assert.equal(fired, ['a', 'b']);
  assert.is(clock.pending, 0);
});

test('timers scheduled by timers fire within the same advance', () => {
  const clock = new SimulatedClock();
  const fired: number[] = [];
  clock.setTimeout(() => { fired.push(clock.now()); clock.setTimeout(() => fired.push(clock.now()), 5); }, 5);
  clock.advance(20);
  assert.equal(fired, [5, 10]);
});

test('partitioner matches Kafka default murmur2 partitioning', () => {
  // Golden values of kafkajs's default partitioner (murmur2, masked positive).
  const golden: Array<[string, number]> = [['', 275646681], ['a', 584102524], ['abcd', 823834100], ['device-1', 1007784178], ['é-ü', 1153064672]];
  for (const [key, hash] of golden) assert.is(partitionFor(key, 1000), hash % 1000);
  for (let i = 0; i < 100; i++) {
    const p = partitionFor(`device-${i}`, 8);
    assert.ok(p >= 0 && p < 8);
    assert.is(partitionFor(`device-${i}`, 8), p);
  }
});

test.run();
