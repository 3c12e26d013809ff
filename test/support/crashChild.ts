/**
 * The process test/app/service/crash.test.ts kills: the service's engine (app/buildEngine.ts) on the embedded
 * adapters the service opens in a data dir (app/openPorts.ts: local log, chDB), its devices from a
 * MemoryDirectory.
 *
 *   node test/support/crashChild.ts '{"dir":…,"mode":"produce","devices":200,"from":0,"total":…,"batch":…}'
 *   node test/support/crashChild.ts '{"dir":…,"mode":"consume","devices":200}'
 *
 * produce: appends crashUplinks k = from … total-1 in batches while the pipeline consumes them.
 * consume: only consumes what the log holds. Both finish by draining the pipeline once nothing new
 * arrives, then exit 0.
 *
 * Protocol on stdout, one line each, written synchronously (stdout is a pipe):
 *   start <sum of committed offsets of the engine group>
 *   append <first k> <last k>       before the append call (so nothing beyond it can be in the log)
 *   ack <last k>                    after the append resolved (durable)
 *   progress <received> <stored> <rejected> <durable> <committed>    every 50 ms
 *   drained <received> <stored> <rejected> <durable> <committed>     all durable and committed; exits next
 * received, stored (rows handed to the batcher), rejected and durable (uplinks whose states are in
 * the store) count this run only; committed is the sum of the group's committed offsets.
 */
import { writeSync } from 'node:fs';
import { systemClock } from '../../engine/kernel/clock.ts';
import { encodeEnvelope } from '../../engine/uplink/envelope.ts';
import { MemoryDirectory } from '../../engine/ports/directory.ts';
import { buildEngine } from '../../app/buildEngine.ts';
import { openLog, openStore } from '../../app/openPorts.ts';
import { defaultConfig } from '../../schemas/config.ts';
import { Topics } from '../../schemas/messages.ts';
import { crashDevice, crashUplink } from './crashUplinks.ts';

interface ChildArgs {
  dir: string;
  mode: 'produce' | 'consume';
  devices: number;
  from?: number;
  total?: number;
  batch?: number;
  /** Rows per chDB insert (the engine's batchRows). Small values slow consumption so a backlog builds. */
  maxRows?: number;
  /** Uplinks in flight before fetching pauses (UplinkPipeline maxInFlight). */
  maxInFlight?: number;
  /** The run ends after this long without a new record (ms). */
  idleMs?: number;
}

const PARTITIONS = 4; // as test/app/service/crash.test.ts
const GROUP = 'engine';

const args = JSON.parse(process.argv[2] ?? '{}') as ChildArgs;
const say = (line: string) => writeSync(1, `${line}\n`);
// systemClock timers are unref'd; this keeps the process alive while the pipeline waits on one.
const keepAlive = setInterval(() => {}, 1000);

const config = { ...defaultConfig, dataDir: args.dir, engine: { ...defaultConfig.engine, partitions: PARTITIONS } };
const log = await openLog(config, systemClock);
const store = await openStore(config);
const directory = new MemoryDirectory();
for (let d = 0; d < args.devices; d++) directory.put(crashDevice(d));

let failure: unknown;
const engine = buildEngine({
  log, store, rejections: store.rejections, directory, clock: systemClock,
  names: { uplinks: Topics.uplinks, deadLetters: Topics.deadLetters, engineGroup: GROUP },
  settings: { batchRows: args.maxRows ?? 2000, batchDelayMs: 20, commitIntervalMs: 200, maxInFlight: args.maxInFlight ?? 20_000 },
  onError: (error) => { failure = error; },
});
const { pipeline } = engine;

async function committed(): Promise<number> {
  let sum = 0;
  for (let p = 0; p < PARTITIONS; p++) sum += await log.committed(GROUP, Topics.uplinks, p);
  return sum;
}
say(`start ${await committed()}`);
await engine.start();

async function stats(): Promise<string> {
  const s = pipeline.stats;
  const durable = s.received - s.inFlight;
  return `${s.received} ${s.stored} ${s.rejected} ${durable} ${await committed()}`;
}
const progress = setInterval(() => { void stats().then((line) => say(`progress ${line}`)); }, 50);

if (args.mode === 'produce') {
  const total = args.total ?? 0;
  const batch = args.batch ?? 500;
  for (let first = args.from ?? 0; first < total; first += batch) {
    const last = Math.min(total, first + batch) - 1;
    const records = [];
    for (let k = first; k <= last; k++) {
      const envelope = crashUplink(k, args.devices);
      records.push({ key: envelope.deviceId, value: encodeEnvelope(envelope) });
    }
    say(`append ${first} ${last}`);
    await log.append(Topics.uplinks, records);
    say(`ack ${last}`);
  }
}

// Nothing appends any more: once no record has arrived for idleMs, everything in the log was read.
const idleMs = args.idleMs ?? 750;
let seen = -1;
let since = Date.now();
for (;;) {
  if (failure !== undefined) throw failure;
  if (pipeline.stats.received !== seen || pipeline.stats.inFlight > 0) {
    seen = pipeline.stats.received;
    since = Date.now();
  } else if (Date.now() - since >= idleMs) break;
  await new Promise((resolve) => setTimeout(resolve, 25));
}
await engine.stop();
if (failure !== undefined) throw failure;
clearInterval(progress);
say(`drained ${await stats()}`);
await log.close();
await store.close();
clearInterval(keepAlive);
