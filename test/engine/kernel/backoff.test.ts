import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exponentialBackoff } from '../../../engine/kernel/backoff.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';

test('doubles from initialMs and stops at maxMs', () => {
  const delay = exponentialBackoff({ initialMs: 100, maxMs: 1000 });
  assert.equal([0, 1, 2, 3, 4, 5].map(delay), [100, 200, 400, 800, 1000, 1000]);
  assert.is(delay(5000), 1000, 'no overflow to Infinity past the ceiling');
});

test('zero delays are allowed and retry on the next tick of the clock', () => {
  const delay = exponentialBackoff({ initialMs: 0, maxMs: 0 });
  assert.equal([0, 7].map(delay), [0, 0]);
  const clock = new SimulatedClock(0);
  let fired = 0;
  clock.setTimeout(() => fired++, delay(3));
  clock.advance(0);
  assert.is(fired, 1);
});

test('an initial delay above the ceiling is capped', () => {
  assert.is(exponentialBackoff({ initialMs: 500, maxMs: 200 })(0), 200);
});

test('bad input is refused', () => {
  assert.throws(() => exponentialBackoff({ initialMs: -1, maxMs: 10 }), /initialMs/);
  assert.throws(() => exponentialBackoff({ initialMs: 1, maxMs: Number.NaN }), /maxMs/);
  const delay = exponentialBackoff({ initialMs: 1, maxMs: 10 });
  assert.throws(() => delay(-1), /attempt/);
  assert.throws(() => delay(1.5), /attempt/);
});

test.run();
