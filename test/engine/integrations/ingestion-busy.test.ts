/**
 * IngestionBusy (engine/integrations/IngestionBusy.ts): what deliveries give way to. Busy on an
 * engine backlog, or on uplinks coming in while the thread is saturated; not on a saturated thread
 * that only delivers, nor on uplinks with time to spare; held for a second once seen; the thread's
 * load sampled every 250 ms, or sooner at the start of a burst (200 uplinks since the last sample,
 * not within 25 ms of it). Scripted inputs and a hand-moved clock.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { IngestionBusy } from '../../../engine/integrations/IngestionBusy.ts';

function scripted() {
  const s = { now: 0, inFlight: 0, received: 0, utilization: 0, samples: 0 };
  const busy = new IngestionBusy({
    clock: { now: () => s.now },
    inFlight: () => s.inFlight,
    received: () => s.received,
    utilization: () => {
      s.samples++;
      return s.utilization;
    },
  });
  return { s, busy };
}

test('an engine backlog (more than 2000 uplinks in flight) is busy at once, and for a second after it is gone', () => {
  const { s, busy } = scripted();
  assert.is(busy.busy(), false);
  s.inFlight = 2001;
  assert.is(busy.busy(), true);
  s.inFlight = 10;
  s.now = 999;
  assert.is(busy.busy(), true, 'held');
  s.now = 1000;
  assert.is(busy.busy(), false);
});

test('uplinks coming in while the thread is saturated: busy; with time to spare, or with no uplink (deliveries draining alone): not', () => {
  const { s, busy } = scripted();
  s.now = 250;
  s.received = 100;
  s.utilization = 0.95;
  assert.is(busy.busy(), true, 'uplinks, saturated');

  const spare = scripted();
  spare.s.now = 250;
  spare.s.received = 100;
  spare.s.utilization = 0.6;
  assert.is(spare.busy.busy(), false, 'uplinks, time to spare');

  const draining = scripted();
  draining.s.now = 250;
  draining.s.utilization = 1;
  assert.is(draining.busy.busy(), false, 'saturated by deliveries alone');
  draining.s.now = 500;
  assert.is(draining.busy.busy(), false);
});

test('held a second after the last saturated sample with uplinks, then free again', () => {
  const { s, busy } = scripted();
  s.now = 250;
  s.received = 50;
  s.utilization = 0.92;
  assert.is(busy.busy(), true);
  // Deliveries gave way: the thread has time again, and uplinks still come.
  s.utilization = 0.5;
  for (s.now = 500; s.now < 1250; s.now += 250) {
    s.received += 50;
    assert.is(busy.busy(), true, `held at ${s.now}`);
  }
  s.now = 1250;
  s.received += 50;
  assert.is(busy.busy(), false);
});

test('a burst is seen once 200 uplinks have come in since the last sample, not within 25 ms of it; a trickle waits for the window', () => {
  const { s, busy } = scripted();
  s.utilization = 0.97;
  const atStart = s.samples;
  s.now = 10;
  s.received = 500;
  assert.is(busy.busy(), false, 'within 25 ms of the last sample');
  assert.is(s.samples, atStart, 'not sampled');
  s.now = 25;
  assert.is(busy.busy(), true, 'the burst seen at 25 ms, not at 250');
  assert.is(s.samples, atStart + 1);

  const trickle = scripted();
  trickle.s.utilization = 0.97;
  const before = trickle.s.samples;
  for (trickle.s.now = 10; trickle.s.now < 250; trickle.s.now += 10) {
    trickle.s.received += 8;
    assert.is(trickle.busy.busy(), false, `${trickle.s.received} uplinks at ${trickle.s.now} ms`);
  }
  assert.is(trickle.s.samples, before, '192 uplinks in the window: not sampled early');
  trickle.s.now = 250;
  assert.is(trickle.busy.busy(), true, 'sampled at the window\'s end');

  const burst = scripted();
  burst.s.utilization = 0.5;
  burst.s.now = 30;
  burst.s.received = 300;
  assert.is(burst.busy.busy(), false, 'a burst the thread has time for');
  burst.s.now = 40;
  burst.s.received = 400;
  assert.is(burst.busy.busy(), false, 'sampled again only 25 ms after');
  assert.is(burst.s.samples, 2, 'the first sample and the one at 30 ms');
});

test('the thread\'s load is sampled at most every 250 ms, however often it is asked; without a utilization, only the backlog counts', () => {
  const { s, busy } = scripted();
  const atStart = s.samples;
  for (s.now = 0; s.now < 1000; s.now += 10) busy.busy();
  assert.is(s.samples - atStart, 3, 'at 250, 500 and 750');

  let received = 0;
  const backlogOnly = new IngestionBusy({ clock: { now: () => 1000 }, inFlight: () => 0, received: () => (received += 100) });
  assert.is(backlogOnly.busy(), false);
});

test.run();
