/**
 * Device actor runtime with a simulated clock: order per device, passivation, backpressure,
 * unknown devices, directory failures and reloads.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { DeviceActors } from '../../../engine/actors/DeviceActors.ts';
import type { UplinkSink, UplinkWork } from '../../../engine/uplink/pipeline/types.ts';
import { compileDevice } from '../../../engine/uplink/admission/compileDevice.ts';
import type { UplinkOutput } from '../../../engine/uplink/admission/processUplink.ts';
import type { DeviceDirectory, DeviceInfo } from '../../../engine/ports/directory.ts';

const encoder = new TextEncoder();

function device(id: string, profile: Record<string, unknown> = { type: 'integer' }): DeviceInfo {
  return { id, assets: [{ id: `${id}-n`, name: 'n', is: 'sensor', profile }] };
}

/** A directory whose answers the test releases by hand. */
class ManualDirectory implements DeviceDirectory {
  devices = new Map<string, DeviceInfo>();
  calls: string[] = [];
  pending: Array<{ id: string; resolve: (d: DeviceInfo | undefined) => void; reject: (e: unknown) => void }> = [];
  auto = true;
  getDevice(id: string): Promise<DeviceInfo | undefined> {
    this.calls.push(id);
    if (this.auto) return Promise.resolve(this.devices.get(id));
    return new Promise((resolve, reject) => this.pending.push({ id, resolve, reject }));
  }
  release(): void {
    for (const p of this.pending.splice(0)) p.resolve(this.devices.get(p.id));
  }
  fail(error: unknown): void {
    for (const p of this.pending.splice(0)) p.reject(error);
  }
}

class CollectingSink implements UplinkSink {
  seen: Array<{ work: UplinkWork; rows: number[]; codes: string[] }> = [];
  emit(work: UplinkWork, out: UplinkOutput): void {
    this.seen.push({ work, rows: out.rows.map((r) => r.value as number), codes: out.rejections.map((r) => r.code) });
  }
}

let seq = 0;
function work(deviceId: string, n: number): UplinkWork {
  return {
    envelope: { id: `u${seq++}`, channel: 'http', contentType: 'json', deviceId, asset: 'n', receivedAt: 1000, body: encoder.encode(JSON.stringify({ value: n })) },
    partition: 0,
    offset: seq,
  };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

function setup(options: Partial<ConstructorParameters<typeof DeviceActors>[0]> = {}) {
  const clock = new SimulatedClock(1_000_000);
  const directory = new ManualDirectory();
  const sink = new CollectingSink();
  const actors = new DeviceActors({ directory, compile: (info) => compileDevice(info), sink, clock, passivateAfterMs: 1000, sweepIntervalMs: 100, refreshAfterMs: 10_000, loadRetryMs: 500, ...options });
  return { clock, directory, sink, actors };
}

test('each device processes its uplinks strictly in order, devices interleave', async () => {
  const { directory, sink, actors } = setup();
  directory.auto = false;
  for (const id of ['a', 'b']) directory.devices.set(id, device(id));
  for (let i = 0; i < 5; i++) {
    assert.is(actors.dispatch(work('a', i)), undefined);
    assert.is(actors.dispatch(work('b', 100 + i)), undefined);
  }
  assert.is(sink.seen.length, 0, 'nothing processed before the device is loaded');
  directory.release();
  await flush();
  const of = (id: string) => sink.seen.filter((s) => s.work.envelope.deviceId === id).flatMap((s) => s.rows);
  assert.equal(of('a'), [0, 1, 2, 3, 4]);
  assert.equal(of('b'), [100, 101, 102, 103, 104]);
  assert.equal(directory.calls.sort(), ['a', 'b'], 'device loaded once per actor');
  actors.dispatch(work('a', 5));
  assert.equal(of('a').at(-1), 5, 'an active device processes inline');
  actors.stop();
});

test('idle actors passivate and come back on the next uplink', async () => {
  const { clock, directory, sink, actors } = setup();
  directory.devices.set('a', device('a'));
  actors.dispatch(work('a', 1));
  await flush();
  assert.is(actors.size, 1);
  clock.advance(900);
  assert.is(actors.size, 1, 'not idle long enough');
  clock.advance(300);
  assert.is(actors.size, 0, 'passivated after 1000 ms idle');
  assert.is(actors.passivated, 1);
  actors.dispatch(work('a', 2));
  await flush();
  assert.is(actors.size, 1);
  assert.is(actors.created, 2);
  assert.equal(sink.seen.map((s) => s.rows[0]), [1, 2]);
  actors.stop();
});

test('a full mailbox makes dispatch wait until the actor drains', async () => {
  const { directory, sink, actors } = setup({ mailboxCapacity: 3 });
  directory.auto = false;
  directory.devices.set('a', device('a'));
  for (let i = 0; i < 3; i++) assert.is(actors.dispatch(work('a', i)), undefined);
  const wait = actors.dispatch(work('a', 3));
  assert.ok(wait instanceof Promise, 'fourth uplink must wait');
  let accepted = false;
  void wait!.then(() => { accepted = true; });
  await flush();
  assert.not.ok(accepted);
  directory.release();
  await flush();
  await wait;
  assert.ok(accepted);
  assert.equal(sink.seen.map((s) => s.rows[0]), [0, 1, 2, 3], 'order kept across the wait');
  actors.stop();
});

test('unknown devices are rejected per uplink and re-checked after refreshAfterMs', async () => {
  const { clock, directory, sink, actors } = setup({ passivateAfterMs: 60_000 });
  actors.dispatch(work('ghost', 1));
  await flush();
  assert.equal(sink.seen[0].codes, ['UNKNOWN_DEVICE']);
  directory.devices.set('ghost', device('ghost'));
  actors.dispatch(work('ghost', 2));
  assert.equal(sink.seen[1].codes, ['UNKNOWN_DEVICE'], 'cached until refresh');
  clock.advance(10_001);
  actors.dispatch(work('ghost', 3));
  await flush();
  assert.equal(sink.seen[2].rows, [3], 'known after the refresh');
  actors.stop();
});

test('a failing directory is retried after loadRetryMs and queued uplinks survive', async () => {
  const errors: string[] = [];
  const { clock, directory, sink, actors } = setup({ onLoadError: (_id, e) => errors.push(e.code) });
  directory.auto = false;
  directory.devices.set('a', device('a'));
  actors.dispatch(work('a', 1));
  directory.fail(new FleetError('UNAVAILABLE', 'database down'));
  await flush();
  assert.equal(errors, ['UNAVAILABLE']);
  assert.is(sink.seen.length, 0);
  assert.is(actors.sweep(0), 0, 'an actor with queued work is never passivated');
  clock.advance(500);
  assert.is(directory.pending.length, 1, 'retried after loadRetryMs');
  directory.release();
  await flush();
  assert.equal(sink.seen.map((s) => s.rows[0]), [1]);
  actors.stop();
});

test('invalidate re-reads the device: a changed profile applies to the next uplink', async () => {
  const { directory, sink, actors } = setup();
  directory.devices.set('a', device('a', { type: 'integer', maximum: 10 }));
  actors.dispatch(work('a', 50));
  await flush();
  assert.equal(sink.seen[0].codes, ['PROFILE_VIOLATION']);
  directory.devices.set('a', device('a', { type: 'integer', maximum: 100 }));
  actors.invalidate('a');
  actors.dispatch(work('a', 50));
  await flush();
  assert.equal(sink.seen[1].rows, [50]);
  actors.stop();
});

test('invalidateAll re-reads every device (registry changes may have been missed)', async () => {
  const { directory, sink, actors } = setup();
  for (const id of ['a', 'b']) directory.devices.set(id, device(id, { type: 'integer', maximum: 10 }));
  actors.dispatch(work('a', 50));
  actors.dispatch(work('b', 50));
  await flush();
  assert.equal(sink.seen.map((s) => s.codes), [['PROFILE_VIOLATION'], ['PROFILE_VIOLATION']]);
  for (const id of ['a', 'b']) directory.devices.set(id, device(id, { type: 'integer', maximum: 100 }));
  actors.dispatch(work('a', 50));
  await flush();
  assert.equal(sink.seen[2].codes, ['PROFILE_VIOLATION'], 'still the compiled profile before');
  actors.invalidateAll();
  actors.dispatch(work('a', 50));
  actors.dispatch(work('b', 50));
  await flush();
  assert.equal(sink.seen.slice(3).map((s) => s.rows), [[50], [50]]);
  actors.stop();
});

test('a device whose profile cannot compile rejects uplinks instead of stopping the engine', async () => {
  const { directory, sink, actors } = setup();
  directory.devices.set('bad', device('bad', { type: 'no-such-type' }));
  directory.devices.set('good', device('good'));
  actors.dispatch(work('bad', 1));
  actors.dispatch(work('good', 2));
  await flush();
  const bad = sink.seen.find((s) => s.work.envelope.deviceId === 'bad');
  const good = sink.seen.find((s) => s.work.envelope.deviceId === 'good');
  assert.ok(bad && bad.codes.length === 1, 'bad device rejected');
  assert.equal(good?.rows, [2]);
  actors.stop();
});

test('the soft actor cap passivates idle actors early', async () => {
  const { directory, actors } = setup({ maxActors: 10, passivateAfterMs: 1_000_000 });
  for (let i = 0; i < 50; i++) {
    directory.devices.set(`d${i}`, device(`d${i}`));
    actors.dispatch(work(`d${i}`, i));
    await flush();
  }
  assert.ok(actors.size <= 11, `live actors bounded (got ${actors.size})`);
  actors.stop();
});

test.run();
