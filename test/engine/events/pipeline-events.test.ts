/**
 * Topic `events` from the uplink pipeline (engine/events, UplinkPipeline): an uplink's stored
 * states, and its refusals, are on `events` before its offset is committed; one record per source,
 * keyed by device, in the device's order; a replay of the same uplink records (a crash before the
 * commit) writes events with the same ids; and with `wanted` false nothing is written at all.
 * With `combine` (the local log), the uplinks of a partition in a batch of the writer share records: runs in
 * the device's order, of at most maxEvents events, each on its devices' partition.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { UplinkPipeline } from '../../../engine/uplink/pipeline/UplinkPipeline.ts';
import { deviceActors } from '../../../engine/actors/DeviceActors.ts';
import { EventWriter } from '../../../engine/events/EventWriter.ts';
import type { Log, LogRecord } from '../../../engine/ports/log.ts';
import { Topics } from '../../../schemas/messages.ts';
import { expandEventsRecord } from '../../../engine/events/expandEventsRecord.ts';
import type { FleetEvent } from '../../../schemas/events.ts';
import { jsonBytes, ListSink, logWith, uplinkPipelineWorld } from '../../support/uplinkPipelineWorld.ts';
import { waitFor } from '../../support/tmp.ts';
import { partitionFor } from '../../../engine/kernel/partition.ts';
import type { StateRow } from '../../../schemas/messages.ts';
import type { FleetError } from '../../../engine/kernel/errors.ts';

/** Rows made durable together, as a batch of the store is: every callback of a turn at once, in the next. */
class BatchSink extends ListSink {
  #held: (() => void)[] = [];
  appendThen(rows: readonly StateRow[], done: (error?: FleetError) => void): void {
    this.rows.push(...rows);
    if (this.#held.length === 0) setImmediate(() => { for (const release of this.#held.splice(0)) release(); });
    this.#held.push(() => done());
  }
}

const envelope = (id: string, deviceId: string, value: unknown, receivedAt: number) =>
  ({ key: deviceId, value: encodeEnvelope({ id, channel: 'http', contentType: 'json', deviceId, receivedAt, body: jsonBytes({ t: { value } }) }) });

async function readAll(log: Log, group: string, count: number): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  const consumer = log.consumer({ group, topics: [Topics.events], onBatch: async (batch) => { records.push(...batch.records); } });
  await consumer.start();
  await waitFor(() => records.length >= count, 5000, `${count} records on events`);
  await consumer.stop();
  return records;
}

const eventsOf = (records: LogRecord[]) => records.flatMap((r) => expandEventsRecord(String(r.key), JSON.parse(new TextDecoder().decode(r.value)))!.events.map((e) => ({ ...(e as FleetEvent), key: r.key })));

test('stored states and refusals are on events before the offset is committed; a replay writes the same ids', async () => {
  const world = await uplinkPipelineWorld({ name: 'pipeline-events', partitions: 2, devices: 2 });
  await world.log.ensureTopics([{ name: Topics.events, partitions: 2 }]);
  let commitsBeforeEvents = 0;
  let eventsAppended = 0;
  const log = logWith(world.log, {
    append: async (topic, records) => {
      const positions = await world.log.append(topic, records);
      if (topic === Topics.events) eventsAppended += records.length;
      return positions;
    },
    consumer: (options) => {
      const consumer = world.log.consumer(options);
      return { ...consumer, start: () => consumer.start(), stop: () => consumer.stop(), pause: (p) => consumer.pause(p), resume: (p) => consumer.resume(p),
        commit: async (offsets) => {
          if (options.group === 'engine' && offsets.some((o) => o.offset > 0) && eventsAppended === 0) commitsBeforeEvents++;
          return consumer.commit(offsets);
        } };
    },
  });
  const run = async (group: string) => {
    const events = new EventWriter({ log, clock: systemClock, topic: Topics.events });
    const pipeline = new UplinkPipeline({ log, rows: new ListSink(), undecided: deviceActors({ directory: world.directory, clock: systemClock }), clock: systemClock, group, commitIntervalMs: 10, events });
    await pipeline.start();
    await waitFor(async () => (await world.log.committed(group, Topics.uplinks, 0)) + (await world.log.committed(group, Topics.uplinks, 1)) >= 4, 5000, 'every uplink committed');
    await pipeline.stop();
    await events.close();
  };
  await world.log.append(Topics.uplinks, [envelope('u1', 'd0', 1, 1000), envelope('u2', 'd0', 'not a number', 1001), envelope('u3', 'd0', 3, 1002), envelope('u4', 'd1', 4, 1003)]);
  await run('engine');
  assert.is(commitsBeforeEvents, 0, 'no offset was committed before events were durable');
  const first = eventsOf(await readAll(world.log, 'reader-1', 4));
  const d0 = first.filter((e) => e.deviceId === 'd0');
  assert.equal(d0.map((e) => [e.type, e.type === 'state' ? e.value : e.type === 'rejection' ? e.code : e.id]), [['state', 1], ['rejection', 'PROFILE_VIOLATION'], ['state', 3]], 'in the device\'s order');
  assert.ok(first.every((e) => e.key === e.deviceId), 'key = device id');
  const state = d0[0];
  assert.equal(state, { type: 'state', id: state.id, deviceId: 'd0', asset: 't', value: 1, at: '1970-01-01T00:00:01.000Z', receivedAt: '1970-01-01T00:00:01.000Z', uplinkId: 'u1', key: 'd0' });
  // A second engine group reading the same uplinks is what a replay after a crash is: the same ids.
  await run('engine-replay');
  const all = eventsOf(await readAll(world.log, 'reader-2', 8));
  assert.is(new Set(first.map((e) => e.id)).size, 4);
  assert.is(all.length, 8);
  assert.equal([...new Set(all.map((e) => e.id))].sort(), first.map((e) => e.id).sort(), 'every id twice, no new one');
  await world.log.close();
  world.tmp.remove();
});

test('with combine, the uplinks of a partition in a batch of the writer share records: in order, at most maxEvents events, on their devices\' partition', async () => {
  const world = await uplinkPipelineWorld({ name: 'pipeline-events-runs', partitions: 2, devices: 6 });
  await world.log.ensureTopics([{ name: Topics.events, partitions: 2 }]);
  const run = async (group: string) => {
    const events = new EventWriter({ log: world.log, clock: systemClock, topic: Topics.events, combine: { maxEvents: 5, on: true } });
    const pipeline = new UplinkPipeline({
      log: world.log, rows: new BatchSink(), undecided: deviceActors({ directory: world.directory, clock: systemClock }), clock: systemClock, group, commitIntervalMs: 10, events,
    });
    await pipeline.start();
    await waitFor(async () => (await world.log.committed(group, Topics.uplinks, 0)) + (await world.log.committed(group, Topics.uplinks, 1)) >= 40, 5000, 'every uplink committed');
    await pipeline.stop();
    await events.close();
    return events.written;
  };
  // 40 uplinks of 6 devices, one state each; every seventh refused (its refusal is its one event).
  const uplinks = Array.from({ length: 40 }, (_, i) => envelope(`u${String(i).padStart(2, '0')}`, `d${i % 6}`, i % 7 === 3 ? 'not a number' : i, 1000 + i));
  await world.log.append(Topics.uplinks, uplinks);
  const written = await run('engine');
  const records = await readAll(world.log, 'runs-reader', written);
  assert.ok(written < 40, `${written} records for 40 uplinks`);
  let runs = 0;
  for (const record of records) {
    const parsed = JSON.parse(new TextDecoder().decode(record.value)) as { uplinks?: { deviceId: string }[] };
    const devices = parsed.uplinks?.map((u) => u.deviceId) ?? [record.key];
    if (parsed.uplinks !== undefined) runs++;
    assert.is(devices[0], record.key, 'keyed by its first uplink\'s device');
    for (const device of devices) assert.is(partitionFor(device, 2), record.partition, `${device} on its own partition`);
    assert.ok(expandEventsRecord(record.key, parsed)!.events.length <= 5, 'at most maxEvents events');
  }
  assert.ok(runs > 0, 'some records are runs');
  const events = records.flatMap((r) => expandEventsRecord(r.key, JSON.parse(new TextDecoder().decode(r.value)))!.events as FleetEvent[]);
  assert.is(events.length, 40, 'every uplink\'s event, once');
  for (let d = 0; d < 6; d++) {
    const mine = events.filter((e) => e.deviceId === `d${d}`).map((e) => (e as { uplinkId: string }).uplinkId);
    assert.equal(mine, uplinks.filter((u) => u.key === `d${d}`).map((_, k) => `u${String(d + 6 * k).padStart(2, '0')}`), `d${d} in its order`);
  }
  for (const e of events) {
    const i = Number((e as { uplinkId: string }).uplinkId.slice(1));
    assert.is(e.type, i % 7 === 3 ? 'rejection' : 'state');
  }
  // A replay (a crash before the commit) writes the same ids, however its runs fall.
  const again = await run('engine-replay');
  const all = (await readAll(world.log, 'runs-reader-2', written + again)).flatMap((r) => expandEventsRecord(r.key, JSON.parse(new TextDecoder().decode(r.value)))!.events);
  assert.equal([...new Set(all.map((e) => e.id))].sort(), events.map((e) => e.id).sort());
  await world.log.close();
  world.tmp.remove();
});

test('while nobody wants events, nothing is built or appended and uplinks are finished as before', async () => {
  const world = await uplinkPipelineWorld({ name: 'pipeline-events-unwanted', partitions: 1, devices: 1 });
  await world.log.ensureTopics([{ name: Topics.events, partitions: 1 }]);
  const events = new EventWriter({ log: world.log, clock: systemClock, topic: Topics.events, wanted: () => false });
  const pipeline = new UplinkPipeline({ log: world.log, rows: new ListSink(), undecided: deviceActors({ directory: world.directory, clock: systemClock }), clock: systemClock, group: 'engine', commitIntervalMs: 10, events });
  await world.running(pipeline, async () => {
    await world.log.append(Topics.uplinks, [envelope('u1', 'd0', 1, 1000), envelope('u2', 'd0', 'x', 1001)]);
    await waitFor(async () => (await world.committed())[0] >= 2, 5000, 'both committed');
    assert.equal(await world.log.endOffsets(Topics.events), [0]);
    assert.is(events.written, 0);
  });
});

test.run();
