/**
 * UplinkPipeline when dead letters cannot be written for a while: the log refusing the append (a
 * Kafka broker restarting) or onDeadLetters failing (the ClickHouse server keeping the device's
 * rejections is down) with retriable errors. The pipeline waits them out with backoff, as it does
 * for states, and commits only once every rejection is written; anything else stops progress.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { decodeDeadLetter, encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { Log } from '../../../engine/ports/log.ts';
import { UplinkPipeline } from '../../../engine/uplink/pipeline/UplinkPipeline.ts';
import { deviceActors } from '../../../engine/actors/DeviceActors.ts';
import { rejectionRowsOf } from '../../../engine/uplink/pipeline/rejectionRows.ts';
import { Topics, type DeadLetter } from '../../../schemas/messages.ts';
import { waitFor } from '../../support/tmp.ts';
import { jsonBytes, ListSink, logWith, uplinkPipelineWorld } from '../../support/uplinkPipelineWorld.ts';

const PARTITIONS = 2;

/** The local log whose appends to `dead-letters` first throw the queued errors, one per call. */
function failingDeadLetterAppends(log: Log, failures: FleetError[]): Log {
  return logWith(log, {
    async append(topic, records) {
      if (topic === Topics.deadLetters) {
        const failure = failures.shift();
        if (failure) throw failure;
      }
      return log.append(topic, records);
    },
  });
}

async function world(name: string) {
  const w = await uplinkPipelineWorld({ name, partitions: PARTITIONS, devices: 4 });
  /** Uplink i: a good state of t, and a value of an asset the device does not have (rejected). */
  const appendUplinks = async (from: number, count: number) => {
    const ends = new Array<number>(PARTITIONS).fill(0);
    const records = Array.from({ length: count }, (_, j) => {
      const i = from + j;
      const envelope = { id: `u${i}`, channel: 'http' as const, contentType: 'json' as const, deviceId: `d${i % 4}`, receivedAt: 1_000 + i, body: jsonBytes({ t: { value: i }, nosuch: { value: 1 } }) };
      return { key: envelope.deviceId, value: encodeEnvelope(envelope) };
    });
    for (const p of await w.log.append(Topics.uplinks, records)) ends[p.partition] = Math.max(ends[p.partition], p.offset + 1);
    return ends;
  };
  const deadLetters = async (): Promise<DeadLetter[]> => {
    const letters: DeadLetter[] = [];
    const consumer = w.log.consumer({ group: `read-${Math.random()}`, topics: [Topics.deadLetters], onBatch: async (b) => { letters.push(...b.records.map((r) => decodeDeadLetter(r.value))); } });
    await consumer.start();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await consumer.stop();
    return letters;
  };
  return { ...w, appendUplinks, deadLetters };
}

test('retriable failures of the dead-letter append and of onDeadLetters are waited out; commits follow', async () => {
  const w = await world('pipeline-dead-letters-retry');
  const appendFailures = [
    new FleetError('UNAVAILABLE', 'broker not reachable', { retriable: true }),
    new FleetError('TIMEOUT', 'Kafka did not acknowledge the append'),
  ];
  let recordFailures = 2;
  const recorded = new Set<string>();
  const errors: FleetError[] = [];
  const sink = new ListSink();
  const pipeline = new UplinkPipeline({
    log: failingDeadLetterAppends(w.log, appendFailures), rows: sink, undecided: deviceActors({ directory: w.directory, clock: systemClock }), clock: systemClock,
    group: 'engine', commitIntervalMs: 20, onError: (e) => errors.push(e),
    onDeadLetters(letters) {
      if (recordFailures-- > 0) throw new FleetError('UNAVAILABLE', 'ClickHouse: connect ECONNREFUSED', { retriable: true });
      for (const l of letters) recorded.add(l.envelope.id);
    },
  });
  await w.running(pipeline, async () => {
    const ends = await w.appendUplinks(0, 40);
    await waitFor(async () => (await w.committed()).join() === ends.join(), 15_000, 'every uplink committed after the failures');
    assert.is(pipeline.failure, undefined);
    assert.equal(errors, []);
    assert.is(appendFailures.length, 0, 'both append failures happened');
    assert.ok(recordFailures < 0, 'both onDeadLetters failures happened');
    assert.is(sink.rows.length, 40, 'the good states are stored');
    const expected = Array.from({ length: 40 }, (_, i) => `u${i}`);
    assert.equal([...recorded].sort(), [...expected].sort(), 'every rejection recorded once the recorder worked');
    const onTopic = new Set((await w.deadLetters()).map((l) => l.envelope.id));
    for (const id of expected) assert.ok(onTopic.has(id), `dead letter of ${id} on the topic`);
  });
});

test('the refusals of a batch carry their item from the rejection through the dead letter to the rejection rows', async () => {
  const w = await world('pipeline-dead-letters-items');
  const letters: DeadLetter[] = [];
  const pipeline = new UplinkPipeline({
    log: w.log, rows: new ListSink(), undecided: deviceActors({ directory: w.directory, clock: systemClock }), clock: systemClock, group: 'engine', commitIntervalMs: 20,
    onDeadLetters(batch) { letters.push(...batch); },
  });
  await w.running(pipeline, async () => {
    const at = '2026-01-01T00:00:00Z';
    // Items 1 and 2 repeat item 0's reading; a body that is no batch is refused as a whole.
    const bodies = [[{ t: { value: 1, at } }, { t: { value: 2, at } }, { t: { value: 3, at } }], 'x'];
    await w.log.append(Topics.uplinks, bodies.map((body, i) => ({
      key: 'd0', value: encodeEnvelope({ id: `b${i}`, channel: 'mqtt', contentType: 'json', deviceId: 'd0', receivedAt: Date.parse(at), body: jsonBytes(body) }),
    })));
    await waitFor(() => letters.length === 3, 10_000, 'three dead letters');
    const onTopic = await w.deadLetters();
    for (const seen of [letters, onTopic]) {
      assert.equal(seen.map((l) => [l.envelope.id, l.code, l.asset, l.item]), [['b0', 'DUPLICATE_READING', 't', 1], ['b0', 'DUPLICATE_READING', 't', 2], ['b1', 'INVALID_STATE', undefined, undefined]]);
    }
    assert.equal(rejectionRowsOf(onTopic).map((r) => [r.uplinkId, r.item]), [['b0', 1], ['b0', 2], ['b1', undefined]]);
    assert.not.ok('item' in rejectionRowsOf(onTopic)[2], 'a rejection of no item has no item');
  });
});

test('a dead-letter failure that is not transient stops progress and is reported', async () => {
  const w = await world('pipeline-dead-letters-fatal');
  const errors: FleetError[] = [];
  const pipeline = new UplinkPipeline({
    log: failingDeadLetterAppends(w.log, [new FleetError('PAYLOAD_TOO_LARGE', 'record too large')]), rows: new ListSink(),
    undecided: deviceActors({ directory: w.directory, clock: systemClock }), clock: systemClock, group: 'engine', commitIntervalMs: 20, onError: (e) => errors.push(e),
  });
  await w.running(pipeline, async () => {
    await w.appendUplinks(0, 1);
    await waitFor(() => errors.length === 1, 5000, 'the failure reported');
    assert.is(pipeline.failure?.code, 'PAYLOAD_TOO_LARGE');
    assert.equal(await w.committed(), [0, 0]);
  });
});

test.run();
