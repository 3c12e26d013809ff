/**
 * What the ingest (engine/uplink/UplinkIngest.ts: envelope check and encoding, group commit through
 * the Batcher) costs over the local log it appends to, measured in the same run. Not part of the
 * test suite.
 *
 *   npx node bench/ingest.bench.ts [appends=300000] [producers=256] [sides=log,ingest]
 *
 * `producers` loops in flight, as an edge's connections are: each appends one uplink (a 52-byte
 * JSON device state of one of 64 devices), waits until it is durable, then yields one event-loop
 * turn (setImmediate: the next request arrives from a socket) and appends again.
 *   - baseline: `log.append` of one record per call (180 bytes, the size of the ingest's envelope);
 *   - ingest: `UplinkIngest.appendThen`, which batches the uplinks waiting meanwhile into one append.
 * Each side gets its own log (8 partitions, a temp dir), is warmed with a fifth of `appends`, then the
 * two alternate for three rounds; the ratio is of their best rounds. `sides=ingest` runs the ingest
 * alone, in a process that has run nothing else. Beside each rate: CPU µs per
 * append of this thread and of the process's other threads (V8's helper threads, libuv's pool), and
 * the young-generation collections (scavenges) of the round: their count and summed pause, from
 * `PerformanceObserver('gc')`. Objects that survive two scavenges are copied to the old generation,
 * so the summed pause grows with what the hot path keeps reachable across them. The process runs
 * with the service's start flags (package.json's start script).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import { UplinkIngest } from '../engine/uplink/UplinkIngest.ts';
import { Topics } from '../schemas/messages.ts';
import { useStartFlags } from '../test/support/startFlags.ts';

// The service's start flags (the garbage collector's among them), as `npm start` runs the ingest.
useStartFlags();
const ROUNDS = 3;
const total = Number(process.argv[2] ?? 300_000);
const producers = Number(process.argv[3] ?? 256);
const sides = (process.argv[4] ?? 'log,ingest').split(',');
const devices = Array.from({ length: 64 }, (_, i) => `01J${String(i).padStart(23, '0')}`);
const body = new TextEncoder().encode('{"temperature":{"value":21.5},"door":{"value":true}}');
const value = new Uint8Array(180).fill(0x5a);

let scavenges = 0;
let scavengeMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) {
      scavenges++;
      scavengeMs += entry.duration;
    }
  }
}).observe({ entryTypes: ['gc'] });

type Append = (deviceId: string) => Promise<void>;

async function side(dir: string, kind: 'log' | 'ingest'): Promise<{ append: Append; close(): Promise<void> }> {
  const log = createLocalLog({ dir });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 8 }]);
  if (kind === 'log') {
    return {
      append: async (deviceId) => { await log.append(Topics.uplinks, [{ key: deviceId, value }]); },
      close: () => log.close(),
    };
  }
  const ingest = new UplinkIngest({ log, clock: systemClock });
  return {
    append: (deviceId) => new Promise<void>((resolve, reject) => {
      ingest.appendThen({ channel: 'http', contentType: 'json', deviceId, body }, (failure) => (failure ? reject(failure) : resolve()));
    }),
    close: async () => { await ingest.close(); await log.close(); },
  };
}

interface Round { rate: number; cpuThread: number; cpuOthers: number; scavenges: number; scavengeMs: number }

async function run(append: Append, count: number): Promise<Round> {
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  let issued = 0;
  const producer = async (): Promise<void> => {
    while (issued < count) {
      const deviceId = devices[issued++ % devices.length];
      await append(deviceId);
      await turn();
    }
  };
  const [s0, ms0] = [scavenges, scavengeMs];
  const cpu0 = process.cpuUsage();
  const thread0 = process.threadCpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: producers }, producer));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const thread = process.threadCpuUsage(thread0);
  // the observer is told after the collections; a turn lets it catch up
  await turn();
  const threadMicros = thread.user + thread.system;
  return {
    rate: count / seconds,
    cpuThread: threadMicros / count,
    cpuOthers: (cpu.user + cpu.system - threadMicros) / count,
    scavenges: scavenges - s0,
    scavengeMs: scavengeMs - ms0,
  };
}

const root = mkdtempSync(join(tmpdir(), 'fleetstream-ingest-bench-'));
const runs = await Promise.all(sides.map(async (kind) => ({ kind, name: kind === 'log' ? 'log.append, one record per call' : 'UplinkIngest.appendThen (batched)', side: await side(join(root, kind), kind as 'log' | 'ingest'), rounds: [] as Round[] })));
for (const r of runs) await run(r.side.append, Math.floor(total / 5));
for (let round = 0; round < ROUNDS; round++) for (const r of runs) r.rounds.push(await run(r.side.append, total));
for (const r of runs) await r.side.close();
rmSync(root, { recursive: true, force: true });

console.log(`${total} appends × ${ROUNDS} rounds, ${producers} producers in flight over ${devices.length} devices, 8 partitions`);
for (const r of runs) {
  r.rounds.forEach((round, i) => console.log(
    `${`${r.name} (round ${i + 1})`.padEnd(44)} ${round.rate.toFixed(0).padStart(7)} appends/s   CPU µs per append: this thread ${round.cpuThread.toFixed(1)}, other threads ${round.cpuOthers.toFixed(1)}   scavenges ${round.scavenges}, ${round.scavengeMs.toFixed(0)} ms`,
  ));
}
const best = (kind: string) => Math.max(...runs.find((r) => r.kind === kind)!.rounds.map((r) => r.rate));
if (runs.length === 2) console.log(`ratio ingest / log (best rounds): ${(best('ingest') / best('log')).toFixed(2)}`);
