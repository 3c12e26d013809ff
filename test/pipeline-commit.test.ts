/**
 * UplinkPipeline when committing offsets fails: a broker that is restarting or moving its group
 * coordinator (retriable errors), or a partition taken away between two commits (CONFLICT), must not
 * stop the pipeline: states keep flowing and the offsets are committed once the log takes them.
 * Anything else still stops progress and is reported.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../engine/kernel/clock.ts';
import { encodeEnvelope } from '../engine/uplink/envelope.ts';
import { FleetError } from '../engine/kernel/errors.ts';
import { MemoryDirectory } from '../engine/ports/directory.ts';
import type { CommitRequest, Consumer, Log } from '../engine/ports/log.ts';
import { UplinkPipeline, type RowSink } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { Topics, type StateRow } from '../schemas/messages.ts';
import { tempDir, waitFor } from './support/tmp.ts';

const PARTITIONS = 3;
const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

class ListSink implements RowSink {
  rows: StateRow[] = [];
  async append(rows: readonly StateRow[]): Promise<void> {
    this.rows.push(...rows);
  }
  async flush(): Promise<void> {}
}

/** The local log whose consumers' commit() first throws the queued errors, one per call. */
function failingCommits(log: Log, failures: FleetError[], attempts: CommitRequest[][]): Log {
  return {
    ...log,
    ensureTopics: (t) => log.ensureTopics(t),
    partitionCount: (t) => log.partitionCount(t),
    append: (t, r) => log.append(t, r),
    committed: (g, t, p) => log.committed(g, t, p),
    close: () => log.close(),
    consumer(options) {
      const inner = log.consumer(options);
      const wrapped: Consumer = {
        start: () => inner.start(),
        stop: () => inner.stop(),
        pause: (p) => inner.pause(p),
        resume: (p) => inner.resume(p),
        async commit(offsets) {
          attempts.push(offsets);
          const failure = failures.shift();
          if (failure) throw failure;
          await inner.commit(offsets);
        },
      };
      return wrapped;
    },
  };
}

async function world(name: string) {
  const tmp = tempDir(name);
  const log = createLocalLog({ dir: `${tmp.dir}/log` });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: PARTITIONS }, { name: Topics.deadLetters, partitions: 1 }]);
  const directory = new MemoryDirectory();
  for (let d = 0; d < 6; d++) directory.put({ id: `d${d}`, assets: [{ id: `a${d}`, name: 't', is: 'sensor', profile: { type: 'number' } }] });
  let n = 0;
  const append = async (count: number) => {
    const records = Array.from({ length: count }, () => {
      const i = n++;
      const envelope = { id: `u${i}`, channel: 'http' as const, contentType: 'json' as const, deviceId: `d${i % 6}`, receivedAt: 1_000 + i, body: json({ t: { value: i } }) };
      return { key: envelope.deviceId, value: encodeEnvelope(envelope) };
    });
    return log.append(Topics.uplinks, records);
  };
  /** End offset of each partition, from what was appended. */
  const ends = new Array<number>(PARTITIONS).fill(0);
  const appendTracked = async (count: number) => {
    for (const p of await append(count)) ends[p.partition] = Math.max(ends[p.partition], p.offset + 1);
  };
  const committed = async (): Promise<number[]> => {
    const out: number[] = [];
    for (let p = 0; p < PARTITIONS; p++) out.push(await log.committed('engine', Topics.uplinks, p));
    return out;
  };
  return { tmp, log, directory, appendTracked, ends, committed };
}

test('retriable commit failures (broker restarting, coordinator moving) are retried; the pipeline keeps going', async () => {
  const w = await world('pipeline-commit-retry');
  const failures = [
    new FleetError('UNAVAILABLE', 'consumer engine is rejoining its group', { retriable: true }),
    new FleetError('TIMEOUT', 'commit timed out'),
    new FleetError('UNAVAILABLE', 'This is not the correct coordinator for this group', { retriable: true }),
  ];
  const attempts: CommitRequest[][] = [];
  const errors: FleetError[] = [];
  const sink = new ListSink();
  const pipeline = new UplinkPipeline({
    log: failingCommits(w.log, failures, attempts), rows: sink, directory: w.directory, clock: systemClock,
    group: 'engine', commitIntervalMs: 20, onError: (e) => errors.push(e),
  });
  await pipeline.start();
  try {
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
  } finally {
    await pipeline.stop();
    await w.log.close();
    w.tmp.remove();
  }
});

test('a commit refused for a partition no longer held (CONFLICT) drops that partition and commits the others', async () => {
  const w = await world('pipeline-commit-conflict');
  const failures = [new FleetError('CONFLICT', 'uplinks/1 is not assigned to this consumer of group engine', { detail: { topic: Topics.uplinks, partition: 1 } })];
  const attempts: CommitRequest[][] = [];
  const errors: FleetError[] = [];
  const sink = new ListSink();
  const pipeline = new UplinkPipeline({
    log: failingCommits(w.log, failures, attempts), rows: sink, directory: w.directory, clock: systemClock,
    group: 'engine', commitIntervalMs: 20, onError: (e) => errors.push(e),
  });
  await pipeline.start();
  try {
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
  } finally {
    await pipeline.stop();
    await w.log.close();
    w.tmp.remove();
  }
});

test('a commit failure that is not transient stops progress and is reported', async () => {
  const w = await world('pipeline-commit-fatal');
  const failures = [new FleetError('INTERNAL', 'offsets store is corrupt')];
  const errors: FleetError[] = [];
  const sink = new ListSink();
  const pipeline = new UplinkPipeline({
    log: failingCommits(w.log, failures, []), rows: sink, directory: w.directory, clock: systemClock,
    group: 'engine', commitIntervalMs: 20, onError: (e) => errors.push(e),
  });
  await pipeline.start();
  try {
    await w.appendTracked(30);
    await waitFor(() => errors.length === 1, 5000, 'the failure reported');
    assert.is(pipeline.failure?.code, 'INTERNAL');
    assert.equal(await w.committed(), [0, 0, 0], 'nothing committed');
  } finally {
    await pipeline.stop();
    await w.log.close();
    w.tmp.remove();
  }
});

test.run();
