import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { retrySchedule, RETRY_DEFAULTS } from '../../../engine/integrations/retrySchedule.ts';
import { classifyAnswer, parseRetryAfter } from '../../../engine/integrations/deliveryOutcome.ts';

const HOUR = 3_600_000;
const mid = () => 0.5;

test('without jitter: about 1 s first, doubling, never more than 10 minutes apart', () => {
  const schedule = retrySchedule({ random: mid });
  const delays = [1, 2, 3, 4, 5, 10, 11, 20].map((failures) => {
    const d = schedule.afterFailure({ failures, firstFailureAt: 0 }, 1000);
    assert.is(d.kind, 'retry');
    return d.kind === 'retry' ? d.delayMs : -1;
  });
  assert.equal(delays, [1000, 2000, 4000, 8000, 16_000, 512_000, 600_000, 600_000]);
});

test('jitter stays within ±20% of the nominal delay and under the cap', () => {
  const low = retrySchedule({ random: () => 0 });
  const high = retrySchedule({ random: () => 0.999_999 });
  const at = (s: ReturnType<typeof retrySchedule>, failures: number) => {
    const d = s.afterFailure({ failures, firstFailureAt: 0 }, 0);
    return d.kind === 'retry' ? d.delayMs : -1;
  };
  assert.is(at(low, 1), 800);
  assert.is(at(high, 1), 1200);
  assert.is(at(low, 3), 3200);
  assert.is(at(high, 3), 4800);
  assert.is(at(low, 30), 480_000, 'a capped delay is drawn below the cap too');
  assert.is(at(high, 30), 600_000, 'and never above it');
});

test('jitter spreads integrations that failed together', () => {
  let seed = 42;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const schedule = retrySchedule({ random });
  const delays = new Set(Array.from({ length: 50 }, () => {
    const d = schedule.afterFailure({ failures: 4, firstFailureAt: 0 }, 0);
    return d.kind === 'retry' ? d.delayMs : -1;
  }));
  assert.ok(delays.size > 30, `only ${delays.size} distinct delays of 50`);
  for (const d of delays) assert.ok(d >= 6400 && d <= 9600, String(d));
});

test('gives up once the first failure is 24 h old, and makes the last attempt at the deadline', () => {
  const schedule = retrySchedule({ random: mid });
  const first = 5_000;
  assert.equal(schedule.afterFailure({ failures: 200, firstFailureAt: first }, first + 24 * HOUR), { kind: 'give-up', since: first });
  assert.equal(schedule.afterFailure({ failures: 200, firstFailureAt: first }, first + 25 * HOUR), { kind: 'give-up', since: first });
  const nearEnd = schedule.afterFailure({ failures: 200, firstFailureAt: first }, first + 24 * HOUR - 60_000);
  assert.equal(nearEnd, { kind: 'retry', at: first + 24 * HOUR, delayMs: 60_000 });
});

test('the whole window: attempts over 24 h, then give up', () => {
  const schedule = retrySchedule({ random: mid });
  let now = 0;
  let failures = 1;
  for (;;) {
    const d = schedule.afterFailure({ failures, firstFailureAt: 0 }, now);
    if (d.kind === 'give-up') break;
    assert.ok(d.delayMs <= RETRY_DEFAULTS.maxDelayMs);
    now = d.at;
    failures++;
  }
  assert.is(now, 24 * HOUR);
  // 10 retries doubling from 1 s to 512 s (1023 s), 142 ten minutes apart, one at the deadline:
  // the 153rd retry fails and the schedule gives up (failures counts the first attempt too).
  assert.is(failures, 154);
});

test('the window and the delays are configurable', () => {
  const schedule = retrySchedule({ initialDelayMs: 10, maxDelayMs: 50, giveUpAfterMs: 1000, jitter: 0 });
  const d = (failures: number, now: number) => schedule.afterFailure({ failures, firstFailureAt: 0 }, now);
  assert.equal(d(1, 0), { kind: 'retry', at: 10, delayMs: 10 });
  assert.equal(d(4, 0), { kind: 'retry', at: 50, delayMs: 50 });
  assert.is(d(9, 1000).kind, 'give-up');
});

test('Retry-After is a lower bound, up to the cap, and inside the window', () => {
  const schedule = retrySchedule({ random: mid });
  const d = (retryAfterMs: number | undefined, now = 0) => schedule.afterFailure({ failures: 1, firstFailureAt: 0 }, now, retryAfterMs);
  assert.equal(d(30_000), { kind: 'retry', at: 30_000, delayMs: 30_000 }, 'longer than the backoff: waits as asked');
  assert.equal(d(0), { kind: 'retry', at: 1000, delayMs: 1000 }, 'shorter: the backoff still applies');
  assert.equal(d(3_600_000), { kind: 'retry', at: 600_000, delayMs: 600_000 }, 'an hour asked: ten minutes, the cap');
  assert.equal(d(999_999_999_000), { kind: 'retry', at: 600_000, delayMs: 600_000 });
  assert.equal(d(600_000, 24 * HOUR - 5000), { kind: 'retry', at: 24 * HOUR, delayMs: 5000 });
});

test('bad options and states are refused', () => {
  assert.throws(() => retrySchedule({ jitter: 1.5 }), /jitter/);
  assert.throws(() => retrySchedule({ jitter: -0.1 }), /jitter/);
  assert.throws(() => retrySchedule({ maxDelayMs: Number.NaN }), /maxDelayMs/);
  assert.throws(() => retrySchedule({ giveUpAfterMs: -1 }), /giveUpAfterMs/);
  assert.throws(() => retrySchedule().afterFailure({ failures: 0, firstFailureAt: 0 }, 0), /failures/);
});

test('answers: 2xx delivered, 410 disables, every other status retries', () => {
  for (const status of [200, 201, 202, 204, 299]) assert.equal(classifyAnswer(status, undefined, 0), { kind: 'delivered', status });
  assert.equal(classifyAnswer(410, undefined, 0), { kind: 'disable', reason: 'gone', status: 410 });
  for (const status of [100, 301, 302, 307, 308, 400, 401, 403, 404, 408, 413, 500, 502, 504]) {
    assert.equal(classifyAnswer(status, '5', 0), { kind: 'retry', reason: 'status', status }, String(status));
  }
});

test('Retry-After is read on 429 and 503 only, as seconds or an HTTP date', () => {
  const now = Date.parse('2026-11-28T12:00:00Z');
  assert.equal(classifyAnswer(429, '120', now), { kind: 'retry', reason: 'status', status: 429, retryAfterMs: 120_000 });
  assert.equal(classifyAnswer(503, 'Sat, 28 Nov 2026 12:00:30 GMT', now), { kind: 'retry', reason: 'status', status: 503, retryAfterMs: 30_000 });
  assert.equal(classifyAnswer(500, '120', now), { kind: 'retry', reason: 'status', status: 500 });
  assert.equal(classifyAnswer(429, undefined, now), { kind: 'retry', reason: 'status', status: 429 });
  assert.is(parseRetryAfter(' 7 ', now), 7000);
  assert.is(parseRetryAfter('0', now), 0);
  assert.is(parseRetryAfter('Sat, 28 Nov 2026 11:00:00 GMT', now), 0, 'a date in the past: at once');
  assert.is(parseRetryAfter('99999999999', now), 366 * 24 * 3600 * 1000, 'absurd values are bounded');
  for (const bad of ['', '-5', '1.5', '1e3', 'soon', '0x10', 'Sat, 28 Nov 2026 12:00:30', '2026-11-28T12:00:30Z', 'Sat, 31 Feb 2026 12:00:30 GMT x']) {
    assert.is(parseRetryAfter(bad, now), undefined, JSON.stringify(bad));
  }
});

test.run();
