/**
 * Topic `events` from the uplink pipeline (engine/events, UplinkPipeline): an uplink's stored
 * states, and its refusals, are on `events` before its offset is committed; one record per source,
 * keyed by device, in the device's order; a replay of the same uplink records (a crash before the
 * commit) writes events with the same ids; and with `wanted` false nothing is written at all.
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
