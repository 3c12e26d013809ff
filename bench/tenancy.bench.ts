/**
 * Quotas of grounds at admission (docs/grounds.md "Quotas"): the real intake (app/buildIntake.ts:
 * UplinkAdmission → UplinkIngest → the local log on disk, refusals to topic `dead-letters`) with and
 * without the grounds' states per second (engine/quotas/GroundRates.ts). Not a test.
 *
 *   node bench/tenancy.bench.ts
 *
 * 1. Throughput: 1 000 grounds of one device each, 32 producers admitting uplinks round the devices
 *    as fast as the intake takes them, with no quota and with a quota on every ground (high enough
 *    that none is refused: the cost of the check itself). Rounds alternate; medians. Target ≥ 0.95×.
 * 2. Isolation: 100 grounds; 99 send 20 uplinks/s each (under their quota of 100/s), open loop; one
 *    more ground's device floods at 10× its quota (1 000 uplinks/s for a quota of 100/s). The p99 of
 *    the normal grounds' acceptance latency (admit called → durable), with and without the flood,
 *    in the same run, alternating. Target: within 10 %.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { buildIntake, type Intake } from '../app/buildIntake.ts';
import { systemClock } from '../engine/kernel/clock.ts';
import type { DeviceInfo } from '../engine/ports/directory.ts';
import type { GroundQuota } from '../engine/ports/quotaRegistry.ts';
import { GroundRates } from '../engine/quotas/GroundRates.ts';
import { Topics } from '../schemas/messages.ts';

const ROUNDS = 5;
const THROUGHPUT_UPLINKS = 40_000;
const PRODUCERS = 32;
const ISOLATION_MS = 3000;

const body = new TextEncoder().encode(JSON.stringify({ temperature: { value: 21.5 }, humidity: { value: 40 } }));
const id = (prefix: string, i: number) => `${prefix}${String(i).padStart(21, '0')}`.slice(0, 22);
function device(i: number): DeviceInfo {
  return {
    id: id('d', i), groundId: id('g', i), assets: [
      { id: id('a', 2 * i), name: 'temperature', is: 'sensor', profile: { type: 'number' } },
      { id: id('a', 2 * i + 1), name: 'humidity', is: 'sensor', profile: { type: 'number' } },
    ],
  };
}

async function rates(quotas: GroundQuota[]): Promise<GroundRates> {
  const r = new GroundRates({ clock: systemClock, registry: { listQuotas: async () => quotas, getQuota: async () => undefined, liveEdges: async () => 1 } });
  await r.start();
  return r;
}

const root = mkdtempSync(join(tmpdir(), 'fleetstream-tenancy-bench-'));
const log = createLocalLog({ dir: join(root, 'log') });
await log.ensureTopics([{ name: Topics.uplinks, partitions: 8 }, { name: Topics.deadLetters, partitions: 8 }]);
const rejections = { append: async () => undefined };
const intakeWith = (quota?: GroundRates): Intake => buildIntake({ log, clock: systemClock, rejections, ...(quota === undefined ? {} : { quota }) });

function admit(intake: Intake, d: DeviceInfo): Promise<'accepted' | 'refused'> {
  return new Promise((resolve, reject) => {
    intake.admission.admitThen(d, { channel: 'http', contentType: 'json', deviceId: d.id, body }, (error, outcome) => (outcome === undefined ? reject(error) : resolve(outcome.status)));
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))];

// ---- 1. throughput: 1 000 grounds, no quota vs a quota on each
const grounds = Array.from({ length: 1000 }, (_, i) => device(i));
const unlimited = intakeWith();
const limited = intakeWith(await rates(grounds.map((d) => ({ groundId: d.groundId!, statesPerSecond: 1_000_000, updatedAt: 0 }))));
async function throughput(intake: Intake, count: number): Promise<number> {
  let issued = 0;
  let refused = 0;
  const producer = async () => {
    while (issued < count) if ((await admit(intake, grounds[issued++ % grounds.length])) === 'refused') refused++;
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: PRODUCERS }, producer));
  if (refused > 0) throw new Error(`bench setup: ${refused} refused`);
  return count / ((performance.now() - started) / 1000);
}
await throughput(unlimited, THROUGHPUT_UPLINKS / 4);
await throughput(limited, THROUGHPUT_UPLINKS / 4);
const plain: number[] = [];
const quoted: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  plain.push(await throughput(unlimited, THROUGHPUT_UPLINKS));
  quoted.push(await throughput(limited, THROUGHPUT_UPLINKS));
}
const ratio = median(quoted) / median(plain);
console.log(`\n1 000 grounds, ${THROUGHPUT_UPLINKS} uplinks of 2 states per round, ${PRODUCERS} producers, medians of ${ROUNDS} rounds`);
console.log(`  no quotas                       ${Math.round(median(plain)).toLocaleString('en-US').padStart(8)} uplinks/s  (${plain.map((r) => Math.round(r)).join(', ')})`);
console.log(`  a quota on each of 1 000 grounds ${Math.round(median(quoted)).toLocaleString('en-US').padStart(7)} uplinks/s  (${quoted.map((r) => Math.round(r)).join(', ')})`);
console.log(`  ratio ${ratio.toFixed(3)}× (target ≥ 0.95×)`);

// ---- 2. isolation: 99 normal grounds beside one flooding at 10× its quota
const normal = Array.from({ length: 99 }, (_, i) => device(2000 + i));
const flooder = device(3000);
const isolated = intakeWith(await rates([...normal, flooder].map((d) => ({ groundId: d.groundId!, statesPerSecond: 200, updatedAt: 0 }))));
// 2 states per uplink: 100 uplinks/s is the quota; the flood sends 1 000 a second.
async function latencies(flood: boolean): Promise<{ p99: number; median: number; accepted: number; floodRefused: number }> {
  const normalMs: number[] = [];
  let floodRefused = 0;
  const pending: Promise<unknown>[] = [];
  const started = performance.now();
  let tick = 0;
  // Every 10 ms: a fifth of the normal grounds send one uplink (20/s each), the flooder ten (1 000/s).
  while (performance.now() - started < ISOLATION_MS) {
    for (let i = tick % 5; i < normal.length; i += 5) {
      const at = performance.now();
      pending.push(admit(isolated, normal[i]).then((status) => {
        if (status !== 'accepted') throw new Error('a normal ground refused');
        normalMs.push(performance.now() - at);
      }));
    }
    if (flood) for (let i = 0; i < 10; i++) pending.push(admit(isolated, flooder).then((status) => { if (status === 'refused') floodRefused++; }));
    tick++;
    const next = started + tick * 10;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
  await Promise.all(pending);
  return { p99: p99(normalMs), median: median(normalMs), accepted: normalMs.length, floodRefused };
}
await latencies(true);
const quiet: number[] = [];
const flooded: number[] = [];
let refusedInFlood = 0;
for (let round = 0; round < ROUNDS; round++) {
  quiet.push((await latencies(false)).p99);
  const f = await latencies(true);
  flooded.push(f.p99);
  refusedInFlood += f.floodRefused;
}
const change = median(flooded) / median(quiet) - 1;
console.log(`\n99 grounds at 20 uplinks/s each (quota 100/s) beside one at 1 000 uplinks/s (10× its quota), ${ISOLATION_MS / 1000} s a round, ${ROUNDS} rounds alternating`);
console.log(`  acceptance latency p99 of the 99, without the flood  ${median(quiet).toFixed(2)} ms  (${quiet.map((x) => x.toFixed(2)).join(', ')})`);
console.log(`  acceptance latency p99 of the 99, with the flood     ${median(flooded).toFixed(2)} ms  (${flooded.map((x) => x.toFixed(2)).join(', ')})`);
console.log(`  change ${(change * 100).toFixed(1)} % (target within 10 %); the flood's uplinks refused: ${refusedInFlood} over ${ROUNDS} rounds`);

await Promise.all([unlimited.close(), limited.close(), isolated.close()]);
await log.close();
rmSync(root, { recursive: true, force: true });
