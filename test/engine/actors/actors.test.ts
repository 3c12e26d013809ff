import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Mailbox } from '../../../engine/actors/Mailbox.ts';
import { OffsetTracker } from '../../../engine/consumer/OffsetTracker.ts';

test('mailbox is FIFO, bounded, and wakes a waiter when space frees', async () => {
  const box = new Mailbox<number>(3);
  assert.ok(box.offer(1));
  assert.ok(box.offer(2));
  assert.ok(box.offer(3));
  assert.not.ok(box.offer(4), 'full mailbox refuses');
  let woke = false;
  const space = box.space().then(() => { woke = true; });
  await Promise.resolve();
  assert.not.ok(woke);
  assert.is(box.take(), 1);
  await space;
  assert.ok(woke);
  assert.ok(box.offer(4));
  assert.equal([box.take(), box.take(), box.take(), box.take()], [2, 3, 4, undefined]);
  assert.is(box.size, 0);
});

test('mailbox wraps around its ring many times without losing order', () => {
  const box = new Mailbox<number>(64);
  let next = 0;
  let expected = 0;
  for (let round = 0; round < 1000; round++) {
    const n = (round * 7) % 50;
    for (let i = 0; i < n && box.size < box.capacity; i++) assert.ok(box.offer(next++));
    assert.not.ok(box.size < box.capacity ? false : box.offer(-1), 'a full ring refuses');
    const m = (round * 13) % 50;
    for (let i = 0; i < m; i++) {
      const v = box.take();
      if (v === undefined) break;
      assert.is(v, expected++);
    }
  }
});

test('mailbox rejects a non-positive capacity', () => {
  assert.throws(() => new Mailbox(0), /capacity/);
});

test('offset tracker commits only the finished prefix', () => {
  const t = new OffsetTracker(10);
  for (const o of [10, 11, 12, 13]) t.start(o);
  assert.is(t.takeCommit(), undefined, 'nothing finished yet');
  t.finish(12);
  t.finish(11);
  assert.is(t.takeCommit(), undefined, 'offset 10 still in flight');
  t.finish(10);
  assert.is(t.takeCommit(), 13);
  assert.is(t.takeCommit(), undefined, 'no movement, no commit');
  t.finish(13);
  assert.is(t.takeCommit(), 14);
  assert.is(t.inFlight, 0);
});

test('offset tracker follows gaps in offsets', () => {
  const t = new OffsetTracker(0);
  t.start(5);
  t.start(9);
  assert.is(t.takeCommit(), 5, 'nothing before the first started offset is pending');
  t.finish(9);
  assert.is(t.takeCommit(), undefined);
  t.finish(5);
  assert.is(t.takeCommit(), 10);
});

test('offset tracker stays correct over a long out-of-order run', () => {
  const t = new OffsetTracker(0);
  const n = 5000;
  for (let i = 0; i < n; i++) t.start(i);
  // finish in reverse blocks of 100
  for (let block = 0; block < n / 100; block++) {
    for (let i = 99; i >= 0; i--) t.finish(block * 100 + i);
    assert.is(t.watermark, (block + 1) * 100);
  }
  assert.is(t.inFlight, 0);
});

test.run();
