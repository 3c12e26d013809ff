/**
 * UplinkPipeline when committing offsets fails: a broker that is restarting or moving its group
 * coordinator (retriable errors), or a partition taken away between two commits (CONFLICT), must not
 * stop the pipeline: states keep flowing and the offsets are committed once the log takes them.
 * Anything else still stops progress and is reported.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { CommitRequest, Consumer, Log } from '../../../engine/ports/log.ts';
import { UplinkPipeline } from '../../../engine/uplink/pipeline/UplinkPipeline.ts';
import { deviceActors } from '../../../engine/actors/DeviceActors.ts';
import { Topics } from '../../../schemas/messages.ts';
import { waitFor } from '../../support/tmp.ts';
import { jsonBytes, ListSink, logWith, uplinkPipelineWorld } from '../../support/uplinkPipelineWorld.ts';

const PARTITIONS = 3;

/** The local log whose consumers' commit() first throws the queued errors, one per call. */
function failingCommits(log: Log, failures: FleetError[], attempts: CommitRequest[][]): Log {
  return logWith(log, {
    consumer(options) {
      const inner = log.consumer(options);
      const wrapped: Consumer = {
        start: () => inner.start(),
        stop: () => inner.stop(),
        pause: (p) => inner.pause(p),
        resume: (p) => inner.resume(p),
        seek: (p) => inner.seek(p),
        async commit(offsets) {
          attempts.push(offsets);
          const failure = failures.shift();
          if (failure) throw failure;
          await inner.commit(offsets);
        },
      };
      return wrapped;
    },
  });
}

async function world(name: string) {
  const w = await uplinkPipelineWorld({ name, partitions: PARTITIONS, devices: 6 });
  let n = 0;
  const append = async (count: number) => {
    const records = Array.from({ length: count }, () => {
      const i = n++;
      const envelope = { id: `u${i}`, channel: 'http' as const, contentType: 'json' as const, deviceId: `d${i % 6}`, receivedAt: 1_000 + i, body: jsonBytes({ t: { value: i } }) };
      return { key: envelope.deviceId, value: encodeEnvelope(envelope) };
    });
    return w.log.append(Topics.uplinks, records);
  };
  /** End offset of each partition, from what was appended. */
  const ends = new Array<number>(PARTITIONS).fill(0);
  const appendTracked = async (count: number) => {
    for (const p of await append(count)) ends[p.partition] = Math.max(ends[p.partition], p.offset + 1);
  };
  /**
   * A pipeline of group engine committing every 20 ms through a log whose commits first throw
   * `failures`, with the commits it tried, the errors it reported and the rows it stored.
   */
  const pipelineFailing = (failures: FleetError[]) => {
    const attempts: CommitRequest[][] = [];
    const errors: FleetError[] = [];
    const sink = new ListSink();
    const pipeline = new UplinkPipeline({
      log: failingCommits(w.log, failures, attempts), rows: sink, undecided: deviceActors({ directory: w.directory, clock: systemClock }), clock: systemClock,
      group: 'engine', commitIntervalMs: 20, onError: (e) => errors.push(e),
    });
    return { pipeline, attempts, errors, sink };
  };
  return { ...w, appendTracked, ends, pipelineFailing };
}

test('retriable commit failures (broker restarting, coordinator moving) are retried; the pipeline keeps going', async () => {
  const w = await world('pipeline-commit-retry');
  const failures = [
    new FleetError('UNAVAILABLE', 'consumer engine is rejoining its group', { retriable: true }),
    new FleetError('TIMEOUT', 'commit timed out'),
    new FleetError('UNAVAILABLE', 'This is not the correct coordinator for this group', { retriable: true }),
  ];
  const { pipeline, attempts, errors, sink } = w.pipelineFailing(failures);
  await w.running(pipeline, async () => {
    await w.appendTracked(60);
    await waitFor(() => failures.length === 0, 5000, 'the three failing commits');
    await w.appendTracked(60);
    await waitFor(() => sink.rows.length === 120, 5000, 'every state stored after the failed commits');
    await waitFor(async () => (await w.committed()).join() === w.ends.join(), 5000, 'offsets committed once the log takes them');
    assert.is(pipeline.failure, undefined);
    assert.equal(errors, []);
    // a failed commit is retried with the same (or a later) offset: it is never skipped
    const firstFailed = attempts[0];
    for (const o of firstFailed) assert.ok(attempts.slice(1).some((a) => a.some((x) => x.partition === o.partition && x.offset >= o.offset)), `partition ${o.partition} committed again`);
  });
});

test('a commit refused for a partition no longer held (CONFLICT) drops that partition and commits the others', async () => {
  const w = await world('pipeline-commit-conflict');
  const failures = [new FleetError('CONFLICT', 'uplinks/1 is not assigned to this consumer of group engine', { detail: { topic: Topics.uplinks, partition: 1 } })];
  const { pipeline, attempts, errors, sink } = w.pipelineFailing(failures);
  await w.running(pipeline, async () => {
    await w.appendTracked(60);
    await waitFor(() => failures.length === 0 && attempts.length >= 2, 5000, 'the refused commit and the next one');
    const refused = attempts[0];
    assert.ok(refused.some((o) => o.partition === 1), 'the refused commit named partition 1');
    const after = attempts[1];
    assert.not.ok(after.some((o) => o.partition === 1), 'partition 1 is not committed again by this member');
    for (const o of refused.filter((x) => x.partition !== 1)) {
      assert.ok(after.some((x) => x.partition === o.partition && x.offset >= o.offset), `partition ${o.partition} committed after the refusal`);
    }
    await w.appendTracked(60);
    await waitFor(() => sink.rows.length === 120, 5000, 'every state stored');
    assert.is(pipeline.failure, undefined);
    assert.equal(errors, []);
  });
});

test('a commit failure that is not transient stops progress and is reported', async () => {
  const w = await world('pipeline-commit-fatal');
  const failures = [new FleetError('INTERNAL', 'offsets store is corrupt')];
  const { pipeline, errors } = w.pipelineFailing(failures);
  await w.running(pipeline, async () => {
    await w.appendTracked(30);
    await waitFor(() => errors.length === 1, 5000, 'the failure reported');
    assert.is(pipeline.failure?.code, 'INTERNAL');
    assert.equal(await w.committed(), [0, 0, 0], 'nothing committed');
  });
});

test.run();
