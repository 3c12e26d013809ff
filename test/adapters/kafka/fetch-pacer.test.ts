/**
 * FetchPacer on a simulated clock: a fetch that brought less than a full fetch holds the next one
 * back until the wait after it has passed, the batches of one fetch share that wait (those handed
 * out after it, when a fetch has more batches than are handled at once, add none), a full fetch
 * holds nothing back, and a record after a quiet spell is fetched at once.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FetchPacer } from '../../../adapters/kafka/FetchPacer.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';

const batch = (...sizes: number[]) => ({ messages: sizes.map((n) => ({ key: Buffer.alloc(4), value: Buffer.alloc(n) })) }) as never;

test('a small fetch holds the next back by the wait; its other batches end with it', () => {
  const clock = new SimulatedClock(1_000);
  const pacer = new FetchPacer(clock, 20, 1_000);
  assert.is(pacer.delayAfter(batch(10)), 20);
  clock.advance(5);
  assert.is(pacer.delayAfter(batch(10, 10)), 15, 'another partition of the same fetch');
});

test('batches of the fetch handled after the wait (more than run at once) hold nothing back', () => {
  const clock = new SimulatedClock(1_000);
  const pacer = new FetchPacer(clock, 20, 1_000);
  assert.is(pacer.delayAfter(batch(10)), 20);
  clock.advance(20);
  assert.is(pacer.delayAfter(batch(10), true), 0, 'handed out while the first batches end their wait');
  assert.is(pacer.delayAfter(batch(10), false), 20, 'the next fetch starts a wait again');
});

test('a full fetch holds nothing back', () => {
  const clock = new SimulatedClock(1_000);
  const pacer = new FetchPacer(clock, 20, 1_000);
  assert.is(pacer.delayAfter(batch(600, 400)), 0);
  assert.is(pacer.delayAfter(batch(996)), 0, 'keys count too');
});

test('after a quiet spell the wait starts again from the fetch that ends it', () => {
  const clock = new SimulatedClock(1_000);
  const pacer = new FetchPacer(clock, 20, 1_000);
  pacer.delayAfter(batch(1));
  clock.advance(500);
  assert.is(pacer.delayAfter(batch(1)), 20);
  clock.advance(20);
  assert.is(pacer.delayAfter(batch()), 20, 'an empty batch is a small fetch');
});

test('handle: the batch is delivered at once; the next fetch waits for the wait, unless the consumer stops', async () => {
  const clock = new SimulatedClock(1_000);
  const pacer = new FetchPacer(clock, 20, 1_000);
  const steps: string[] = [];
  const first = pacer.handle(batch(10), async () => { steps.push('a'); }, () => true).then(() => steps.push('a done'));
  const second = pacer.handle(batch(10), async () => { steps.push('b'); }, () => false).then(() => steps.push('b done'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(steps, ['a', 'b', 'b done'], 'delivered at once; a stopping consumer does not wait');
  clock.advance(20);
  await first;
  await second;
  assert.equal(steps, ['a', 'b', 'b done', 'a done']);
});

test.run();
