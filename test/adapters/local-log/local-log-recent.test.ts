import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { LogRecord } from '../../../engine/ports/log.ts';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { RecentWrites } from '../../../adapters/local-log/RecentWrites.ts';
import type { Segment } from '../../../adapters/local-log/Segment.ts';
import { waitFor } from '../../contracts/log.contract.ts';

// RecentWrites only compares segments by identity.
const segmentA = {} as Segment;
const segmentB = {} as Segment;
const bytes = (text: string) => Buffer.from(text, 'latin1');
const read = (recent: RecentWrites, segment: Segment, position: number, length: number): string | number => {
  const target = Buffer.alloc(length + 2, '.');
  const n = recent.read(segment, target, 2, length, position);
  return n < 0 ? n : target.subarray(2, 2 + n).toString('latin1');
};

test('recent writes: reads from any held position, across writes, and never past what was written', () => {
  const recent = new RecentWrites(1024);
  recent.add(segmentA, 100, [bytes('abc'), bytes('defg')]);
  recent.add(segmentA, 107, [bytes('hij')]);
  assert.is(read(recent, segmentA, 100, 10), 'abcdefghij');
  assert.is(read(recent, segmentA, 102, 3), 'cde');
  assert.is(read(recent, segmentA, 105, 100), 'fghij', 'only what was written');
  assert.is(read(recent, segmentA, 109, 1), 'j');
  assert.is(read(recent, segmentA, 110, 5), -1, 'past the end');
  assert.is(read(recent, segmentA, 99, 5), -1, 'before the first held byte');
  assert.is(read(recent, segmentB, 100, 5), -1, 'another segment');
});

test('recent writes: the oldest writes are dropped beyond the limit; a new segment drops the old one', () => {
  const recent = new RecentWrites(8);
  recent.add(segmentA, 0, [bytes('0123')]);
  recent.add(segmentA, 4, [bytes('4567')]);
  recent.add(segmentA, 8, [bytes('89')]);
  assert.is(read(recent, segmentA, 0, 4), -1, 'dropped');
  assert.is(read(recent, segmentA, 4, 10), '456789');
  // a single write larger than the limit is still held until the next one
  recent.add(segmentA, 10, [bytes('x'.repeat(20))]);
  assert.is(read(recent, segmentA, 10, 30), 'x'.repeat(20));
  assert.is(read(recent, segmentA, 8, 2), -1);
  recent.add(segmentB, 0, [bytes('new')]);
  assert.is(read(recent, segmentA, 10, 5), -1);
  assert.is(read(recent, segmentB, 0, 5), 'new');
  for (let i = 0; i < 500; i++) recent.add(segmentB, 3 + i, [bytes('y')]);
  assert.is(read(recent, segmentB, 495, 100), 'yyyyyyyy', 'compacted as it goes, still exact');
  recent.clear();
  assert.is(read(recent, segmentB, 500, 1), -1);
  assert.is(read(new RecentWrites(0), segmentA, 0, 1), -1);
});

test('a consumer at the end reads new records from memory; one far behind reads the files; both get the same records', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-log-recent-'));
  // small segments: the tailing reader crosses many segment rolls
  const log = createLocalLog({ dir, segmentBytes: 8192 });
  try {
    await log.ensureTopics([{ name: 't', partitions: 2 }]);
    const tail: LogRecord[] = [];
    const follower = log.consumer({ group: 'follower', topics: ['t'], onBatch: async (batch) => { tail.push(...batch.records); } });
    await follower.start();
    const value = (i: number) => new TextEncoder().encode(`state ${i} ${'·'.repeat(i % 97)}`);
    const total = 3_000;
    for (let i = 0; i < total; i += 10) {
      await log.append('t', Array.from({ length: 10 }, (_, k) => ({ key: `device-${(i + k) % 7}`, value: value(i + k) })));
    }
    await waitFor(() => tail.length === total, 10_000, 'the follower read everything');
    const afterTail = log.stats();
    assert.ok(afterTail.readsFromMemory > 0, `reads from memory: ${afterTail.readsFromMemory}`);

    // a new group starts at the beginning: far behind the writes held in memory
    const replay: LogRecord[] = [];
    const late = log.consumer({ group: 'late', topics: ['t'], onBatch: async (batch) => { replay.push(...batch.records); } });
    await late.start();
    await waitFor(() => replay.length === total, 10_000, 'the late group read everything');
    assert.ok(log.stats().readsFromFile > afterTail.readsFromFile, 'the late group read segment files');

    const view = (records: LogRecord[]) => records
      .map((r) => `${r.partition}/${r.offset} ${r.key} ${Buffer.from(r.value).toString('hex')} ${r.timestamp}`)
      .sort();
    assert.equal(view(tail), view(replay));
    const texts = new Set(tail.map((r) => new TextDecoder().decode(r.value)));
    for (let i = 0; i < total; i++) assert.ok(texts.has(new TextDecoder().decode(value(i))), `record ${i}`);
    await Promise.all([follower.stop(), late.stop()]);
  } finally {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
