/**
 * kafkajs's RequestQueue as the Kafka adapter runs it (adapters/kafka/requestQueueMend.ts, applied
 * when createKafkaLog.ts is loaded): an answer with nothing pending sets no timer (kafkajs 2.2.4
 * set one of minus the epoch, which Node 24 warns of and fires every millisecond after), while a
 * request held back by a throttling broker or by the in-flight limit is still sent. The timers the
 * queue sets are recorded; the broker is exercised in kafka-log.test.ts.
 */
import { createRequire } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import '../../../adapters/kafka/createKafkaLog.ts';

interface Entry {
  correlationId: number;
  apiKey: number;
  apiName: string;
  apiVersion: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface RequestQueue {
  throttleCheckTimeoutId: unknown;
  push(request: { entry: Entry; expectResponse: boolean; sendRequest(): void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number | null): void;
  destroy(): void;
}

const RequestQueue = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as new (options: object) => RequestQueue;
const logger = { debug() {}, info() {}, warn() {}, error() {} };

function queue(maxInFlightRequests: number | null = null) {
  const sent: number[] = [];
  const answered: number[] = [];
  const q = new RequestQueue({ maxInFlightRequests, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: 'test', broker: 'b:9092', logger });
  const push = (correlationId: number) => q.push({
    entry: { correlationId, apiKey: 1, apiName: 'Fetch', apiVersion: 11, resolve: () => answered.push(correlationId), reject: () => {} },
    expectResponse: true,
    sendRequest: () => sent.push(correlationId),
  });
  const answer = (correlationId: number) => q.fulfillRequest({ correlationId, payload: Buffer.alloc(0), size: 0 });
  return { q, sent, answered, push, answer };
}

/** Runs `work` recording the delays of the timers it sets (the queue's, through the global setTimeout). */
function timersOf(work: () => void): number[] {
  const delays: number[] = [];
  const original = globalThis.setTimeout;
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    delays.push(ms ?? 0);
    return original(fn, ms);
  }) as typeof setTimeout;
  try {
    work();
  } finally {
    globalThis.setTimeout = original;
  }
  return delays;
}

test('an answer with nothing pending sets no timer', () => {
  const { q, sent, answered, push, answer } = queue();
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  try {
    const delays = timersOf(() => {
      push(1);
      push(2);
      answer(1);
      answer(2);
    });
    assert.equal(sent, [1, 2]);
    assert.equal(answered, [1, 2]);
    assert.equal(delays, [], 'no look at an empty queue');
    assert.is(q.throttleCheckTimeoutId, null);
  } finally {
    process.off('warning', onWarning);
    q.destroy();
  }
  assert.not.ok(warnings.some((w) => w.name === 'TimeoutNegativeWarning'));
});

test('a request held back by a throttling broker is looked at when the throttle ends', () => {
  const { q, sent, push } = queue();
  try {
    q.maybeThrottle(5_000);
    const delays = timersOf(() => push(1));
    assert.equal(sent, [], 'throttled: pending');
    assert.is(delays.length, 1);
    assert.ok(delays[0] > 4_000 && delays[0] <= 5_000, `looked at in the throttle's time (${delays[0]} ms)`);
  } finally {
    q.destroy();
  }
});

test('a request past the in-flight limit is sent once the one in flight is answered', () => {
  const { q, sent, answered, push, answer } = queue(1);
  try {
    const delays = timersOf(() => {
      push(1);
      push(2);
    });
    assert.equal(sent, [1]);
    assert.equal(delays, [10], 'pending: a look in 10 ms (kafkajs CHECK_PENDING_REQUESTS_INTERVAL)');
    answer(1);
    assert.equal(sent, [1, 2]);
    answer(2);
    assert.equal(answered, [1, 2]);
  } finally {
    q.destroy();
  }
});

test.run();
