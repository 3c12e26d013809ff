/**
 * The coalescing writers of connectivity on a SimulatedClock: engine/kernel/CoalescingWriter.ts
 * (latest value per key, bounded while the registry is down, retried after the backoff),
 * engine/connectivity/ActivityRecorder.ts and EdgePresence.ts. The registry contract and the
 * service tests cover the SQL and the wiring.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { CoalescingWriter } from '../../../engine/kernel/CoalescingWriter.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { ActivityRecorder } from '../../../engine/connectivity/ActivityRecorder.ts';
import { EdgePresence } from '../../../engine/connectivity/EdgePresence.ts';
import type { DeviceActivity, OpenedSession } from '../../../engine/ports/connectivityRegistry.ts';
import type { StateRow } from '../../../schemas/messages.ts';

const test = suite('connectivity writers');
const settle = () => new Promise((resolve) => setImmediate(resolve));

test('CoalescingWriter: one write per interval with the merged value per key; no timer while idle', async () => {
  const clock = new SimulatedClock(0);
  const writes: [string, number][][] = [];
  const w = new CoalescingWriter<string, number>({ clock, intervalMs: 1000, merge: (a, b) => Math.max(a, b), write: async (m) => { writes.push([...m]); } });
  assert.is(clock.pending, 0);
  w.set('a', 5); w.set('a', 3); w.set('b', 1); w.set('a', 7);
  assert.is(w.size, 2);
  clock.advance(999);
  assert.is(writes.length, 0);
  clock.advance(1);
  await settle();
  assert.equal(writes, [[['a', 7], ['b', 1]]]);
  assert.is(clock.pending, 0, 'idle: no timer');
  await w.stop();
});

test('CoalescingWriter: a registry outage keeps one entry per key and retries after the backoff; a non-retriable error drops the flush', async () => {
  const clock = new SimulatedClock(0);
  let failWith: FleetError | undefined = new FleetError('UNAVAILABLE', 'down');
  const writes: [string, number][][] = [];
  const errors: [string, boolean][] = [];
  const w = new CoalescingWriter<string, number>({
    clock, intervalMs: 100, merge: (a, b) => Math.max(a, b),
    write: async (m) => { if (failWith !== undefined) throw failWith; writes.push([...m]); },
    backoff: (attempt) => 1000 * 2 ** attempt,
    onError: (e, retrying) => errors.push([e.code, retrying]),
  });
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 1000; i++) w.set(`d${i % 10}`, round * 1000 + i);
    clock.advance(100_000);
    await settle();
  }
  assert.ok(errors.length >= 3 && errors.every(([code, retrying]) => code === 'UNAVAILABLE' && retrying));
  assert.is(w.size, 10, 'bounded by the keys');
  failWith = undefined;
  clock.advance(100_000);
  await settle();
  assert.equal(writes, [Array.from({ length: 10 }, (_, k) => [`d${k}`, 2990 + k])]);
  failWith = new FleetError('VALIDATION_FAILED', 'bad');
  w.set('x', 1);
  clock.advance(100);
  await settle();
  assert.equal(errors.at(-1), ['VALIDATION_FAILED', false]);
  assert.is(w.size, 0, 'dropped');
  await w.stop();
});

test('ActivityRecorder: stored rows and refusals become the latest receive time per device; stop writes what waits', async () => {
  const clock = new SimulatedClock(0);
  const calls: DeviceActivity[][] = [];
  const r = new ActivityRecorder({ registry: { recordActivity: async (seen) => { calls.push([...seen]); } }, clock });
  const row = (deviceId: string, receivedAt: number): StateRow => ({ deviceId, asset: 'a', ts: receivedAt, receivedAt, value: 1, uplinkId: 'u' });
  r.stored([row('a', 10), row('a', 10), row('b', 5), row('a', 20)]);
  r.refused([{ code: 'INVALID_STATE', reason: 'x', rejectedAt: 30, envelope: { id: 'u', channel: 'http', contentType: 'json', deviceId: 'b', receivedAt: 30, body: new Uint8Array() } }]);
  assert.is(r.pending, 2);
  await r.stop();
  assert.equal(calls, [[{ deviceId: 'a', at: 20 }, { deviceId: 'b', at: 30 }]]);
});

test('EdgePresence: lease renewed on its schedule, sessions counted per device, recorded again when the lease was lost, dropped on stop', async () => {
  const clock = new SimulatedClock(1000);
  const log: string[] = [];
  let held = false;
  const presence = new EdgePresence({
    clock, edgeId: 'E', leaseMs: 3000, flushIntervalMs: 200,
    registry: {
      renewEdge: async (edgeId, until) => { log.push(`renew ${edgeId} ${until}`); const was = held; held = true; return was; },
      recordSessions: async (_edge, opened: readonly OpenedSession[], closed: readonly string[]) => { log.push(`sessions +${opened.map((o) => `${o.deviceId}@${o.since}`).join(',')} -${closed.join(',')}`); },
      dropEdge: async (edgeId) => { log.push(`drop ${edgeId}`); },
    },
  });
  await presence.start();
  presence.opened('a');
  presence.opened('a');
  presence.opened('b');
  presence.closed('b');
  presence.closed('a');
  clock.advance(200);
  await settle();
  assert.equal(log, ['renew E 4000', 'sessions +a@1000 -b']);
  clock.advance(800);
  await settle();
  assert.equal(log.at(-1), 'renew E 5000', 'renewed every lease / 3');
  held = false; // dropped meanwhile (an hour cut off)
  clock.advance(1000);
  await settle();
  clock.advance(200);
  await settle();
  assert.equal(log.slice(-2), ['renew E 6000', 'sessions +a@1000 -'], 'the open session recorded again');
  presence.closed('a');
  await presence.stop();
  assert.equal(log.slice(-2), ['sessions + -a', 'drop E']);
  clock.advance(10_000);
  assert.is(clock.pending, 0, 'no timer after stop');
});

test.run();
