/**
 * Command actors on a simulated clock with a scripted transport: order per device, offline queue
 * delivered on reconnect, expiry, resend after no acknowledgement, device commands without a
 * downlink, bounded queues with reserved places, commands refused for a full queue.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { CommandActors, type AcceptedCommand } from '../../../engine/actors/CommandActors.ts';
import type { FleetError } from '../../../engine/kernel/errors.ts';
import type { AssetCommandDelivery, CommandTransport, DeliveryOutcome } from '../../../engine/ports/commandTransport.ts';
import { initialTransition, transition } from 'xstate';
import { commandMachine, initialCommandSnapshot, nextCommandSnapshot, type CommandEvent } from '../../../engine/actors/commandMachine.ts';

class FakeTransport implements CommandTransport {
  online = new Set<string>();
  delivered: { deviceId: string; asset: string; body: any }[] = [];
  /** Outcomes to return for the next deliveries to online devices (default delivered). */
  script: DeliveryOutcome[] = [];
  #listeners = new Set<(id: string) => void>();
  async deliver(d: AssetCommandDelivery): Promise<DeliveryOutcome> {
    if (!this.online.has(d.deviceId)) return 'offline';
    const outcome = this.script.shift() ?? 'delivered';
    if (outcome === 'delivered') this.delivered.push({ deviceId: d.deviceId, asset: d.asset.name, body: JSON.parse(new TextDecoder().decode(d.payload)) });
    return outcome;
  }
  onReachable(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  connect(id: string): void {
    this.online.add(id);
    for (const l of this.#listeners) l(id);
  }
}

const flush = () => new Promise((r) => setImmediate(r));
let n = 0;
const cmd = (deviceId: string, value: unknown, extra: Partial<AcceptedCommand> = {}): AcceptedCommand =>
  ({ id: `c${++n}`, deviceId, kind: 'asset', asset: { id: 'A', name: 'led' }, value, at: '2026-01-01T00:00:00.000Z', issuer: 'test', ...extra }) as AcceptedCommand;

test('commands for an offline device wait and are delivered in order on reconnect; lifecycle recorded', async () => {
  const clock = new SimulatedClock(1000);
  const t = new FakeTransport();
  const changes: string[] = [];
  const actors = new CommandActors({ clock, transport: t, onChange: (v) => changes.push(`${v.id}:${v.status}`) });
  const ids = [1, 2, 3].map((v) => actors.submit(cmd('d1', v)).id);
  await flush();
  assert.equal(t.delivered, []);
  assert.equal(actors.recent('d1').map((v) => v.status), ['queued', 'queued', 'queued']);
  t.connect('d1');
  for (let i = 0; i < 10; i++) await flush();
  assert.equal(t.delivered.map((d) => d.body), [1, 2, 3].map((v) => ({ value: v, at: '2026-01-01T00:00:00.000Z' })));
  assert.equal(actors.recent('d1').map((v) => [v.id, v.status]), ids.reverse().map((id) => [id, 'delivered']));
  assert.ok(changes.includes(`${ids[2]}:sent`) && changes.includes(`${ids[2]}:queued`));
  assert.is(actors.pending('d1'), 0);
  assert.is(clock.pending, 0, 'expiry timers are cancelled once delivered');
  actors.stop();
});

test('expiry: a command never delivered expires with COMMAND_EXPIRED, the next one still goes', async () => {
  const clock = new SimulatedClock(0);
  const t = new FakeTransport();
  const actors = new CommandActors({ clock, transport: t, expiryMs: 60_000 });
  const a = actors.submit(cmd('d2', 'old'));
  clock.advance(30_000);
  const b = actors.submit(cmd('d2', 'new'));
  clock.advance(30_000);
  await flush();
  assert.is(actors.recent('d2').find((v) => v.id === a.id)!.status, 'expired');
  assert.is(actors.recent('d2').find((v) => v.id === a.id)!.code, 'COMMAND_EXPIRED');
  t.connect('d2');
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(t.delivered.map((d) => d.body), [{ value: 'new', at: '2026-01-01T00:00:00.000Z' }]);
  assert.is(actors.recent('d2').find((v) => v.id === b.id)!.status, 'delivered');
  actors.stop();
});

test('an unacknowledged delivery is resent after a backoff, before later commands (order kept)', async () => {
  const clock = new SimulatedClock(0);
  const t = new FakeTransport();
  t.online.add('d3');
  t.script = ['unacknowledged', 'unacknowledged'];
  const actors = new CommandActors({ clock, transport: t, retryBaseMs: 1000 });
  const first = actors.submit(cmd('d3', 1));
  actors.submit(cmd('d3', 2));
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(t.delivered, []);
  clock.advance(1000);
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(t.delivered, [], 'second attempt also unacknowledged');
  clock.advance(1999);
  await flush();
  assert.equal(t.delivered, [], 'backoff doubled');
  clock.advance(1);
  for (let i = 0; i < 10; i++) await flush();
  assert.equal(t.delivered.map((d) => d.body.value), [1, 2]);
  assert.is(actors.recent('d3').find((v) => v.id === first.id)!.attempts, 3);
  actors.stop();
});

test('device commands fail with NO_DOWNLINK until a downlink is configured; with one they are sent', async () => {
  const clock = new SimulatedClock(0);
  const actors = new CommandActors({ clock });
  const v = actors.submit(cmd('d4', undefined, { kind: 'device', assets: { led: true } } as never));
  await flush();
  assert.is(actors.recent('d4')[0].status, 'failed');
  assert.is(actors.recent('d4')[0].code, 'NO_DOWNLINK');
  assert.is(v.kind, 'device');
  const sent: unknown[] = [];
  const withDownlink = new CommandActors({ clock, downlink: { send: async (c) => { sent.push(c.assets); } } });
  withDownlink.submit(cmd('d4', undefined, { kind: 'device', assets: { led: true, level: 3 } } as never));
  for (let i = 0; i < 3; i++) await flush();
  assert.equal(sent, [{ led: true, level: 3 }]);
  assert.is(withDownlink.recent('d4')[0].status, 'delivered');
});

test('an asset command marked via downlink goes to the downlink as the device command {asset: value}, never to MQTT; unmarked ones still go to MQTT', async () => {
  const clock = new SimulatedClock(0);
  const t = new FakeTransport();
  t.online.add('d7');
  const sent: unknown[] = [];
  const changes: string[] = [];
  const actors = new CommandActors({ clock, transport: t, downlink: { send: async (c) => { sent.push([c.commandId, c.assets, c.at]); } }, onChange: (v) => changes.push(`${v.id}:${v.status}`) });
  const lora = actors.submit(cmd('d7', true, { via: 'downlink' } as never));
  const mqtt = actors.submit(cmd('d7', false));
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(sent, [[lora.id, { led: true }, '2026-01-01T00:00:00.000Z']]);
  assert.equal(t.delivered.map((d) => d.body.value), [false]);
  assert.equal(actors.recent('d7').map((v) => [v.id, v.kind, v.asset, v.status]), [[mqtt.id, 'asset', 'led', 'delivered'], [lora.id, 'asset', 'led', 'delivered']]);
  assert.equal(changes.filter((c) => c.startsWith(`${lora.id}:`)), [`${lora.id}:queued`, `${lora.id}:sent`, `${lora.id}:delivered`]);
  // Without a downlink it fails as a device command does, whether or not the device is on MQTT.
  const none = new CommandActors({ clock, transport: t });
  none.submit(cmd('d7', true, { via: 'downlink' } as never));
  await flush();
  assert.equal([none.recent('d7')[0].status, none.recent('d7')[0].code], ['failed', 'NO_DOWNLINK']);
  assert.is(t.delivered.length, 1, 'nothing went to MQTT');
  actors.stop();
  none.stop();
});

test('the per-device queue is bounded: COMMAND_QUEUE_FULL (429, retriable, with a Retry-After hint)', () => {
  const clock = new SimulatedClock(0);
  const actors = new CommandActors({ clock, transport: new FakeTransport(), maxQueuePerDevice: 2 });
  actors.submit(cmd('d5', 1));
  actors.submit(cmd('d5', 2));
  try {
    actors.submit(cmd('d5', 3));
    assert.unreachable('must refuse');
  } catch (error) {
    const e = error as FleetError;
    assert.equal([e.code, e.status, e.retriable, e.detail], ['COMMAND_QUEUE_FULL', 429, true, { retryAfter: 5 }]);
  }
  actors.submit(cmd('d6', 1));
  actors.stop();
});

const refusedCode = (run: () => unknown): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    return (error as FleetError).code;
  }
};

test('reserved places count against the queue; the reserved command takes its place, release gives it back', () => {
  const clock = new SimulatedClock(0);
  const actors = new CommandActors({ clock, transport: new FakeTransport(), maxQueuePerDevice: 3 });
  const [a, b, c, d] = [cmd('d7', 1), cmd('d7', 2), cmd('d7', 3), cmd('d7', 4)];
  actors.reserve('d7', a.id);
  actors.reserve('d7', b.id);
  actors.submit(c);
  assert.is(refusedCode(() => actors.reserve('d7', d.id)), 'COMMAND_QUEUE_FULL', 'two reserved and one waiting fill a queue of three');
  assert.is(refusedCode(() => actors.submit(d)), 'COMMAND_QUEUE_FULL', 'an unreserved command finds no room either');
  assert.is(refusedCode(() => actors.submit(a)), undefined, 'a reserved command always fits');
  assert.is(actors.release(b.id), true);
  assert.is(actors.release(b.id), false, 'released once');
  actors.submit(d);
  assert.is(actors.pending('d7'), 3);
  assert.is(refusedCode(() => actors.submit(b)), 'COMMAND_QUEUE_FULL', 'its place was given back and taken');
  actors.reserve('d8', 'other-device');
  assert.is(refusedCode(() => actors.reserve('d8', 'other-device')), undefined, 'reserving again is a no-op');
  actors.stop();
});

test('refuse: a command that is not queued is failed with the refusal\'s code and reason, listed and reported, its place released', () => {
  const clock = new SimulatedClock(5000);
  const changes: string[] = [];
  const actors = new CommandActors({ clock, transport: new FakeTransport(), maxQueuePerDevice: 1, onChange: (v) => changes.push(`${v.id}:${v.status}:${v.code ?? ''}`) });
  const [a, b] = [cmd('d9', 1), cmd('d9', 2)];
  actors.submit(a);
  actors.reserve('d10', b.id);
  let failure: FleetError | undefined;
  try {
    actors.submit({ ...b, deviceId: 'd9' });
  } catch (error) {
    failure = error as FleetError;
  }
  const view = actors.refuse({ ...b, deviceId: 'd9' }, failure!);
  assert.equal({ ...view }, {
    id: b.id, deviceId: 'd9', kind: 'asset', asset: 'led', value: 2, at: b.at, issuer: 'test',
    status: 'failed', code: 'COMMAND_QUEUE_FULL', reason: failure!.message, updatedAt: 5000, attempts: 0,
  });
  assert.equal(changes, [`${a.id}:queued:`, `${a.id}:sent:`, `${b.id}:failed:COMMAND_QUEUE_FULL`]);
  assert.equal(actors.recent('d9').map((v) => `${v.id}:${v.status}`), [`${b.id}:failed`, `${a.id}:sent`]);
  assert.is(actors.pending('d9'), 1, 'nothing queued for it');
  assert.is(actors.release(b.id), false, 'its reservation went with it');
  actors.stop();
});

test('the command lifecycle steps (computed once per state and event) are xstate\'s own, on every path; an event that does not apply keeps the snapshot', () => {
  const events: CommandEvent['type'][] = ['SEND', 'DELIVERED', 'REQUEUE', 'EXPIRE', 'FAIL'];
  assert.is(initialCommandSnapshot().value, initialTransition(commandMachine)[0].value);
  assert.is(initialCommandSnapshot(), initialCommandSnapshot(), 'one initial snapshot, shared');
  // Every sequence of up to four events, from the initial state, twice (the second time from the memo).
  const walk = (depth: number, ours: ReturnType<typeof initialCommandSnapshot>, theirs: ReturnType<typeof initialCommandSnapshot>, path: string): void => {
    assert.is(ours.value, theirs.value, path);
    assert.is(ours.status, theirs.status, path);
    if (depth === 0) return;
    for (const type of events) {
      const next = nextCommandSnapshot(ours, { type });
      const reference = transition(commandMachine, theirs, { type })[0];
      if (reference.value === theirs.value) assert.is(next, ours, `${path} ${type}: not applicable, same snapshot`);
      walk(depth - 1, next, reference, `${path} ${type}`);
    }
  };
  for (let round = 0; round < 2; round++) walk(4, initialCommandSnapshot(), initialTransition(commandMachine)[0], 'initial');
});

test('a device that becomes reachable while a delivery is on its way is tried again once that delivery finds it offline', async () => {
  const clock = new SimulatedClock(1000);
  let answer!: (outcome: DeliveryOutcome) => void;
  const listeners = new Set<(id: string) => void>();
  const attempts: string[] = [];
  const transport: CommandTransport = {
    deliver: (d) => {
      attempts.push(d.commandId);
      // The first attempt is answered late (a request to another edge); later ones at once.
      return attempts.length === 1 ? new Promise((resolve) => { answer = resolve; }) : Promise.resolve('delivered');
    },
    onReachable: (listener) => { listeners.add(listener); return () => listeners.delete(listener); },
  };
  const actors = new CommandActors({ clock, transport });
  const { id } = actors.submit(cmd('d9', 1));
  await flush();
  assert.equal(attempts, [id]);
  for (const l of listeners) l('d9');
  answer('offline');
  for (let i = 0; i < 5; i++) await flush();
  assert.equal(attempts, [id, id], 'tried again without waiting for another reachable');
  assert.is(actors.recent('d9')[0].status, 'delivered');
  actors.stop();
});

test.run();
