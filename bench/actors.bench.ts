/**
 * Actor runtime micro-benchmarks (benny). Not part of the test suite.
 *
 *   npx node bench/actors.bench.ts
 *
 * Dispatch: DeviceActors.dispatch of an uplink to an active device whose sink does nothing, against
 * baselines measured in the same run: a plain function call doing the same work (processUplink,
 * then the sink), and a bare call of the sink alone. The ratio dispatch/plain is the actor's cost.
 * Mailbox: offer+take on a bounded Mailbox against push+shift on a plain array.
 */
import b from 'benny';
import { systemClock } from '../engine/kernel/clock.ts';
import { DeviceActors } from '../engine/actors/DeviceActors.ts';
import type { UplinkSink, UplinkWork } from '../engine/uplink/pipeline/types.ts';
import { Mailbox } from '../engine/actors/Mailbox.ts';
import { MemoryDirectory, type DeviceInfo } from '../engine/ports/directory.ts';
import { compileDevice } from '../engine/uplink/admission/compileDevice.ts';
import { processUplink, type UplinkOutput } from '../engine/uplink/admission/processUplink.ts';

const info: DeviceInfo = {
  id: 'dev-1',
  assets: [{ id: 'a1', name: 'temperature', is: 'sensor', profile: { type: 'number', minimum: -40, maximum: 85 } }],
};
const work: UplinkWork = {
  envelope: { id: 'up-1', channel: 'http', contentType: 'json', deviceId: 'dev-1', receivedAt: 1_714_564_800_000, body: new TextEncoder().encode('{"temperature":{"value":21.5}}') },
  partition: 0,
  offset: 0,
};

let emitted = 0;
const sink: UplinkSink = {
  emit(_work, out) {
    emitted += out.rows.length;
  },
};
const directory = new MemoryDirectory();
directory.put(info);
const actors = new DeviceActors({
  directory,
  compile: (i) => compileDevice(i),
  sink,
  clock: systemClock,
  // One device stays active for the whole run: no reload, no passivation in the measurement.
  refreshAfterMs: 3_600_000,
  passivateAfterMs: 3_600_000,
});
actors.dispatch(work);
await new Promise((resolve) => setTimeout(resolve, 10));
if (actors.actor('dev-1')?.state !== 'active' || emitted !== 1) throw new Error('bench setup: the device actor is not active');

const device = compileDevice(info);
function plainCall(w: UplinkWork): void {
  const out: UplinkOutput = { rows: [], rejections: [] };
  processUplink(w.envelope, device, out);
  sink.emit(w, out);
}
const emptyOut: UplinkOutput = { rows: [], rejections: [] };

const mailbox = new Mailbox<UplinkWork>(256);
const array: UplinkWork[] = [];
let taken: UplinkWork | undefined;

const names = {
  bare: 'bare call of the sink (floor)',
  plain: 'plain call: processUplink + sink (baseline)',
  dispatch: 'DeviceActors.dispatch to an active device',
  array: 'array push + shift (baseline)',
  mailbox: 'Mailbox offer + take',
  burstArray: 'array: 64 push then 64 shift (baseline)',
  burstMailbox: 'Mailbox: 64 offer then 64 take',
};

const summary = await b.suite(
  'actor runtime',
  b.add(names.bare, () => {
    sink.emit(work, emptyOut);
  }),
  b.add(names.plain, () => {
    plainCall(work);
  }),
  b.add(names.dispatch, () => {
    actors.dispatch(work);
  }),
  b.add(names.array, () => {
    array.push(work);
    taken = array.shift();
  }),
  b.add(names.mailbox, () => {
    mailbox.offer(work);
    taken = mailbox.take();
  }),
  b.add(names.burstArray, () => {
    for (let i = 0; i < 64; i++) array.push(work);
    for (let i = 0; i < 64; i++) taken = array.shift();
  }),
  b.add(names.burstMailbox, () => {
    for (let i = 0; i < 64; i++) mailbox.offer(work);
    for (let i = 0; i < 64; i++) taken = mailbox.take();
  }),
);
void taken;
actors.stop();
if (actors.created !== 1) throw new Error(`bench: ${actors.created} actors were created, expected one`);

const ops = new Map(summary.results.map((r) => [r.name, r.ops]));
const line = (name: string, baseline?: string) => {
  const r = summary.results.find((x) => x.name === name)!;
  const ratio = baseline ? `  ${(r.ops / ops.get(baseline)!).toFixed(2)}× of ${baseline === names.plain ? 'plain call' : baseline === names.bare ? 'bare call' : 'array'}` : '';
  console.log(`  ${name.padEnd(46)} ${Math.round(r.ops).toLocaleString('en-US').padStart(13)} ops/s ±${r.margin.toFixed(1)}%${ratio}`);
};
console.log('\nops/s, ratios to the baselines of the same run:');
line(names.bare);
line(names.plain, names.bare);
line(names.dispatch, names.plain);
line(names.array);
line(names.mailbox, names.array);
line(names.burstArray);
line(names.burstMailbox, names.burstArray);
console.log(`  dispatch overhead over the plain call: ${((1e9 / ops.get(names.dispatch)!) - (1e9 / ops.get(names.plain)!)).toFixed(0)} ns per uplink`);
