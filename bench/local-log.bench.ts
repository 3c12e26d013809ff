/**
 * Local log throughput (records/s, 100-byte values, 4 partitions). Not part of the test suite.
 *
 *   npx node bench/local-log.bench.ts
 *
 * Baseline measured in the same run: one producer appending one record per call and awaiting each
 * (every append pays its own write + fdatasync: no group commit possible). The other append cases
 * show what group commit (many producers in flight) and caller batching buy against it; the
 * consume cases read what was appended, through fresh consumer groups.
 *
 * Then the latency of one append to an idle log (a command, a lone uplink): its round written in the
 * loop's thread (the default) against the same through the thread pool (inlineWriteMaxMicros 0), two
 * logs appended to in turn, 200 appends each per turn, five turns; p50 and p99 of each.
 */
import b from 'benny';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import type { LocalLogStats } from '../adapters/local-log/LocalLogStats.ts';
import type { ProducerRecord } from '../engine/ports/log.ts';

const dir = mkdtempSync(join(tmpdir(), 'fleetstream-log-bench-'));
const log = createLocalLog({ dir });
const PARTITIONS = 4;
const CONSUME_RECORDS = 200_000;
await log.ensureTopics([{ name: 'appends', partitions: PARTITIONS }, { name: 'backlog', partitions: PARTITIONS }, { name: 'live', partitions: PARTITIONS }]);

const value = Buffer.alloc(100, 0x5a);
let seq = 0;
function records(n: number): ProducerRecord[] {
  return Array.from({ length: n }, () => ({ key: `device-${seq++ % 1000}`, value }));
}

// A backlog for the consume cases, written in big batches.
for (let i = 0; i < CONSUME_RECORDS; i += 10_000) await log.append('backlog', records(10_000));

let groupSeq = 0;
async function consumeBacklog(): Promise<void> {
  let received = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => { done = resolve; });
  const consumer = log.consumer({
    group: `bench-${groupSeq++}`, topics: ['backlog'],
    onBatch: async (batch) => { received += batch.records.length; if (received === CONSUME_RECORDS) done(); },
  });
  await consumer.start();
  await finished;
  await consumer.stop();
}

// End to end: a consumer stays subscribed to `live`; each op appends and waits until it got them.
let liveReceived = 0;
let liveWaiter: { target: number; resolve(): void } | undefined;
const live = log.consumer({
  group: 'live', topics: ['live'],
  onBatch: async (batch) => {
    liveReceived += batch.records.length;
    if (liveWaiter && liveReceived >= liveWaiter.target) liveWaiter.resolve();
  },
});
await live.start();

/** Per case: the stats when its first timed op ran and after its last, to count its fsyncs. */
const perCase = new Map<string, { before: LocalLogStats; after: LocalLogStats }>();
let current: string | undefined;

const BASELINE = 'append 1 record/call, 1 producer awaiting each (baseline)';
const recordsPerOp = new Map<string, number>();
function add(name: string, perOp: number, op: () => Promise<void>) {
  recordsPerOp.set(name, perOp);
  return b.add(name, async () => {
    if (current !== name) {
      if (current) perCase.get(current)!.after = log.stats();
      current = name;
      perCase.set(name, { before: log.stats(), after: log.stats() });
    }
    await op();
  });
}

/** `producers` concurrent loops, each making `calls` appends of `size` records, one after the other. */
async function producers(topic: string, count: number, calls: number, size: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, async () => {
    for (let i = 0; i < calls; i++) await log.append(topic, records(size));
  }));
}

const summary = await b.suite(
  'local log, 100-byte records, 4 partitions, fdatasync per write',
  b.configure({ cases: { maxTime: 3, minSamples: 5 } }),
  add(BASELINE, 50, () => producers('appends', 1, 50, 1)),
  add('append 1 record/call, 64 producers in flight (group commit)', 256, () => producers('appends', 64, 4, 1)),
  add('append 1 record/call, 1000 producers in flight (group commit)', 2000, () => producers('appends', 1000, 2, 1)),
  add('append 1000 records/call, 1 producer', 5000, () => producers('appends', 1, 5, 1000)),
  add('append 1000 records/call, 8 producers in flight', 16_000, () => producers('appends', 8, 2, 1000)),
  add(`consume ${CONSUME_RECORDS / 1000}k backlog, fresh group, batches of 1000`, CONSUME_RECORDS, consumeBacklog),
  add('append 10 × 1000 records in flight + live consumer receives them', 10_000, async () => {
    const target = liveReceived + 10_000;
    const received = new Promise<void>((resolve) => { liveWaiter = { target, resolve }; });
    await Promise.all(Array.from({ length: 10 }, () => log.append('live', records(1000))));
    await received;
  }),
);
perCase.get(current!)!.after = log.stats();
await live.stop();
await log.close();
rmSync(dir, { recursive: true, force: true });

// One append at a time to an idle log, in the loop's thread against through the thread pool.
const idleDirs = [mkdtempSync(join(tmpdir(), 'fleetstream-log-bench-inline-')), mkdtempSync(join(tmpdir(), 'fleetstream-log-bench-pool-'))];
const idleLogs = [createLocalLog({ dir: idleDirs[0] }), createLocalLog({ dir: idleDirs[1], inlineWriteMaxMicros: 0 })];
const idleLatencies: number[][] = [[], []];
for (const l of idleLogs) {
  await l.ensureTopics([{ name: 'idle', partitions: 1 }]);
  await l.append('idle', records(1)); // the segment's first record is synced in the segment itself
}
for (let turn = 0; turn < 5; turn++) {
  for (let which = 0; which < 2; which++) {
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      await idleLogs[which].append('idle', records(1));
      idleLatencies[which].push(performance.now() - started);
    }
  }
}
const inlineWrites = idleLogs.map((l) => l.stats().inlineWrites);
for (const l of idleLogs) await l.close();
for (const d of idleDirs) rmSync(d, { recursive: true, force: true });

const rate = new Map(summary.results.map((r) => [r.name, r.ops * recordsPerOp.get(r.name)!]));
const baseline = rate.get(BASELINE)!;
console.log('\nrecords/s, ratio to the baseline (same run), fdatasyncs per 1000 records appended:');
for (const r of summary.results) {
  const c = perCase.get(r.name)!;
  const fsyncs = c.after.fsyncs - c.before.fsyncs;
  const appended = c.after.appendedRecords - c.before.appendedRecords;
  const perThousand = appended > 0 ? (fsyncs * 1000 / appended).toFixed(1).padStart(7) : '      -';
  console.log(`  ${r.name.padEnd(64)} ${Math.round(rate.get(r.name)!).toLocaleString('en-US').padStart(11)} rec/s ±${r.margin.toFixed(1).padStart(4)}%  ${(rate.get(r.name)! / baseline).toFixed(1).padStart(7)}×  ${perThousand} fsync/1k`);
}

const quantile = (values: number[], q: number) => [...values].sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor(values.length * q))];
const [inlineP50, poolP50] = idleLatencies.map((l) => quantile(l, 0.5));
console.log('\none append of one record to an idle log, 1000 each, in turns:');
console.log(`  round written in the loop's thread (default)          p50 ${inlineP50.toFixed(3)} ms  p99 ${quantile(idleLatencies[0], 0.99).toFixed(3)} ms  (${inlineWrites[0]} of 1000 written there)`);
console.log(`  through the thread pool (inlineWriteMaxMicros 0)      p50 ${poolP50.toFixed(3)} ms  p99 ${quantile(idleLatencies[1], 0.99).toFixed(3)} ms  (${inlineWrites[1]} written in the loop's thread)`);
console.log(`  p50 ratio, loop's thread / thread pool: ${(inlineP50 / poolP50).toFixed(2)}`);
