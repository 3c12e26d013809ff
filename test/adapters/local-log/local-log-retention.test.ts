/**
 * The local log's startOffsets and deleteGroup against its retention: the oldest record kept moves
 * up as consumed segments are deleted, a group's commits hold segments back until the group is
 * deleted, and a group with a member cannot be deleted (CONFLICT). A topic with `retentionMs`
 * loses its sealed segments older than that whether read or not, and a group left behind goes on
 * from the oldest record kept.
 */
import { mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createLocalLog, type LocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { rejectsWith, waitFor } from '../../contracts/log.contract.ts';

const test = suite('local-log: startOffsets and deleteGroup under retention');
const T = 'events';

let dir = '';
let log: LocalLog;

test.before.each(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetstream-log-'));
  // 1 KiB segments: 200 small records roll several of them
  log = createLocalLog({ dir, segmentBytes: 1024 });
  await log.ensureTopics([{ name: T, partitions: 1 }]);
  await log.append(T, Array.from({ length: 200 }, (_, i) => ({ key: 'k', value: Buffer.from(`value-${String(i).padStart(4, '0')}`) })));
});

test.after.each(async () => {
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

const segments = (): number[] => readdirSync(join(dir, 'topics', T, '0')).filter((n) => n.endsWith('.seg')).map((n) => Number(n.slice(0, -4))).sort((a, b) => a - b);

/** Commits `offset` for `group` with a member that then leaves. */
async function commitTo(group: string, offset: number): Promise<void> {
  let assigned = false;
  const consumer = log.consumer({ group, topics: [T], onBatch: async () => undefined, onAssign: () => { assigned = true; } });
  await consumer.start();
  await waitFor(() => assigned, 5000, 'assignment');
  await consumer.commit([{ topic: T, partition: 0, offset }]);
  await consumer.stop();
}

test('startOffsets follows retention; a deleted group no longer holds segments back', async () => {
  assert.ok(segments().length >= 4, `${segments().length} segments`);
  assert.equal(await log.startOffsets(T), [0], 'nothing committed: everything kept');
  await commitTo('slow', 1);
  await commitTo('fast', 190);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(await log.startOffsets(T), [0], 'the slow group pins the first segment');
  assert.is(segments()[0], 0);
  await log.deleteGroup('slow');
  const floor = segments().findLast((base) => base <= 190)!;
  assert.ok(floor > 0, `a segment starts at ${floor}`);
  await waitFor(async () => (await log.startOffsets(T))[0] === floor, 5000, 'segments below the fast group deleted');
  assert.is(segments()[0], floor, 'the oldest segment on disk is the start');
  assert.is(await log.committed('slow', T, 0), 0);
  assert.is(await log.committed('fast', T, 0), 190);
});

test('a group with a member is not deleted (CONFLICT); once it left, it is', async () => {
  const consumer = log.consumer({ group: 'live', topics: [T], onBatch: async () => undefined });
  await consumer.start();
  await consumer.commit([{ topic: T, partition: 0, offset: 10 }]);
  await rejectsWith(() => log.deleteGroup('live'), 'CONFLICT');
  assert.is(await log.committed('live', T, 0), 10, 'its commits are kept');
  await consumer.stop();
  await log.deleteGroup('live');
  assert.is(await log.committed('live', T, 0), 0);
});

test('retentionMs: sealed segments written before it are deleted though a group has not read them; the group goes on from the oldest kept', async () => {
  const before = segments();
  assert.ok(before.length >= 4);
  await commitTo('behind', 1);
  // The first two segments were last written two hours ago; the rest just now.
  const old = (Date.now() - 2 * 3_600_000) / 1000;
  for (const base of before.slice(0, 2)) utimesSync(join(dir, 'topics', T, '0', `${String(base).padStart(20, '0')}.seg`), old, old);
  await log.ensureTopics([{ name: T, partitions: 1, retentionMs: 3_600_000 }]);
  await waitFor(async () => (await log.startOffsets(T))[0] === before[2], 5000, 'the two old segments deleted');
  assert.equal(segments(), before.slice(2), 'only those; the group that had not read them held nothing back');
  assert.is(await log.committed('behind', T, 0), 1, 'its commit is kept: it tells what it missed');
  const seen: number[] = [];
  const consumer = log.consumer({ group: 'behind', topics: [T], onBatch: async (batch) => { for (const r of batch.records) seen.push(r.offset); } });
  await consumer.start();
  await waitFor(() => seen.includes(199), 5000, 'read to the end');
  await consumer.stop();
  assert.is(seen[0], before[2], 'from the oldest record kept');
  assert.equal(seen, Array.from({ length: 200 - before[2] }, (_, i) => before[2] + i), 'each once, in order');
  await rejectsWith(() => log.ensureTopics([{ name: T, partitions: 1, retentionMs: 0 }]), 'VALIDATION_FAILED');
  await rejectsWith(() => log.ensureTopics([{ name: T, partitions: 1, retentionMs: 1.5 }]), 'VALIDATION_FAILED');
});

test.run();
