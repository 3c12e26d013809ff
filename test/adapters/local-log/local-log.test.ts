import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { isFleetError } from '../../../engine/kernel/errors.ts';
import type { LogRecord, RecordBatch, TopicPartition } from '../../../engine/ports/log.ts';
import { createLocalLog as openLocalLog, type LocalLog } from '../../../adapters/local-log/LocalLog.ts';
import type { ConsumerErrorContext, CorruptionReport, LocalLogOptions } from '../../../adapters/local-log/LocalLogOptions.ts';
import { FRAME_OVERHEAD, SEGMENT_HEADER_BYTES } from '../../../adapters/local-log/recordFrame.ts';
import { Segment, segmentFileName } from '../../../adapters/local-log/Segment.ts';
import { logContract, rejectsWith, waitFor } from '../../contracts/log.contract.ts';

const dirs: string[] = [];
const opened: LocalLog[] = [];
/** Every log a test opens is closed after it, pass or fail. */
function createLocalLog(options: LocalLogOptions): LocalLog {
  const log = openLocalLog(options);
  opened.push(log);
  return log;
}
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-log-'));
  dirs.push(dir);
  return dir;
}

logContract('local-log', async () => {
  const dir = tempDir();
  // small segments, so the contract also reads across segment boundaries
  let log: LocalLog = createLocalLog({ dir, segmentBytes: 4096 });
  return {
    get log() { return log; },
    async cleanup() {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
    async reopen() {
      await log.close();
      log = createLocalLog({ dir, segmentBytes: 4096 });
      return log;
    },
  };
}).run();

const test = suite('local-log adapter');
const T = 'readings';

test.after.each(async () => {
  await Promise.all(opened.splice(0).map((log) => log.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function segmentFiles(dir: string, topic = T, partition = 0): string[] {
  const pdir = join(dir, 'topics', topic, String(partition));
  return readdirSync(pdir).filter((n) => n.endsWith('.seg')).sort().map((n) => join(pdir, n));
}

function value(i: number): Buffer {
  return Buffer.from(`value-${String(i).padStart(4, '0')}`);
}

/** Frame size of the records the tests write: key "k" and value(i). */
const FRAME = FRAME_OVERHEAD + 1 + value(0).length;

/** Appends the records of values 0…count-1 (key k) to T in one call. */
function appendValues(log: LocalLog, count: number) {
  return log.append(T, Array.from({ length: count }, (_, i) => ({ key: 'k', value: value(i) })));
}

/** A log in a fresh directory with segments of 1 KiB, holding values 0…count-1 appended in one call. */
async function inSmallSegments(count: number): Promise<{ dir: string; log: LocalLog }> {
  const dir = tempDir();
  const log = await filled(dir, 0, { segmentBytes: 1024 });
  await appendValues(log, count);
  return { dir, log };
}

async function filled(dir: string, count: number, options: Partial<LocalLogOptions> = {}, partitions = 1): Promise<LocalLog> {
  const log = createLocalLog({ dir, ...options });
  await log.ensureTopics([{ name: T, partitions }]);
  for (let i = 0; i < count; i++) await log.append(T, [{ key: 'k', value: value(i) }]);
  return log;
}

/** Everything a fresh consumer group reads from the topic, once it has seen `expected` records. */
async function readAll(log: LocalLog, expected: number, topic = T): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  const consumer = log.consumer({ group: `reader-${Math.random()}`, topics: [topic], onBatch: async (b) => { records.push(...b.records); } });
  await consumer.start();
  await waitFor(() => records.length >= expected, 5000, `${expected} records`);
  await consumer.stop();
  return records.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}

function reopen(dir: string, reports: CorruptionReport[], options: Partial<LocalLogOptions> = {}): LocalLog {
  return createLocalLog({ dir, onCorruption: (r) => reports.push(r), ...options });
}

test('a truncated tail record is cut on open and its offset reused', async () => {
  const dir = tempDir();
  await (await filled(dir, 10)).close();
  const [file] = segmentFiles(dir);
  const good = SEGMENT_HEADER_BYTES + 9 * FRAME;
  truncateSync(file, statSync(file).size - 5);
  const reports: CorruptionReport[] = [];
  const log = reopen(dir, reports);
  assert.equal(reports, [{ topic: T, partition: 0, file, position: good, offset: 9, reason: 'truncated', action: 'cut', bytesCut: FRAME - 5 }]);
  assert.is(statSync(file).size, good);
  assert.equal((await readAll(log, 9)).map((r) => r.offset), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
  assert.equal(await log.append(T, [{ key: 'k', value: value(9) }]), [{ partition: 0, offset: 9 }]);
  await log.close();
  const again: CorruptionReport[] = [];
  const clean = reopen(dir, again);
  assert.equal(again, []);
  assert.is(log.stats().corruptions, 1);
  assert.is((await readAll(clean, 10)).length, 10);
  await clean.close();
});

test('garbage after the last record (garbled or zero-filled) is cut; every record survives', async () => {
  for (const garbage of [Buffer.alloc(37, 0xab), Buffer.alloc(64, 0), Buffer.from([20, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24])]) {
    const dir = tempDir();
    await (await filled(dir, 10)).close();
    const [file] = segmentFiles(dir);
    const size = statSync(file).size;
    appendFileSync(file, garbage);
    const reports: CorruptionReport[] = [];
    const log = reopen(dir, reports);
    assert.is(reports.length, 1);
    assert.is(reports[0].position, size);
    assert.is(reports[0].offset, 10);
    assert.is(reports[0].bytesCut, garbage.length);
    assert.ok(['length', 'checksum', 'truncated'].includes(reports[0].reason), reports[0].reason);
    assert.is(statSync(file).size, size);
    const records = await readAll(log, 10);
    assert.equal(records.map((r) => Buffer.from(r.value).toString()), Array.from({ length: 10 }, (_, i) => value(i).toString()));
    await log.close();
  }
});

test('a flipped byte in a middle record of the tail segment: cut at that record, later records dropped', async () => {
  const dir = tempDir();
  await (await filled(dir, 10)).close();
  const [file] = segmentFiles(dir);
  const bytes = readFileSync(file);
  const fourth = SEGMENT_HEADER_BYTES + 4 * FRAME;
  bytes[fourth + FRAME - 2] ^= 0x01; // inside the value of record 4
  writeFileSync(file, bytes);
  const reports: CorruptionReport[] = [];
  const log = reopen(dir, reports);
  assert.equal(reports.map((r) => [r.reason, r.offset, r.position, r.bytesCut]), [['checksum', 4, fourth, 6 * FRAME]]);
  assert.equal((await readAll(log, 4)).map((r) => r.offset), [0, 1, 2, 3]);
  assert.equal(await log.append(T, [{ key: 'k', value: value(4) }]), [{ partition: 0, offset: 4 }]);
  await log.close();
});

test('a segment file whose header never reached the disk is reset; a foreign file refuses to open', async () => {
  const dir = tempDir();
  await (await filled(dir, 3)).close();
  const torn = join(dir, 'topics', T, '0', `${String(3).padStart(20, '0')}.seg`);
  writeFileSync(torn, Buffer.from('FSL')); // crash while creating the next segment
  const reports: CorruptionReport[] = [];
  let log = reopen(dir, reports);
  assert.equal(reports.map((r) => [r.reason, r.offset, r.bytesCut]), [['header', 3, 3]]);
  assert.equal(await log.append(T, [{ key: 'k', value: value(3) }]), [{ partition: 0, offset: 3 }]);
  assert.is((await readAll(log, 4)).length, 4);
  await log.close();
  writeFileSync(torn, Buffer.from('NOTALOGFILE-----'));
  await rejectsWith(() => reopen(dir, []), 'CORRUPT_LOG');
  rmSync(torn);
  log = reopen(dir, reports); // the failed open released the dir lock
  await log.close();
});

test('damage in an older segment halts delivery of that partition and is reported', async () => {
  const dir = tempDir();
  await (await filled(dir, 60, { segmentBytes: 1024 })).close();
  const files = segmentFiles(dir);
  assert.ok(files.length >= 3, `${files.length} segments`);
  const bytes = readFileSync(files[0]);
  bytes[SEGMENT_HEADER_BYTES + 2 * FRAME + 12] ^= 0xff; // inside record 2's offset field
  writeFileSync(files[0], bytes);
  const reports: CorruptionReport[] = [];
  const errors: ConsumerErrorContext[] = [];
  const log = reopen(dir, reports, { onConsumerError: (_e, context) => errors.push(context) });
  assert.equal(reports, [], 'older segments are not scanned on open');
  const records: LogRecord[] = [];
  const consumer = log.consumer({ group: 'g', topics: [T], onBatch: async (b) => { records.push(...b.records); } });
  await consumer.start();
  await waitFor(() => errors.length > 0, 5000, 'read error');
  assert.equal(records.map((r) => r.offset), [0, 1]);
  assert.equal(reports.map((r) => [r.reason, r.action, r.offset, r.file]), [['checksum', 'halted', 2, files[0]]]);
  assert.equal(errors, [{ group: 'g', topic: T, partition: 0, stage: 'read' }]);
  await consumer.stop();
  await log.close();
});

test('bad topics.json and bad group offset files refuse to open with CORRUPT_LOG', async () => {
  const dir = tempDir();
  const log = await filled(dir, 1);
  const consumer = log.consumer({ group: 'g', topics: [T], onBatch: async (b) => { await consumer.commit([{ topic: T, partition: 0, offset: b.records[0].offset + 1 }]); } });
  await consumer.start();
  await waitFor(async () => (await log.committed('g', T, 0)) === 1, 5000, 'commit');
  await log.close();
  const topics = join(dir, 'topics.json');
  const original = readFileSync(topics);
  for (const bad of ['{', '{"version":2,"topics":{}}', '{"version":1,"topics":{"readings":{"partitions":0}}}', '{"version":1,"topics":{"a/b":{"partitions":1}}}']) {
    writeFileSync(topics, bad);
    await rejectsWith(() => createLocalLog({ dir }), 'CORRUPT_LOG');
  }
  writeFileSync(topics, original);
  const [groupFile] = readdirSync(join(dir, 'groups'));
  const groupPath = join(dir, 'groups', groupFile);
  const good = readFileSync(groupPath);
  for (const bad of ['null', '{"version":1,"group":"g","offsets":{"readings":{"0":-4}}}', '{"version":1,"group":"other","offsets":{}}', '{"version":1,"group":"g","offsets":{"readings":{"x":1}}}']) {
    writeFileSync(groupPath, bad);
    await rejectsWith(() => createLocalLog({ dir }), 'CORRUPT_LOG');
  }
  writeFileSync(groupPath, good);
  writeFileSync(`${groupPath}.tmp`, 'half-written'); // a rewrite that crashed before its rename
  const reopened = createLocalLog({ dir });
  assert.is(await reopened.committed('g', T, 0), 1);
  assert.not.ok(readdirSync(join(dir, 'groups')).some((n) => n.endsWith('.tmp')));
  await reopened.close();
});

test('group commit: concurrent appends share fsyncs; sequential appends get one each', async () => {
  const dir = tempDir();
  const log = await filled(dir, 0);
  const positions = await Promise.all(Array.from({ length: 500 }, (_, i) => log.append(T, [{ key: 'k', value: value(i) }])));
  assert.equal(positions.map(([p]) => p.offset), Array.from({ length: 500 }, (_, i) => i));
  const concurrent = log.stats();
  assert.ok(concurrent.fsyncs <= 10, `${concurrent.fsyncs} fsyncs for 500 concurrent appends`);
  assert.is(concurrent.flushes, concurrent.fsyncs);
  for (let i = 0; i < 20; i++) await log.append(T, [{ key: 'k', value: value(i) }]);
  assert.is(log.stats().fsyncs - concurrent.fsyncs, 20);
  await appendValues(log, 1000);
  assert.is(log.stats().fsyncs - concurrent.fsyncs, 21);
  assert.is(log.stats().appendedRecords, 1520);
  await log.close();
});

test('groupCommitMs lingers on the injected clock; nothing is visible to consumers before the fsync', async () => {
  const clock = new SimulatedClock(1_000_000);
  const dir = tempDir();
  const log = createLocalLog({ dir, clock, groupCommitMs: 50 });
  await log.ensureTopics([{ name: T, partitions: 1 }]);
  const seen: LogRecord[] = [];
  const consumer = log.consumer({ group: 'g', topics: [T], onBatch: async (b) => { seen.push(...b.records); } });
  await consumer.start();
  let done = 0;
  const appends = [0, 1, 2].map((i) => log.append(T, [{ key: 'k', value: value(i) }]).then(() => { done++; }));
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.is(done, 0, 'not durable before the linger ends');
  assert.is(log.stats().fsyncs, 0);
  assert.is(seen.length, 0, 'records not yet durable are not delivered');
  clock.advance(50);
  await Promise.all(appends);
  assert.is(log.stats().fsyncs, 1, 'one fsync for the three appends');
  await waitFor(() => seen.length === 3, 5000, 'delivery after the fsync');
  assert.is(seen[0].timestamp, 1_000_000, 'append time comes from the injected clock');
  await log.close();
});

test('retention deletes segments every committed group has consumed, and only those', async () => {
  const { dir, log } = await inSmallSegments(200);
  const before = segmentFiles(dir).length;
  assert.ok(before >= 8, `${before} segments`);
  const perSegment = Math.floor((1024 - SEGMENT_HEADER_BYTES) / FRAME);
  const commitTo = async (group: string, offset: number): Promise<void> => {
    let assigned = false;
    const consumer = log.consumer({ group, topics: [T], onBatch: async () => undefined, onAssign: () => { assigned = true; } });
    await consumer.start();
    await waitFor(() => assigned, 5000, 'assignment');
    await consumer.commit([{ topic: T, partition: 0, offset }]);
    await consumer.stop();
  };
  await commitTo('slow', 3 * perSegment + 1);
  await commitTo('fast', 150);
  const slowFloor = (): boolean => segmentFiles(dir).length === before - 3;
  await waitFor(slowFloor, 5000, 'segments below the slow group deleted');
  assert.is(Number(segmentFiles(dir)[0].slice(-24, -4)), 3 * perSegment);
  await commitTo('slow', 200);
  const deleted = Math.floor(150 / perSegment);
  await waitFor(() => segmentFiles(dir).length === before - deleted && log.stats().segmentsDeleted === deleted, 5000, 'segments below the fast group deleted');
  // a group that never committed starts at the oldest record still on disk
  const fresh = await readAll(log, 200 - Math.floor(150 / perSegment) * perSegment);
  assert.is(fresh[0].offset, Math.floor(150 / perSegment) * perSegment);
  await log.close();
});

test('a segment deleted while a read opens it: the read may fail, the delete completes, and a read that failed opens again', async () => {
  const dir = tempDir();
  const bytes = Buffer.from('0123456789');
  // Retention deleting a segment that a consumer is about to read (once seen under load): the
  // unlink can win the race with the read's open, and the delete then has a failed open to close.
  for (let i = 0; i < 20; i++) {
    writeFileSync(join(dir, segmentFileName(i)), bytes);
    const segment = new Segment(dir, i, bytes.length, false);
    const deleting = segment.delete();
    const reading = segment.read(Buffer.alloc(bytes.length), 0, bytes.length, 0).then(
      (n) => n,
      (error: NodeJS.ErrnoException) => error.code,
    );
    await deleting;
    const read = await reading;
    assert.ok(read === bytes.length || read === 'ENOENT', String(read));
    assert.not.ok(readdirSync(dir).includes(segmentFileName(i)));
  }
  // An open that failed is not kept: once the file is back, the next read opens it.
  const file = join(dir, segmentFileName(100));
  const segment = new Segment(dir, 100, bytes.length, false);
  const target = Buffer.alloc(bytes.length);
  const missing = await segment.read(target, 0, bytes.length, 0).then(() => 'read', (error: NodeJS.ErrnoException) => error.code);
  assert.is(missing, 'ENOENT');
  writeFileSync(file, bytes);
  assert.is(await segment.read(target, 0, bytes.length, 0), bytes.length);
  assert.equal(target, bytes);
  await segment.close();
});

test('uncommitted topics keep their segments unless retainUncommittedSegments is false', async () => {
  const { dir, log: keep } = await inSmallSegments(100);
  const count = segmentFiles(dir).length;
  assert.ok(count >= 4);
  await keep.close();
  const drop = createLocalLog({ dir, segmentBytes: 1024, retainUncommittedSegments: false });
  await waitFor(() => segmentFiles(dir).length === 1, 5000, 'only the active segment left');
  await appendValues(drop, 100);
  await waitFor(() => segmentFiles(dir).length === 1, 5000, 'rolled segments dropped');
  assert.equal(await drop.append(T, [{ key: 'k', value: value(0) }]), [{ partition: 0, offset: 200 }]);
  await drop.close();
});

test('a second open of the same dir fails clearly, in this process and from another one', async () => {
  const dir = tempDir();
  const log = createLocalLog({ dir });
  await rejectsWith(() => createLocalLog({ dir }), 'CONFLICT');
  await log.close();
  const child = spawn(process.execPath, ['--input-type=module', '-e', `
    import { createLocalLog } from ${JSON.stringify(new URL('../../../adapters/local-log/LocalLog.ts', import.meta.url).href)};
    createLocalLog({ dir: ${JSON.stringify(dir)} });
    console.log('open');
    setInterval(() => undefined, 1000);
  `], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => { if (d.toString().includes('open')) resolve(); });
      child.on('exit', (code) => reject(new Error(`child exited with ${code}`)));
    });
    let error: unknown;
    try { createLocalLog({ dir }); } catch (e) { error = e; }
    assert.ok(isFleetError(error) && error.code === 'CONFLICT');
    assert.match((error as Error).message, `in use by process ${child.pid}`);
  } finally {
    child.kill('SIGKILL');
  }
  await new Promise((resolve) => child.once('exit', resolve));
  // the killed process left its LOCK behind: a dead owner's lock is taken over
  const after = createLocalLog({ dir });
  await after.close();
});

test('close writes what is queued, stops consumers through onRevoke, then refuses calls', async () => {
  const dir = tempDir();
  const log = await filled(dir, 0, { groupCommitMs: 10_000 });
  const revoked: TopicPartition[] = [];
  const consumer = log.consumer({ group: 'g', topics: [T], onBatch: async () => undefined, onRevoke: async (p) => { revoked.push(...p); await consumer.commit([{ topic: T, partition: 0, offset: 0 }]); } });
  await consumer.start();
  const pending = log.append(T, [{ key: 'k', value: value(0) }]);
  await log.close();
  assert.equal(await pending, [{ partition: 0, offset: 0 }]);
  assert.equal(revoked, [{ topic: T, partition: 0 }]);
  await rejectsWith(() => log.append(T, [{ key: 'k', value: value(1) }]), 'CLOSED');
  await rejectsWith(() => log.ensureTopics([{ name: 'other', partitions: 1 }]), 'CLOSED');
  await rejectsWith(() => log.consumer({ group: 'g', topics: [T], onBatch: async () => undefined }), 'CLOSED');
  await log.close();
  const reopened = createLocalLog({ dir });
  assert.is((await readAll(reopened, 1)).length, 1);
  await reopened.close();
});

test('a rejected onBatch is delivered again after the backoff, on the injected clock', async () => {
  const clock = new SimulatedClock();
  const dir = tempDir();
  const errors: unknown[] = [];
  const log = createLocalLog({ dir, clock, redeliveryBackoffMs: 1000, onConsumerError: (e) => errors.push(e) });
  await log.ensureTopics([{ name: T, partitions: 1 }]);
  await log.append(T, [{ key: 'k', value: value(0) }, { key: 'k', value: value(1) }]);
  const batches: RecordBatch[] = [];
  const consumer = log.consumer({ group: 'g', topics: [T], onBatch: async (b) => { batches.push(b); if (batches.length === 1) throw new Error('store down'); } });
  await consumer.start();
  await waitFor(() => errors.length === 1, 5000, 'the failure report');
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.is(batches.length, 1, 'no redelivery before the backoff');
  clock.advance(1000);
  await waitFor(() => batches.length === 2, 5000, 'redelivery');
  assert.equal(batches[1].records.map((r) => r.offset), [0, 1]);
  await log.close();
});

test('bad options, oversized records, commits of foreign partitions and past the end are refused', async () => {
  await rejectsWith(() => createLocalLog({ dir: '' }), 'VALIDATION_FAILED');
  await rejectsWith(() => createLocalLog({ dir: tempDir(), segmentBytes: 10 }), 'VALIDATION_FAILED');
  await rejectsWith(() => createLocalLog({ dir: tempDir(), groupCommitMs: -1 }), 'VALIDATION_FAILED');
  await rejectsWith(() => createLocalLog({ dir: tempDir(), inlineWriteMaxMicros: -1 }), 'VALIDATION_FAILED');
  await rejectsWith(() => createLocalLog({ dir: tempDir(), inlineWriteMaxMicros: 0.5 }), 'VALIDATION_FAILED');
  await rejectsWith(() => createLocalLog({ dir: tempDir(), retainUncommittedSegments: 'no' as unknown as boolean }), 'VALIDATION_FAILED');
  const dir = tempDir();
  const log = await filled(dir, 3, { maxRecordBytes: 100 }, 2);
  await rejectsWith(() => log.append(T, [{ key: 'k', value: Buffer.alloc(100) }]), 'PAYLOAD_TOO_LARGE');
  await rejectsWith(() => log.consumer({ group: '', topics: [T], onBatch: async () => undefined }), 'VALIDATION_FAILED');
  await rejectsWith(() => log.consumer({ group: 'g', topics: [T], onBatch: async () => undefined, maxBatchRecords: 0 }), 'VALIDATION_FAILED');
  await rejectsWith(() => log.consumer({ group: 'g', topics: ['nope'], onBatch: async () => undefined }).start(), 'NOT_FOUND');
  const owned: TopicPartition[] = [];
  const one = log.consumer({ group: 'g', topics: [T], onBatch: async () => undefined, onAssign: (p) => owned.push(...p) });
  const two = log.consumer({ group: 'g', topics: [T], onBatch: async () => undefined });
  await one.start();
  await two.start();
  assert.equal(owned, [{ topic: T, partition: 0 }, { topic: T, partition: 1 }]);
  await rejectsWith(() => one.commit([{ topic: T, partition: 1, offset: 0 }]), 'CONFLICT');
  const partition = (await log.append(T, [{ key: 'k', value: value(0) }]))[0].partition;
  const owner = partition === 0 ? one : two;
  await rejectsWith(() => owner.commit([{ topic: T, partition, offset: 5 }]), 'VALIDATION_FAILED');
  await owner.commit([{ topic: T, partition, offset: 4 }]);
  assert.throws(() => one.pause([{ topic: 'other', partition: 0 }]), (e: unknown) => isFleetError(e) && e.code === 'VALIDATION_FAILED');
  await log.close();
});

test('a commit past a tail that was cut on open is lowered to the new end', async () => {
  const dir = tempDir();
  const log = await filled(dir, 10);
  let assigned = false;
  const consumer = log.consumer({ group: 'g', topics: [T], onBatch: async () => undefined, onAssign: () => { assigned = true; } });
  await consumer.start();
  await waitFor(() => assigned, 5000, 'assignment');
  await consumer.commit([{ topic: T, partition: 0, offset: 10 }]);
  await log.close();
  const [file] = segmentFiles(dir);
  truncateSync(file, statSync(file).size - 2 * FRAME - 1);
  const reopened = reopen(dir, []);
  assert.is(await reopened.committed('g', T, 0), 7);
  assert.equal(await reopened.append(T, [{ key: 'k', value: value(70) }]), [{ partition: 0, offset: 7 }]);
  const seen: LogRecord[] = [];
  const again = reopened.consumer({ group: 'g', topics: [T], onBatch: async (b) => { seen.push(...b.records); } });
  await again.start();
  await waitFor(() => seen.length === 1, 5000, 'the record appended after the cut');
  assert.is(Buffer.from(seen[0].value).toString(), value(70).toString());
  await reopened.close();
});

test('reading through many sealed segments does not keep a descriptor per segment', async () => {
  const dir = tempDir();
  const openFds = (): number => readdirSync('/proc/self/fd').length;
  const before = openFds();
  let log = await filled(dir, 0, { segmentBytes: 1024 });
  await appendValues(log, 2000);
  const segments = segmentFiles(dir).length;
  assert.ok(segments > 50, `${segments} segments`);
  assert.ok(openFds() - before < 10, `${openFds() - before} more descriptors after writing ${segments} segments`);
  await log.close();
  log = createLocalLog({ dir, segmentBytes: 1024 });
  assert.is((await readAll(log, 2000)).length, 2000);
  assert.is((await readAll(log, 2000)).length, 2000);
  assert.ok(openFds() - before < 10, `${openFds() - before} more descriptors after reading ${segments} segments twice`);
  await log.close();
});

test('large records, big segments and resuming mid-segment through the sparse index', async () => {
  const dir = tempDir();
  const log = createLocalLog({ dir, readChunkBytes: 4096, segmentBytes: 64 * 1024 });
  await log.ensureTopics([{ name: T, partitions: 1 }]);
  const big = Buffer.alloc(200_000, 7); // bigger than a read chunk and than a segment
  await log.append(T, [{ key: 'k', value: value(0) }, { key: 'big', value: big }, { key: 'k', value: value(2) }]);
  await log.append(T, Array.from({ length: 20_000 }, (_, i) => ({ key: 'k', value: value(i + 3) })));
  const records = await readAll(log, 20_003);
  assert.ok(Buffer.from(records[1].value).equals(big));
  assert.equal(records.map((r) => r.offset), Array.from({ length: 20_003 }, (_, i) => i));
  await log.close();
  const reopened = createLocalLog({ dir, readChunkBytes: 4096, segmentBytes: 64 * 1024 });
  const seen: LogRecord[] = [];
  let resume: ((offset: number) => Promise<void>) | undefined;
  const first = reopened.consumer({ group: 'g', topics: [T], onBatch: async () => undefined, onAssign: () => { resume = async (offset) => first.commit([{ topic: T, partition: 0, offset }]); } });
  await first.start();
  await waitFor(() => resume !== undefined, 5000, 'assignment');
  await resume!(15_001);
  await first.stop();
  const second = reopened.consumer({ group: 'g', topics: [T], onBatch: async (b) => { seen.push(...b.records); } });
  await second.start();
  await waitFor(() => seen.length === 5002, 5000, 'records from 15001 on');
  assert.is(seen[0].offset, 15_001);
  assert.is(Buffer.from(seen[0].value).toString(), value(15_001).toString());
  await reopened.close();
});

test.run();
