/**
 * LingerProducer logic on a simulated clock: linger, request size cap, one request in flight and the
 * next one in the turn of its acknowledgement, offsets from RecordMetadata, deadlines, backpressure,
 * close. kafkajs's producer is replaced by a
 * scripted stand-in whose sendBatch calls the test answers by hand; the real broker is exercised in
 * kafka-log.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Producer, ProducerBatch, RecordMetadata } from 'kafkajs';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { partitionFor } from '../../../engine/kernel/partition.ts';
import type { ProducerRecord, RecordPosition } from '../../../engine/ports/log.ts';
import { LingerProducer, type FlushInfo } from '../../../adapters/kafka/LingerProducer.ts';

interface Sent {
  batch: ProducerBatch;
  resolve(metadata: RecordMetadata[]): void;
  reject(error: unknown): void;
}

const PARTITIONS = 4;

function setup(overrides: Partial<ConstructorParameters<typeof LingerProducer>[0]> = {}) {
  const clock = new SimulatedClock(1_000_000);
  const sent: Sent[] = [];
  const flushes: FlushInfo[] = [];
  const renewals = { count: 0 };
  const producer = {
    sendBatch: (batch: ProducerBatch) => new Promise<RecordMetadata[]>((resolve, reject) => sent.push({ batch, resolve, reject })),
  } as unknown as Producer;
  const appender = new LingerProducer({
    producer: () => producer,
    connect: async () => {},
    renewProducer: () => { renewals.count++; },
    partitionCount: async (topic) => {
      if (topic === 'missing') throw new FleetError('NOT_FOUND', 'no such topic');
      return PARTITIONS;
    },
    clock,
    lingerMs: 10,
    maxBatchRecords: 100,
    maxPendingRecords: 1000,
    appendTimeoutMs: 5000,
    ackTimeoutMs: 30000,
    onFlush: (info) => flushes.push(info),
    ...overrides,
  });
  /** Lets every append still waiting run into its deadline, so no test leaves one behind. */
  const expireAll = async () => {
    clock.advance(10 ** 9);
    await settle();
  };
  return { clock, sent, flushes, appender, expireAll, renewals };
}

/** Lets promise continuations run (no timers involved). */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** Lets the event loop reach its check phase (setImmediate), where requests without a linger start. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

const rec = (key: string, value = key, timestamp?: number): ProducerRecord => ({ key, value: new TextEncoder().encode(value), timestamp });

/** Answers a request as Kafka would: per partition, offsets continue from `next`. */
function acknowledge(request: Sent, next: Map<string, number>): void {
  const counts = new Map<string, number>();
  for (const tm of request.batch.topicMessages ?? []) {
    for (const m of tm.messages) {
      const k = `${tm.topic}/${m.partition}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
  }
  const metadata: RecordMetadata[] = [];
  for (const [k, n] of counts) {
    const [topicName, partition] = k.split('/');
    const base = next.get(k) ?? 0;
    next.set(k, base + n);
    metadata.push({ topicName, partition: Number(partition), errorCode: 0, baseOffset: String(base) });
  }
  request.resolve(metadata);
}

function track<T>(promise: Promise<T>): { value?: T; error?: unknown; done: boolean } {
  const state: { value?: T; error?: unknown; done: boolean } = { done: false };
  promise.then((v) => { state.value = v; state.done = true; }, (e) => { state.error = e; state.done = true; });
  return state;
}

test('appends within the linger window leave in one request', async () => {
  const { clock, sent, flushes, appender } = setup();
  const a = track(appender.append('t', [rec('dev-1'), rec('dev-2')]));
  const b = track(appender.append('t', [rec('dev-3')]));
  await settle();
  clock.advance(9);
  await settle();
  assert.is(sent.length, 0, 'nothing leaves before lingerMs');
  const c = track(appender.append('t', [rec('dev-1')]));
  await settle();
  clock.advance(1);
  await settle();
  assert.is(sent.length, 1);
  assert.is(sent[0].batch.acks, -1);
  assert.is(sent[0].batch.topicMessages?.[0].messages.length, 4);
  acknowledge(sent[0], new Map());
  await settle();
  assert.ok(a.done && b.done && c.done);
  assert.equal(flushes.map((f) => [f.records, f.appends]), [[4, 3]]);
});

test('each record carries the engine partition and positions follow RecordMetadata base offsets', async () => {
  const { clock, sent, appender } = setup();
  const keys = ['dev-1', 'a', 'b', 'c', 'dev-1', 'b'];
  const first = track(appender.append('t', keys.slice(0, 3).map((k) => rec(k))));
  const second = track(appender.append('t', keys.slice(3).map((k) => rec(k))));
  await settle();
  clock.advance(10);
  await settle();
  const messages = sent[0].batch.topicMessages![0].messages;
  assert.equal(messages.map((m) => m.partition), keys.map((k) => partitionFor(k, PARTITIONS)));
  acknowledge(sent[0], new Map([['t/0', 100], ['t/1', 200], ['t/2', 300], ['t/3', 400]]));
  await settle();
  // expected offsets: per partition, base + order of appearance in the request
  const seen = new Map<number, number>();
  const expected: RecordPosition[] = keys.map((k) => {
    const partition = partitionFor(k, PARTITIONS);
    const n = seen.get(partition) ?? 0;
    seen.set(partition, n + 1);
    return { partition, offset: (partition + 1) * 100 + n };
  });
  assert.equal(first.value, expected.slice(0, 3));
  assert.equal(second.value, expected.slice(3));
});

test('timestamps default to the clock at append time; given ones are kept', async () => {
  const { clock, sent, appender, expireAll } = setup();
  track(appender.append('t', [rec('x'), rec('y', 'y', 42)]));
  await settle();
  clock.advance(10);
  await settle();
  assert.equal(sent[0].batch.topicMessages![0].messages.map((m) => m.timestamp), ['1000000', '42']);
  await expireAll();
});

test('a full request leaves without waiting for the linger; an append is never split', async () => {
  const { sent, appender, expireAll } = setup({ maxBatchRecords: 5 });
  track(appender.append('t', [rec('a'), rec('b'), rec('c')]));
  track(appender.append('t', [rec('d'), rec('e'), rec('f')]));
  await settle();
  assert.is(sent.length, 1, 'the second append filled the queue beyond 5 records');
  assert.is(sent[0].batch.topicMessages![0].messages.length, 3);
  acknowledge(sent[0], new Map());
  await settle();
  await turn();
  assert.is(sent.length, 2, 'the rest leaves in the turn of the acknowledgement');
  assert.is(sent[1].batch.topicMessages![0].messages.length, 3);
  await expireAll();
});

test('a request stays under maxBatchBytes across topics: the append that would pass it waits for the next; one larger alone still goes', async () => {
  const { sent, appender, expireAll } = setup({ maxBatchBytes: 1000 });
  const big = (key: string, bytes: number) => rec(key, 'v'.repeat(bytes - key.length));
  track(appender.append('events', [big('a', 400), big('b', 400)]));
  track(appender.append('live', [big('c', 300)]));
  await settle();
  assert.is(sent.length, 1, '1100 bytes queued: the request left without waiting for the linger');
  assert.equal(sent[0].batch.topicMessages!.map((tm) => [tm.topic, tm.messages.length]), [['events', 2]]);
  acknowledge(sent[0], new Map());
  await settle();
  await turn();
  assert.equal(sent[1].batch.topicMessages!.map((tm) => [tm.topic, tm.messages.length]), [['live', 1]]);
  acknowledge(sent[1], new Map());
  await settle();
  track(appender.append('events', [big('d', 3000)]));
  await settle();
  assert.is(sent.length, 3, 'an append over the cap on its own is sent whole, never split');
  assert.is(sent[2].batch.topicMessages![0].messages.length, 1);
  await expireAll();
});

test('one request in flight: what arrives meanwhile leaves together after the acknowledgement', async () => {
  const { clock, sent, appender, expireAll } = setup();
  track(appender.append('t', [rec('a')]));
  await settle();
  clock.advance(10);
  await settle();
  assert.is(sent.length, 1);
  for (const k of ['b', 'c', 'd']) track(appender.append('t', [rec(k)]));
  await settle();
  clock.advance(100);
  await settle();
  assert.is(sent.length, 1, 'no second request while the first is unacknowledged');
  acknowledge(sent[0], new Map());
  await settle();
  await turn();
  assert.is(sent.length, 2);
  assert.is(sent[1].batch.topicMessages![0].messages.length, 3);
  await expireAll();
});

test('lingerMs 0: the appends of one turn share a request that leaves in its check phase, the clock standing still', async () => {
  const { sent, flushes, appender } = setup({ lingerMs: 0 });
  const a = track(appender.append('t', [rec('a')]));
  const b = track(appender.append('t', [rec('b'), rec('c')]));
  await settle();
  assert.is(sent.length, 0, 'not before the turn ends');
  await turn();
  assert.is(sent.length, 1);
  assert.is(sent[0].batch.topicMessages![0].messages.length, 3);
  const c = track(appender.append('t', [rec('d')]));
  acknowledge(sent[0], new Map());
  await settle();
  assert.ok(a.done && b.done && !c.done);
  await turn();
  assert.is(sent.length, 2, 'the append made during the round trip leaves in the turn of the acknowledgement');
  acknowledge(sent[1], new Map());
  await settle();
  assert.ok(c.done && c.error === undefined);
  assert.equal(flushes.map((f) => [f.records, f.appends]), [[3, 2], [1, 1]]);
});

test('the request after an acknowledgement waits for no linger and takes the appends made in that turn', async () => {
  const { clock, sent, appender, expireAll } = setup({ lingerMs: 10 });
  track(appender.append('t', [rec('a')]));
  await settle();
  clock.advance(10);
  await settle();
  assert.is(sent.length, 1);
  track(appender.append('t', [rec('b')])); // during the round trip
  await settle();
  acknowledge(sent[0], new Map());
  track(appender.append('t', [rec('c')])); // read in the turn of the acknowledgement
  await settle();
  assert.is(sent.length, 1, 'the next request waits for the check phase');
  await turn();
  assert.is(sent.length, 2, 'without the clock advancing');
  assert.equal(sent[1].batch.topicMessages![0].messages.map((m) => String(m.value)), ['b', 'c']);
  await expireAll();
});

test('several topics share a request', async () => {
  const { clock, sent, appender } = setup();
  const a = track(appender.append('t1', [rec('a')]));
  const b = track(appender.append('t2', [rec('a')]));
  await settle();
  clock.advance(10);
  await settle();
  assert.equal(sent[0].batch.topicMessages!.map((t) => t.topic), ['t1', 't2']);
  acknowledge(sent[0], new Map([[`t2/${partitionFor('a', PARTITIONS)}`, 7]]));
  await settle();
  assert.equal(a.value, [{ partition: partitionFor('a', PARTITIONS), offset: 0 }]);
  assert.equal(b.value, [{ partition: partitionFor('a', PARTITIONS), offset: 7 }]);
});

test('a failed request rejects all its appends with the mapped, retriable error', async () => {
  const { clock, sent, flushes, appender } = setup();
  const a = track(appender.append('t', [rec('a')]));
  const b = track(appender.append('t', [rec('b')]));
  await settle();
  clock.advance(10);
  await settle();
  const cause = Object.assign(new Error('connection refused'), { name: 'KafkaJSConnectionError', retriable: true });
  sent[0].reject(cause);
  await settle();
  for (const s of [a, b]) {
    assert.instance(s.error, FleetError);
    assert.is((s.error as FleetError).code, 'UNAVAILABLE');
    assert.is((s.error as FleetError).retriable, true);
  }
  assert.is(flushes[0].error?.code, 'UNAVAILABLE');
});

test('a lost producer sequence rejects the request retriable and renews the producer once; other failures do not', async () => {
  const { clock, sent, appender, renewals } = setup();
  const a = track(appender.append('t', [rec('a')]));
  await settle();
  clock.advance(10);
  await settle();
  sent[0].reject(Object.assign(new Error('The broker received an out of order sequence number'), { name: 'KafkaJSProtocolError', type: 'OUT_OF_ORDER_SEQUENCE_NUMBER', code: 45, retriable: false }));
  await settle();
  assert.is((a.error as FleetError).code, 'UNAVAILABLE');
  assert.is((a.error as FleetError).retriable, true);
  assert.is(renewals.count, 1);
  const b = track(appender.append('t', [rec('b')]));
  await settle();
  clock.advance(10);
  await settle();
  sent[1].reject(Object.assign(new Error('connection refused'), { name: 'KafkaJSConnectionError', retriable: true }));
  await settle();
  assert.is((b.error as FleetError).code, 'UNAVAILABLE');
  assert.is(renewals.count, 1, 'a connection failure keeps the producer');
});

test('an unacknowledged append rejects TIMEOUT at its deadline; a queued one is dropped unsent', async () => {
  const { clock, sent, appender } = setup({ appendTimeoutMs: 1000 });
  const a = track(appender.append('t', [rec('a')]));
  await settle();
  clock.advance(10);
  await settle();
  assert.is(sent.length, 1);
  clock.advance(500);
  const b = track(appender.append('t', [rec('b')])); // queued behind the hung request
  await settle();
  clock.advance(490);
  await settle();
  assert.ok(a.done, 'first append hit its deadline');
  assert.is((a.error as FleetError).code, 'TIMEOUT');
  assert.is((a.error as FleetError).retriable, true);
  assert.is((a.error as FleetError).detail?.sent, true);
  assert.not.ok(b.done);
  clock.advance(510);
  await settle();
  assert.is((b.error as FleetError).code, 'TIMEOUT');
  assert.is((b.error as FleetError).detail?.sent, false);
  // the late acknowledgement of the first request changes nothing, and b never leaves
  acknowledge(sent[0], new Map());
  await settle();
  clock.advance(100);
  await settle();
  assert.is(sent.length, 1);
});

test('appends beyond maxPendingRecords reject BACKPRESSURE, retriable', async () => {
  const { appender, expireAll } = setup({ maxPendingRecords: 3 });
  track(appender.append('t', [rec('a'), rec('b')]));
  await settle();
  try {
    await appender.append('t', [rec('c'), rec('d')]);
    assert.unreachable('expected BACKPRESSURE');
  } catch (error) {
    assert.is((error as FleetError).code, 'BACKPRESSURE');
    assert.is((error as FleetError).retriable, true);
  }
  await expireAll();
});

test('an unknown topic rejects before anything is queued; empty appends resolve at once', async () => {
  const { sent, appender } = setup();
  try {
    await appender.append('missing', [rec('a')]);
    assert.unreachable('expected NOT_FOUND');
  } catch (error) {
    assert.is((error as FleetError).code, 'NOT_FOUND');
  }
  assert.equal(await appender.append('t', []), []);
  assert.is(sent.length, 0);
});

test('close sends what is queued, waits for it, then rejects appends CLOSED', async () => {
  const { sent, appender } = setup();
  const a = track(appender.append('t', [rec('a')]));
  await settle();
  const closing = track(appender.close());
  await settle();
  assert.is(sent.length, 1, 'close does not wait for the linger');
  assert.not.ok(closing.done);
  acknowledge(sent[0], new Map());
  await settle();
  assert.ok(a.done && a.error === undefined);
  assert.ok(closing.done);
  try {
    await appender.append('t', [rec('b')]);
    assert.unreachable('expected CLOSED');
  } catch (error) {
    assert.is((error as FleetError).code, 'CLOSED');
  }
});

test.run();
