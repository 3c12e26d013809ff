/**
 * Crash test of the engine core on the embedded adapters: a child process (support/crashChild.ts)
 * appends uplinks to the local log while the uplink pipeline stores their states in chDB; it is
 * SIGKILLed mid-stream, restarted in consume-only mode and SIGKILLed again during the catch-up,
 * then restarted until the log is drained. Afterwards every acknowledged uplink must have its 4
 * states in the store exactly once (as queries see them), with the values it was appended with,
 * and nothing that was never appended may be there.
 *
 * The kill moments are drawn from a seeded generator: CRASH_SEED=<int> replays or varies them.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Session } from 'chdb';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { parseJsonEachRow } from '../../../adapters/chdb/createChdbStore.ts';
import { decodeStoredState } from '../../../adapters/clickhouse-sql/stateQueries.ts';
import { decodeEnvelope } from '../../../engine/uplink/envelope.ts';
import type { LogRecord } from '../../../engine/ports/log.ts';
import { Topics } from '../../../schemas/messages.ts';
import { seeded } from '../../support/cborVariants.ts';
import { CRASH_ASSETS, crashAt, crashDeviceOf, crashK, crashValues } from '../../support/crashUplinks.ts';
import { tempDir } from '../../support/tmp.ts';

const SEED = Number(process.env.CRASH_SEED ?? 0x5eed_c0de) >>> 0;
const DEVICES = 200;
const TOTAL = 30_000;
const BATCH = 500;
const PARTITIONS = 4; // as crashChild.ts
const GROUP = 'engine';
const CHILD = new URL('../../support/crashChild.ts', import.meta.url).pathname;
// Small inserts and few uplinks in flight keep consumption behind production, so a backlog is
// left for the consume-only runs to be killed in.
const THROTTLE = { maxRows: 200, maxInFlight: 500 };


interface RunState {
  /** Sum of the engine group's committed offsets when the child started. */
  startCommitted: number;
  /** Highest k named in an `append` line: nothing beyond it can be in the log. */
  attempted: number;
  /** Highest k acknowledged as durable. */
  acked: number;
  acks: number;
  received: number;
  stored: number;
  rejected: number;
  /** Uplinks of this run whose states were durable, as of the last progress line. */
  durable: number;
  /** Sum of the committed offsets, as of the last progress line. */
  committed: number;
  drained: boolean;
}

/** Some uplinks are durable but not committed yet: a kill now makes the next run store them again. */
const replayPending = (s: RunState) => s.startCommitted >= 0 && s.startCommitted + s.durable > s.committed;

interface RunResult {
  state: RunState;
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs the child; `killWhen` is asked after every line and SIGKILLs the child when it says so. */
function runChild(args: Record<string, unknown>, killWhen?: (state: RunState) => boolean): Promise<RunResult> {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const state: RunState = { startCommitted: -1, attempted: -1, acked: -1, acks: 0, received: 0, stored: 0, rejected: 0, durable: 0, committed: 0, drained: false };
  let stderr = '';
  let killed = false;
  child.stderr.on('data', (d) => { stderr += d; });
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    const [word, ...rest] = line.split(' ');
    const n = rest.map(Number);
    switch (word) {
      case 'start': state.startCommitted = n[0]; break;
      case 'append': state.attempted = Math.max(state.attempted, n[1]); break;
      case 'ack': state.acked = Math.max(state.acked, n[0]); state.acks++; break;
      case 'progress':
      case 'drained':
        if (state.drained) break; // a progress line still under way when the child drained
        [state.received, state.stored, state.rejected, state.durable, state.committed] = n;
        if (word === 'drained') state.drained = true;
        break;
      default: stderr += `unexpected line: ${line}\n`;
    }
    if (!killed && killWhen?.(state)) {
      killed = true;
      child.kill('SIGKILL');
    }
  });
  const deadline = setTimeout(() => child.kill('SIGKILL'), 40_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    // 'close' comes after the process is reaped and its stdout fully read.
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      resolve({ state, pid: child.pid!, code, signal, stderr });
    });
  });
}

function lockPid(dir: string): number | undefined {
  const file = join(dir, 'log', 'LOCK');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
}

/** Every record of a topic, read by a fresh group (no commits) until nothing new comes for idleMs. */
async function readTopic(dir: string, topic: string, until: (records: LogRecord[]) => boolean, idleMs: number): Promise<LogRecord[]> {
  const log = createLocalLog({ dir: join(dir, 'log') });
  try {
    const records: LogRecord[] = [];
    let last = Date.now();
    const consumer = log.consumer({ group: `verify-${topic}`, topics: [topic], onBatch: async (b) => { records.push(...b.records); last = Date.now(); } });
    await consumer.start();
    const deadline = Date.now() + 15_000;
    while (!(until(records) && Date.now() - last >= idleMs)) {
      if (Date.now() > deadline) throw new Error(`reading ${topic}: ${records.length} records, still incomplete after 15 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await consumer.stop();
    return records;
  } finally {
    await log.close();
  }
}

async function committedOffsets(dir: string): Promise<number[]> {
  const log = createLocalLog({ dir: join(dir, 'log') });
  try {
    const out: number[] = [];
    for (let p = 0; p < PARTITIONS; p++) out.push(await log.committed(GROUP, Topics.uplinks, p));
    return out;
  } finally {
    await log.close();
  }
}

test(`acknowledged uplinks survive SIGKILL during produce and during catch-up, stored exactly once (seed ${SEED})`, async () => {
  const tmp = tempDir('crash');
  const random = seeded(SEED);
  const base = { dir: tmp.dir, devices: DEVICES, ...THROTTLE };
  try {
    // 1. Produce, killed after a seeded number of acknowledged batches.
    const killAfterAcks = 5 + Math.floor(random() * 16);
    const produce = await runChild({ ...base, mode: 'produce', from: 0, total: TOTAL, batch: BATCH }, (s) => s.acks >= killAfterAcks && replayPending(s));
    assert.is(produce.signal, 'SIGKILL', `the producing child was killed (stderr: ${produce.stderr})`);
    assert.ok(produce.state.acks >= killAfterAcks, 'killed after the acknowledgements it waited for');
    assert.ok(produce.state.acked < TOTAL - 1, 'killed before it appended everything');
    assert.is(lockPid(tmp.dir), produce.pid, 'the killed process left its LOCK behind');
    const acked = produce.state.acked;
    const attempted = produce.state.attempted;
    // Records a run was handed but had not committed are delivered again by the next run; the last
    // progress line before a kill gives lower bounds of how far the killed run had read, and of how
    // many of those records were already durable (their states are then written a second time).
    let readUpTo = produce.state.startCommitted + produce.state.received;
    let durableUpTo = produce.state.startCommitted + produce.state.durable;
    let redelivered = 0;
    let rewritten = 0;

    // 2. Consume only, killed during the catch-up at a seeded share of the backlog.
    let committedBefore = 0;
    let backlog = 0;
    for (const kill of [0.15 + random() * 0.25, 0.45 + random() * 0.3]) {
      const run = await runChild({ ...base, mode: 'consume' }, (s) => {
        if (s.startCommitted < 0) return false;
        backlog = acked + 1 - s.startCommitted;
        return s.received >= Math.max(1, kill * backlog) && replayPending(s);
      });
      assert.is(run.signal, 'SIGKILL', `the catching-up child was killed (stderr: ${run.stderr})`);
      assert.not.ok(run.state.drained, 'killed before the catch-up finished');
      assert.ok(run.state.startCommitted >= committedBefore, 'committed offsets never go back');
      assert.is(lockPid(tmp.dir), run.pid, 'the killed process left its LOCK behind');
      committedBefore = run.state.startCommitted;
      redelivered += Math.max(0, readUpTo - run.state.startCommitted);
      rewritten += Math.max(0, durableUpTo - run.state.startCommitted);
      readUpTo = run.state.startCommitted + run.state.received;
      durableUpTo = run.state.startCommitted + run.state.durable;
      assert.is(run.state.rejected, 0, 'no uplink was rejected');
    }
    assert.ok(backlog > 0, 'the consume-only runs had a backlog to catch up');

    // 3. Consume only, to the end.
    const finish = await runChild({ ...base, mode: 'consume' });
    assert.is(finish.code, 0, `the last run exits cleanly (stderr: ${finish.stderr})`);
    assert.ok(finish.state.drained, 'the last run drained the log');
    assert.ok(finish.state.startCommitted >= committedBefore, 'committed offsets never go back');
    assert.is(finish.state.rejected, 0, 'no uplink was rejected');
    assert.is(lockPid(tmp.dir), undefined, 'a clean exit releases the LOCK');
    redelivered += Math.max(0, readUpTo - finish.state.startCommitted);
    rewritten += Math.max(0, durableUpTo - finish.state.startCommitted);

    // What the log holds: every acknowledged uplink, and perhaps part of the batch being appended
    // at the kill (written, not yet acknowledged), never anything beyond it.
    const records = await readTopic(tmp.dir, Topics.uplinks, (rs) => rs.length >= acked + 1, 300);
    const inLog = new Set<number>();
    const ends = new Array<number>(PARTITIONS).fill(0);
    for (const record of records) {
      const envelope = decodeEnvelope(record.value);
      const k = crashK(envelope.id)!;
      assert.ok(k !== undefined && k <= attempted, `log record ${envelope.id} was appended`);
      assert.not.ok(inLog.has(k), `uplink ${k} is in the log once`);
      inLog.add(k);
      ends[record.partition] = Math.max(ends[record.partition], record.offset + 1);
    }
    for (let k = 0; k <= acked; k++) if (!inLog.has(k)) assert.unreachable(`acknowledged uplink ${k} is missing from the log`);
    assert.equal(await committedOffsets(tmp.dir), ends, 'the engine committed every record of every partition');
    const deadLetters = await readTopic(tmp.dir, Topics.deadLetters, () => true, 300);
    assert.is(deadLetters.length, 0, 'nothing was dead-lettered');

    // What the store shows: each uplink of the log, 4 states, once each, with the appended values.
    const session = new Session(join(tmp.dir, 'chdb'));
    let rows: Record<string, unknown>[];
    let physical: number;
    try {
      rows = parseJsonEachRow((await session.queryAsync(`SELECT device_id AS d, asset AS a, ts AS t, received_at AS r, uplink_id AS u,
        value_kind AS k, value_number AS n, value_string AS s, value_bool AS b FROM fleetstream.states FINAL`, { format: 'JSONEachRow' })).text());
      physical = Number(session.query('SELECT count() FROM fleetstream.states', 'CSV').trim());
    } finally {
      session.close();
    }
    const seen = new Map<string, number>();
    const perDeviceAsset = new Map<string, number>();
    for (const row of rows) {
      const state = decodeStoredState(row);
      const k = crashK(state.uplinkId);
      if (k === undefined || !inLog.has(k)) assert.unreachable(`stored state of ${state.uplinkId} that was never appended`);
      const key = `${k}/${state.asset}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      const dk = `${String(row.d)}/${state.asset}`;
      perDeviceAsset.set(dk, (perDeviceAsset.get(dk) ?? 0) + 1);
      assert.is(String(row.d), crashDeviceOf(k!, DEVICES), `device of ${key}`);
      assert.ok((CRASH_ASSETS as readonly string[]).includes(state.asset), `asset ${state.asset} of uplink ${k}`);
      assert.equal(state.value, crashValues(k!)[state.asset as (typeof CRASH_ASSETS)[number]], `value of ${key}`);
      assert.is(state.ts, crashAt(k!), `ts of ${key}`);
    }
    for (const k of inLog) {
      for (const asset of CRASH_ASSETS) {
        const count = seen.get(`${k}/${asset}`) ?? 0;
        if (count !== 1) assert.unreachable(`state ${asset} of uplink ${k} is stored ${count} times`);
      }
    }
    assert.is(rows.length, inLog.size * 4, 'no other rows');
    const expectedPerDevice = new Map<number, number>();
    for (const k of inLog) expectedPerDevice.set(k % DEVICES, (expectedPerDevice.get(k % DEVICES) ?? 0) + 1);
    for (let d = 0; d < DEVICES; d++) {
      for (const asset of CRASH_ASSETS) {
        assert.is(perDeviceAsset.get(`dev${d}/${asset}`) ?? 0, expectedPerDevice.get(d) ?? 0, `count of dev${d}/${asset}`);
      }
    }
    assert.ok(physical >= rows.length, 'physical rows (duplicates not yet merged away) cover the visible ones');
    // Without states written twice the exactly-once check would prove nothing about idempotent replays.
    assert.ok(rewritten > 0, 'the kills made restarted runs store some durable uplinks again');
    console.log(`  seed ${SEED}: acked ${acked + 1}, in log ${inLog.size} (appended ≤ ${attempted + 1}), ` +
      `redelivered ≥ ${redelivered} uplinks of which ≥ ${rewritten} were already durable, states ${rows.length}, physical rows now ${physical}`);
  } finally {
    tmp.remove();
  }
});

test.run();
