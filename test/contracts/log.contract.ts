/**
 * Contract of the log port (engine/ports/log.ts). Every adapter runs it:
 *
 *   logContract('local', async () => ({ log, cleanup, reopen })).run();
 *
 * The tests hold for a shared Kafka broker too: every test uses fresh topic and group names, waits
 * are bounded by `timeoutMs` (generous by default, as Kafka rebalances take seconds) and only
 * at-least-once delivery is assumed (a record may come again after a rebalance, never to two
 * members at once).
 */
import { suite } from '../support/suite.ts';
import * as assert from 'uvu/assert';
import { isFleetError } from '../../engine/kernel/errors.ts';
import { partitionFor } from '../../engine/kernel/partition.ts';
import type { Consumer, ConsumerOptions, Log, LogRecord, ProducerRecord, RecordBatch, TopicPartition } from '../../engine/ports/log.ts';

export interface LogFixture {
  log: Log;
  /** Closes whatever log is current and removes the test's data. */
  cleanup(): Promise<void>;
  /** Closes the current log and opens a new one over the same data (a process restart). */
  reopen?(): Promise<Log>;
}

export interface LogContractOptions {
  /** Upper bound of every wait for deliveries and rebalances, ms. Default 30 000. */
  timeoutMs?: number;
  /** How long the tests watch for something that must NOT arrive, ms. Default 300. */
  quietMs?: number;
}

/** Resolves once `predicate` holds; rejects with `what` after `timeoutMs`. Polls every 5 ms. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs: number, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

let counter = 0;
/** A topic or group name no other test (or earlier run against the same broker) uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${process.pid.toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

export async function rejectsWith(action: () => unknown, code: string): Promise<void> {
  let error: unknown;
  try {
    await action();
  } catch (e) {
    error = e;
  }
  assert.ok(error !== undefined, `expected a FleetError ${code}, nothing was thrown`);
  assert.ok(isFleetError(error), `expected a FleetError ${code}, got ${String(error)}`);
  assert.is(error.code, code);
}

/** A key that partitionFor sends to `partition` of a `count`-partition topic. */
export function keyFor(partition: number, count: number, prefix = 'device'): string {
  for (let i = 0; ; i++) if (partitionFor(`${prefix}-${i}`, count) === partition) return `${prefix}-${i}`;
}

function tpKey(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}

/** Records what one consumer was handed. */
class Recorder {
  readonly batches: RecordBatch[] = [];
  readonly records: LogRecord[] = [];
  readonly byPartition = new Map<number, LogRecord[]>();
  readonly owned = new Set<string>();
  readonly events: string[] = [];

  onBatch = async (batch: RecordBatch): Promise<void> => {
    this.batches.push(batch);
    this.events.push(`batch:${batch.partition}`);
    for (const record of batch.records) {
      this.records.push(record);
      let list = this.byPartition.get(record.partition);
      if (!list) this.byPartition.set(record.partition, list = []);
      list.push(record);
    }
  };

  onAssign = (partitions: TopicPartition[]): void => {
    for (const tp of partitions) { this.owned.add(tpKey(tp.topic, tp.partition)); this.events.push(`assign:${tp.partition}`); }
  };

  onRevoke = async (partitions: TopicPartition[]): Promise<void> => {
    for (const tp of partitions) { this.owned.delete(tpKey(tp.topic, tp.partition)); this.events.push(`revoke:${tp.partition}`); }
  };

  count(partition: number): number {
    return this.byPartition.get(partition)?.length ?? 0;
  }
}

function record(key: string, text: string, timestamp?: number): ProducerRecord {
  return timestamp === undefined ? { key, value: Buffer.from(text) } : { key, value: Buffer.from(text), timestamp };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

export function logContract(name: string, factory: () => Promise<LogFixture>, options: LogContractOptions = {}) {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const quietMs = options.quietMs ?? 300;
  const test = suite(`log contract: ${name}`);

  /** Runs a test body with a fresh fixture; consumers it made are stopped and the fixture cleaned up. */
  const withLog = (body: (fx: LogFixture, consumer: (options: ConsumerOptions) => Consumer) => Promise<void>) => async () => {
    const fx = await factory();
    const consumers: Consumer[] = [];
    const make = (opts: ConsumerOptions): Consumer => {
      const c = fx.log.consumer(opts);
      consumers.push(c);
      return c;
    };
    try {
      await body(fx, make);
    } finally {
      await Promise.all(consumers.map((c) => c.stop().catch(() => undefined)));
      await fx.cleanup();
    }
  };

  const until = (predicate: () => boolean, what: string): Promise<void> => waitFor(predicate, timeoutMs, what);

  /** The records a consumer of `group` on `log` is handed once it has at least `count`; it is stopped then. */
  const readAtLeast = async (log: Log, group: string, topic: string, count: number, what: string): Promise<LogRecord[]> => {
    const recorder = new Recorder();
    const c = log.consumer({ group, topics: [topic], onBatch: recorder.onBatch });
    try {
      await c.start();
      await until(() => recorder.records.length >= count, what);
      return recorder.records;
    } finally {
      await c.stop();
    }
  };

  test('ensureTopics creates topics, is idempotent and keeps existing partition counts', withLog(async ({ log }) => {
    const a = uniqueName('topic-a');
    const b = uniqueName('topic-b');
    await log.ensureTopics([{ name: a, partitions: 3 }]);
    assert.is(await log.partitionCount(a), 3);
    await log.ensureTopics([{ name: a, partitions: 3 }]);
    await log.ensureTopics([{ name: a, partitions: 5 }, { name: b, partitions: 1 }]);
    assert.is(await log.partitionCount(a), 3);
    assert.is(await log.partitionCount(b), 1);
    await log.ensureTopics([]);
  }));

  test('unknown topics and malformed input are refused with stable error codes', withLog(async ({ log }) => {
    const topic = uniqueName('topic');
    await rejectsWith(() => log.partitionCount(uniqueName('missing')), 'NOT_FOUND');
    await rejectsWith(() => log.append(uniqueName('missing'), [record('k', 'v')]), 'NOT_FOUND');
    await rejectsWith(() => log.ensureTopics([{ name: 'bad/name', partitions: 1 }]), 'VALIDATION_FAILED');
    await rejectsWith(() => log.ensureTopics([{ name: '', partitions: 1 }]), 'VALIDATION_FAILED');
    await rejectsWith(() => log.ensureTopics([{ name: topic, partitions: 0 }]), 'VALIDATION_FAILED');
    await rejectsWith(() => log.ensureTopics([{ name: topic, partitions: 1.5 }]), 'VALIDATION_FAILED');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    await rejectsWith(() => log.append(topic, [{ key: 'k', value: 'not bytes' as unknown as Uint8Array }]), 'VALIDATION_FAILED');
    await rejectsWith(() => log.append(topic, [{ key: 42 as unknown as string, value: Buffer.from('v') }]), 'VALIDATION_FAILED');
    await rejectsWith(() => log.append(topic, [null as unknown as ProducerRecord]), 'VALIDATION_FAILED');
    await rejectsWith(() => log.append(topic, [{ key: 'k', value: Buffer.from('v'), timestamp: -1 }]), 'VALIDATION_FAILED');
    assert.equal(await log.append(topic, []), []);
    // a refused call appended nothing: the next record still gets offset 0
    const [position] = await log.append(topic, [record('k', 'v')]);
    assert.is(position.offset, 0);
    assert.is(await log.committed(uniqueName('group'), topic, 0), 0);
  }));

  test('the same key always lands on the partition partitionFor picks', withLog(async ({ log }) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 4 }]);
    const keys = Array.from({ length: 40 }, (_, i) => `device-${i}`);
    const batch = await log.append(topic, keys.map((k) => record(k, 'x')));
    const single = await Promise.all(keys.map((k) => log.append(topic, [record(k, 'y')])));
    keys.forEach((key, i) => {
      assert.is(batch[i].partition, partitionFor(key, 4), key);
      assert.is(single[i][0].partition, batch[i].partition, key);
    });
    assert.ok(new Set(batch.map((p) => p.partition)).size > 1, 'keys spread over partitions');
  }));

  test('endOffsets: per partition, one past the last durable record; NOT_FOUND for an unknown topic', withLog(async ({ log }) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 3 }]);
    assert.equal(await log.endOffsets(topic), [0, 0, 0]);
    const positions = await log.append(topic, Array.from({ length: 12 }, (_, i) => record(`device-${i}`, 'x')));
    const expected = [0, 0, 0];
    for (const { partition } of positions) expected[partition]++;
    assert.equal(await log.endOffsets(topic), expected);
    await rejectsWith(() => log.endOffsets(uniqueName('missing')), 'NOT_FOUND');
  }));

  test('startOffsets: the oldest record kept per partition (0 on a new topic); NOT_FOUND for an unknown topic', withLog(async ({ log }) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    assert.equal(await log.startOffsets(topic), [0, 0]);
    await log.append(topic, Array.from({ length: 10 }, (_, i) => record(`k${i}`, `v${i}`)));
    assert.equal(await log.startOffsets(topic), [0, 0], 'nothing is deleted while it is young');
    await rejectsWith(() => log.startOffsets(uniqueName('missing')), 'NOT_FOUND');
  }));

  test('deleteGroup: a stopped group\'s commits are forgotten, a new member starts over; an unknown group is nothing; a malformed name is refused', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    const group = uniqueName('group');
    await log.ensureTopics([{ name: topic, partitions: 1 }]);
    await log.append(topic, Array.from({ length: 5 }, (_, i) => record('k', `v${i}`)));
    const first = new Recorder();
    const c1 = consumer({ group, topics: [topic], onBatch: first.onBatch });
    await c1.start();
    await until(() => first.records.length >= 5, '5 records');
    await c1.commit([{ topic, partition: 0, offset: 5 }]);
    await c1.stop();
    assert.is(await log.committed(group, topic, 0), 5);
    await log.deleteGroup(group);
    assert.is(await log.committed(group, topic, 0), 0);
    const again = new Recorder();
    await consumer({ group, topics: [topic], onBatch: again.onBatch }).start();
    await until(() => again.records.length >= 5, 'the records again from the start');
    await log.deleteGroup(uniqueName('never-seen'));
    await rejectsWith(() => log.deleteGroup(''), 'VALIDATION_FAILED');
  }));

  test('offsets are consecutive per partition and positions come back in input order', withLog(async ({ log }) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 3 }]);
    const next = new Map<number, number>();
    for (let round = 0; round < 3; round++) {
      const records = Array.from({ length: 30 }, (_, i) => record(`device-${(i * 7) % 11}`, `${round}-${i}`));
      const positions = await log.append(topic, records);
      assert.is(positions.length, records.length);
      positions.forEach((position, i) => {
        assert.is(position.partition, partitionFor(records[i].key, 3));
        const expected = next.get(position.partition) ?? 0;
        assert.is(position.offset, expected, `offset of record ${i} in round ${round}`);
        next.set(position.partition, expected + 1);
      });
    }
    const concurrent = await Promise.all(Array.from({ length: 40 }, (_, i) => log.append(topic, [record('device-0', `c${i}`)])));
    const base = next.get(partitionFor('device-0', 3)) ?? 0;
    assert.equal(concurrent.map(([p]) => p.offset).sort((x, y) => x - y), Array.from({ length: 40 }, (_, i) => base + i));
  }));

  test('a consumer receives every record once, in order per partition, intact', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 3 }]);
    const before = Date.now();
    const sent: ProducerRecord[] = [];
    for (let i = 0; i < 150; i++) {
      const value = i % 50 === 0 ? new Uint8Array(0) : Uint8Array.from({ length: 1 + (i % 40) }, (_, j) => (i * 31 + j) % 256);
      sent.push(i % 3 === 0 ? { key: `dévice-${i % 13}`, value, timestamp: 1_600_000_000_000 + i } : { key: `device-${i % 17}`, value });
    }
    const positions = await log.append(topic, sent.slice(0, 100));
    const recorder = new Recorder();
    const group = uniqueName('group');
    await consumer({ group, topics: [topic], onBatch: recorder.onBatch }).start();
    await until(() => recorder.records.length >= 100, '100 records');
    // appended after the consumer caught up: must wake it
    positions.push(...await log.append(topic, sent.slice(100)));
    const after = Date.now();
    await until(() => recorder.records.length >= 150, '150 records');
    await delay(quietMs);
    assert.is(recorder.records.length, 150, 'no record delivered twice');
    const sentAt = new Map(positions.map((p, i) => [tpKey(topic, p.partition) + `@${p.offset}`, sent[i]]));
    for (const [partition, list] of recorder.byPartition) {
      list.forEach((r, i) => {
        assert.is(r.offset, i, `partition ${partition} offsets consecutive from 0`);
        assert.is(r.topic, topic);
        assert.is(r.partition, partition);
        const original = sentAt.get(tpKey(topic, partition) + `@${r.offset}`)!;
        assert.is(r.key, original.key);
        assert.ok(r.value instanceof Uint8Array);
        assert.ok(sameBytes(r.value, original.value), `value of ${partition}@${r.offset}`);
        if (original.timestamp !== undefined) assert.is(r.timestamp, original.timestamp);
        else assert.ok(r.timestamp >= before - 60_000 && r.timestamp <= after + 60_000, 'append time as timestamp');
      });
    }
    for (const batch of recorder.batches) assert.ok(batch.records.every((r) => r.partition === batch.partition && r.topic === batch.topic));
  }));

  test('batches are never empty and respect maxBatchRecords', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 1 }]);
    await log.append(topic, Array.from({ length: 50 }, (_, i) => record('k', `a${i}`)));
    const recorder = new Recorder();
    await consumer({ group: uniqueName('group'), topics: [topic], onBatch: recorder.onBatch, maxBatchRecords: 7 }).start();
    for (let i = 0; i < 10; i++) await log.append(topic, [record('k', `b${i}`)]);
    await until(() => recorder.records.length >= 60, '60 records');
    assert.ok(recorder.batches.length >= 9, 'at least ceil(60 / 7) batches');
    for (const batch of recorder.batches) {
      assert.ok(batch.records.length >= 1 && batch.records.length <= 7, `batch of ${batch.records.length}`);
      batch.records.forEach((r, i) => { if (i > 0) assert.is(r.offset, batch.records[i - 1].offset + 1); });
    }
  }));


  test('prefer throughput: records that trickle in one at a time are each delivered, in order; a bulk append arrives whole', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 1 }]);
    const recorder = new Recorder();
    await consumer({ group: uniqueName('group'), topics: [topic], onBatch: recorder.onBatch, prefer: 'throughput' }).start();
    // each waits for the one before it: a reader that held records back for a fuller batch would stall here
    for (let i = 0; i < 5; i++) {
      await log.append(topic, [record('k', `t${i}`)]);
      await until(() => recorder.records.length === i + 1, `trickled record ${i}`);
    }
    await log.append(topic, Array.from({ length: 300 }, (_, i) => record('k', `b${i}`)));
    await until(() => recorder.records.length >= 305, 'the bulk append');
    assert.equal(recorder.records.map((r) => Buffer.from(r.value).toString()),
      [...Array.from({ length: 5 }, (_, i) => `t${i}`), ...Array.from({ length: 300 }, (_, i) => `b${i}`)]);
  }));
  test('consumers of different groups each receive every record', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    await log.append(topic, Array.from({ length: 40 }, (_, i) => record(`device-${i}`, `v${i}`)));
    const one = new Recorder();
    const two = new Recorder();
    await consumer({ group: uniqueName('group'), topics: [topic], onBatch: one.onBatch }).start();
    await consumer({ group: uniqueName('group'), topics: [topic], onBatch: two.onBatch }).start();
    await until(() => one.records.length >= 40 && two.records.length >= 40, 'both groups to receive 40');
  }));

  test('startAt latest: a new group receives only records appended after it was assigned', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    await log.append(topic, Array.from({ length: 20 }, (_, i) => record(`device-${i}`, `old${i}`)));
    const assigned = new Set<number>();
    const live = new Recorder();
    await consumer({ group: uniqueName('group'), topics: [topic], startAt: 'latest', onBatch: live.onBatch, onAssign: (tps) => tps.forEach((tp) => assigned.add(tp.partition)) }).start();
    await until(() => assigned.size === 2, 'both partitions assigned');
    // Kafka resolves `latest` on the first fetch after assignment: give it that moment.
    await delay(quietMs);
    await log.append(topic, Array.from({ length: 10 }, (_, i) => record(`device-${i}`, `new${i}`)));
    await until(() => live.records.length >= 10, 'the 10 new records');
    await delay(quietMs);
    assert.equal(live.records.map((r) => Buffer.from(r.value).toString()).sort(), Array.from({ length: 10 }, (_, i) => `new${i}`).sort());
  }));

  test('committed offsets survive consumer stop and start (and a reopen)', withLog(async (fx, consumer) => {
    const topic = uniqueName('topic');
    const group = uniqueName('group');
    await fx.log.ensureTopics([{ name: topic, partitions: 1 }]);
    await fx.log.append(topic, Array.from({ length: 20 }, (_, i) => record('k', `v${i}`)));
    const first = new Recorder();
    const c1 = consumer({ group, topics: [topic], onBatch: first.onBatch });
    await c1.start();
    await until(() => first.records.length >= 20, '20 records');
    await c1.commit([{ topic, partition: 0, offset: 12 }]);
    await c1.stop();
    assert.is(await fx.log.committed(group, topic, 0), 12);
    const second = new Recorder();
    await consumer({ group, topics: [topic], onBatch: second.onBatch }).start();
    await until(() => second.records.length >= 8, 'records 12..19');
    assert.equal(second.records.map((r) => r.offset), [12, 13, 14, 15, 16, 17, 18, 19]);
    if (!fx.reopen) return;
    const log = await fx.reopen();
    assert.is(await log.committed(group, topic, 0), 12);
    const third = await readAtLeast(log, group, topic, 8, 'records 12..19 after reopen');
    assert.is(third[0].offset, 12);
    assert.is(Buffer.from(third[0].value).toString(), 'v12');
  }));

  test('records processed but not committed are delivered again after a restart', withLog(async (fx, consumer) => {
    const topic = uniqueName('topic');
    const group = uniqueName('group');
    await fx.log.ensureTopics([{ name: topic, partitions: 1 }]);
    await fx.log.append(topic, Array.from({ length: 10 }, (_, i) => record('k', `v${i}`)));
    const seen: number[] = [];
    let c1: Consumer | undefined;
    c1 = consumer({
      group, topics: [topic], maxBatchRecords: 1,
      onBatch: async (batch) => {
        for (const r of batch.records) {
          seen.push(r.offset);
          // only the first five are "stored": their offsets are committed, the rest are not
          if (r.offset < 5) await c1!.commit([{ topic, partition: 0, offset: r.offset + 1 }]);
        }
      },
    });
    await c1.start();
    await until(() => seen.length >= 10, '10 records');
    await c1.stop();
    assert.is(await fx.log.committed(group, topic, 0), 5);
    const again = new Recorder();
    await consumer({ group, topics: [topic], onBatch: again.onBatch }).start();
    await until(() => again.records.length >= 5, 'records 5..9 again');
    assert.equal(again.records.map((r) => r.offset), [5, 6, 7, 8, 9]);
    if (!fx.reopen) return;
    const log = await fx.reopen();
    const afterReopen = await readAtLeast(log, group, topic, 5, 'records 5..9 after reopen');
    assert.is(afterReopen[0].offset, 5);
  }));

  test('onAssign precedes the first batch of a partition; stop revokes every assigned partition', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    await log.append(topic, [record(keyFor(0, 2), 'a'), record(keyFor(1, 2), 'b')]);
    const recorder = new Recorder();
    const c = consumer({ group: uniqueName('group'), topics: [topic], onBatch: recorder.onBatch, onAssign: recorder.onAssign, onRevoke: recorder.onRevoke });
    await c.start();
    await until(() => recorder.records.length >= 2, '2 records');
    await c.stop();
    for (const partition of [0, 1]) {
      const events = recorder.events;
      const assigned = events.indexOf(`assign:${partition}`);
      assert.ok(assigned >= 0 && assigned < events.indexOf(`batch:${partition}`), `assign before batch of ${partition}: ${events}`);
      assert.ok(events.lastIndexOf(`revoke:${partition}`) > events.lastIndexOf(`batch:${partition}`), `revoke after last batch of ${partition}: ${events}`);
    }
    assert.is(recorder.owned.size, 0, 'nothing owned after stop');
    const count = recorder.batches.length;
    await log.append(topic, [record(keyFor(0, 2), 'c')]);
    await delay(quietMs);
    assert.is(recorder.batches.length, count, 'no delivery after stop');
  }));

  test('pause stops delivery of that partition only; resume restarts it', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    const recorder = new Recorder();
    const c = consumer({ group: uniqueName('group'), topics: [topic], onBatch: recorder.onBatch });
    await c.start();
    await log.append(topic, [record(k0, 'a0'), record(k1, 'b0')]);
    await until(() => recorder.count(0) >= 1 && recorder.count(1) >= 1, 'first record of each partition');
    c.pause([{ topic, partition: 0 }]);
    await log.append(topic, Array.from({ length: 5 }, (_, i) => record(k0, `a${i + 1}`)));
    await log.append(topic, Array.from({ length: 5 }, (_, i) => record(k1, `b${i + 1}`)));
    await until(() => recorder.count(1) >= 6, 'partition 1 keeps flowing');
    await delay(quietMs);
    assert.is(recorder.count(0), 1, 'paused partition delivered nothing');
    c.resume([{ topic, partition: 0 }]);
    await until(() => recorder.count(0) >= 6, 'partition 0 after resume');
    assert.equal(recorder.byPartition.get(0)!.map((r) => r.offset), [0, 1, 2, 3, 4, 5]);
  }));

  test('seek a paused partition forward: what lies before the offset is never delivered; the other partition is untouched', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    const recorder = new Recorder();
    const c = consumer({ group: uniqueName('group'), topics: [topic], onBatch: recorder.onBatch, onAssign: recorder.onAssign });
    await c.start();
    await until(() => recorder.owned.size === 2, 'assignment');
    await log.append(topic, [record(k0, 'a0'), record(k1, 'b0')]);
    await until(() => recorder.count(0) >= 1 && recorder.count(1) >= 1, 'first record of each partition');
    c.pause([{ topic, partition: 0 }]);
    await log.append(topic, Array.from({ length: 5 }, (_, i) => record(k0, `a${i + 1}`))); // offsets 1..5, skipped
    const [end] = await log.endOffsets(topic);
    assert.is(end, 6);
    c.seek([{ topic, partition: 0, offset: end }]);
    c.resume([{ topic, partition: 0 }]);
    await log.append(topic, [record(k0, 'a6'), record(k1, 'b1')]);
    await until(() => recorder.count(0) >= 2 && recorder.count(1) >= 2, 'the record after the seek, and partition 1');
    await delay(quietMs);
    assert.equal(recorder.byPartition.get(0)!.map((r) => [r.offset, Buffer.from(r.value).toString()]), [[0, 'a0'], [6, 'a6']]);
    assert.equal(recorder.byPartition.get(1)!.map((r) => r.offset), [0, 1]);
  }));

  test('seek back: records are delivered again from the offset, then what follows', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 1 }]);
    const k = keyFor(0, 1);
    const recorder = new Recorder();
    const c = consumer({ group: uniqueName('group'), topics: [topic], onBatch: recorder.onBatch, onAssign: recorder.onAssign });
    await c.start();
    await until(() => recorder.owned.size === 1, 'assignment');
    await log.append(topic, Array.from({ length: 4 }, (_, i) => record(k, `r${i}`)));
    await until(() => recorder.count(0) >= 4, 'four records');
    c.pause([{ topic, partition: 0 }]);
    c.seek([{ topic, partition: 0, offset: 2 }]);
    c.resume([{ topic, partition: 0 }]);
    await until(() => recorder.count(0) >= 6, 'offsets 2 and 3 again');
    await log.append(topic, [record(k, 'r4')]);
    await until(() => recorder.count(0) >= 7, 'the next record');
    await delay(quietMs);
    assert.equal(recorder.byPartition.get(0)!.map((r) => r.offset), [0, 1, 2, 3, 2, 3, 4]);
  }));

  test('seek refuses a partition not assigned (CONFLICT), a topic not subscribed and a bad offset (VALIDATION_FAILED)', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    const other = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 1 }, { name: other, partitions: 1 }]);
    const recorder = new Recorder();
    const c = consumer({ group: uniqueName('group'), topics: [topic], onBatch: recorder.onBatch, onAssign: recorder.onAssign });
    await c.start();
    await until(() => recorder.owned.size === 1, 'assignment');
    await rejectsWith(async () => c.seek([{ topic, partition: 1, offset: 0 }]), 'CONFLICT');
    await rejectsWith(async () => c.seek([{ topic: other, partition: 0, offset: 0 }]), 'VALIDATION_FAILED');
    await rejectsWith(async () => c.seek([{ topic, partition: 0, offset: -1 }]), 'VALIDATION_FAILED');
    await rejectsWith(async () => c.seek([{ topic, partition: 0, offset: 1.5 }]), 'VALIDATION_FAILED');
  }));

  test('two consumers of a group split the partitions, never holding one at the same time', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    const group = uniqueName('group');
    const partitions = 4;
    await log.ensureTopics([{ name: topic, partitions }]);
    const inFlight = new Map<number, string>();
    const violations: string[] = [];
    const delivered = new Set<string>();
    // Slow handlers keep batches in flight, so both rebalances below happen mid-batch.
    const member = (name: string): { recorder: Recorder; consumer: Consumer } => {
      const recorder = new Recorder();
      let self: Consumer;
      const onBatch = async (batch: RecordBatch): Promise<void> => {
        const holder = inFlight.get(batch.partition);
        if (holder !== undefined) violations.push(`${name} got partition ${batch.partition} while ${holder} was processing it`);
        if (!recorder.owned.has(tpKey(topic, batch.partition))) violations.push(`${name} got partition ${batch.partition} it does not own`);
        inFlight.set(batch.partition, name);
        try {
          await delay(5);
          await recorder.onBatch(batch);
          for (const r of batch.records) delivered.add(`${r.partition}@${r.offset}`);
          await self.commit([{ topic, partition: batch.partition, offset: batch.records[batch.records.length - 1].offset + 1 }]);
        } catch (error) {
          violations.push(`${name} failed on partition ${batch.partition}: ${String(error)}`);
        } finally {
          inFlight.delete(batch.partition);
        }
      };
      self = consumer({ group, topics: [topic], maxBatchRecords: 5, onBatch, onAssign: recorder.onAssign, onRevoke: recorder.onRevoke });
      return { recorder, consumer: self };
    };
    const a = member('a');
    const b = member('b');
    const appendMany = async (n: number, tag: string): Promise<void> => {
      await log.append(topic, Array.from({ length: n }, (_, i) => record(`device-${i % 23}`, `${tag}${i}`)));
    };
    await a.consumer.start();
    await until(() => a.recorder.owned.size === partitions, 'a to own every partition');
    await appendMany(400, 'x');
    await until(() => a.recorder.records.length >= 20, 'a to be busy');
    await b.consumer.start();
    await until(() => a.recorder.owned.size > 0 && b.recorder.owned.size > 0 && a.recorder.owned.size + b.recorder.owned.size === partitions, 'a and b to split the partitions');
    for (const key of a.recorder.owned) assert.not.ok(b.recorder.owned.has(key), `${key} owned by both`);
    await appendMany(200, 'y');
    await until(() => delivered.size >= 600, 'all 600 records');
    assert.ok(b.recorder.records.length > 0, 'b received records');
    const bBefore = b.recorder.records.length;
    await appendMany(200, 'z');
    await until(() => b.recorder.records.length > bBefore, 'b to be busy');
    await b.consumer.stop();
    await until(() => a.recorder.owned.size === partitions, 'a to own every partition again');
    await until(() => delivered.size >= 800, 'all 800 records');
    await appendMany(20, 'w');
    await until(() => delivered.size >= 820, 'all 820 records');
    assert.equal(violations, []);
  }));

  test('commit refuses negative and fractional offsets', withLog(async ({ log }, consumer) => {
    const topic = uniqueName('topic');
    await log.ensureTopics([{ name: topic, partitions: 1 }]);
    const recorder = new Recorder();
    const c = consumer({ group: uniqueName('group'), topics: [topic], onBatch: recorder.onBatch, onAssign: recorder.onAssign });
    await c.start();
    await until(() => recorder.owned.size === 1, 'assignment');
    await rejectsWith(() => c.commit([{ topic, partition: 0, offset: -1 }]), 'VALIDATION_FAILED');
    await rejectsWith(() => c.commit([{ topic, partition: 0, offset: 0.5 }]), 'VALIDATION_FAILED');
  }));

  return test;
}
