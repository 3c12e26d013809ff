/**
 * The live data core on a real local log: the publisher's records, the hub's fan-out by device and
 * by ground, cursors (text form, hostile text), resume from the ring without gaps or repeats, reset
 * when a cursor is older than the ring, a cursor from an edge further ahead, subscribers dropped when
 * they refuse an event, and the publisher dropping (and counting) instead of waiting; where the hub is
 * the topic's only reader, events built only while it wants them, and a cursor from before a gap reset.
 */
import * as assert from 'uvu/assert';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { SimulatedClock, systemClock, type Clock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { decodeCursor, encodeCursor, MAX_CURSOR_CHARS } from '../../../engine/live/liveCursor.ts';
import { commandEvent, rejectionEvents, stateEvents } from '../../../engine/live/liveEvents.ts';
import { ALL_KINDS, LiveHub, type HubEvent, type LiveFilter } from '../../../engine/live/LiveHub.ts';
import { LivePublisher } from '../../../engine/live/LivePublisher.ts';
import type { LiveSubscriber } from '../../../engine/live/LiveSubscription.ts';
import type { CommandView } from '../../../schemas/commands.ts';
import type { DeadLetter, StateRow } from '../../../schemas/messages.ts';
import { suite } from '../../support/suite.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const test = suite('live hub');

class Collector implements LiveSubscriber {
  events: HubEvent[] = [];
  resets = 0;
  closed: string | undefined;
  /** Refuse (as an overflowing subscriber does) after this many events. */
  readonly limit: number;
  constructor(limit = Infinity) {
    this.limit = limit;
  }
  send(event: HubEvent): boolean {
    if (this.events.length >= this.limit) return false;
    this.events.push(event);
    return true;
  }
  reset(): void { this.resets++; }
  close(reason: string): void { this.closed = reason; }
  values(): unknown[] { return this.events.map((e) => (JSON.parse(e.json) as { value: unknown }).value); }
}

function row(deviceId: string, value: number): StateRow {
  return { deviceId, asset: 't', ts: Date.UTC(2026, 0, 1) + value, receivedAt: 1, value, uplinkId: `u${value}` };
}

const GROUNDS: Record<string, string> = { d1: 'g1', d2: 'g1', d3: 'g2' };

/**
 * A local log with topic `live`, a publisher and a started hub. `onlyReader`: the hub is the topic's
 * only reader, so the publisher asks it before building events (the embedded service's wiring).
 */
async function world(ringEvents = 1000, options: { clock?: Clock; onlyReader?: boolean; idle?: boolean } = {}) {
  const tmp = tempDir('live-hub');
  const log = createLocalLog({ dir: tmp.dir });
  await log.ensureTopics([{ name: 'live', partitions: 3 }]);
  const errors: FleetError[] = [];
  const hub = new LiveHub({ log, clock: options.clock ?? systemClock, topic: 'live', group: 'edge', groundOf: async (id) => GROUNDS[id], ringEvents, idleWhenUnwanted: options.idle, onError: (error) => errors.push(error) });
  const publisher = new LivePublisher({ log, clock: systemClock, topic: 'live', lingerMs: 0, wanted: options.onlyReader ? () => hub.wantsEvents() : undefined });
  await hub.start();
  return {
    log, publisher, hub, errors,
    async publishStates(deviceId: string, values: number[]) {
      publisher.publish(stateEvents(values.map((v) => row(deviceId, v))));
      await publisher.flush();
    },
    async close() {
      await hub.stop();
      await publisher.close();
      await log.close();
      tmp.remove();
    },
  };
}

const LETTER: DeadLetter = { code: 'PROFILE_VIOLATION', reason: 'too hot', asset: 't', rejectedAt: 5, envelope: { id: 'u5', channel: 'http', contentType: 'json', deviceId: 'd1', receivedAt: 5, body: new Uint8Array() } };
const VIEW: CommandView = { id: 'c1', deviceId: 'd1', kind: 'asset', asset: 'light', value: true, at: 'x', issuer: 'user:u', status: 'queued', updatedAt: 6, attempts: 0 };

const byDevice = (deviceId: string): LiveFilter => ({ deviceId, kinds: ALL_KINDS });

test('cursors: text round trip; malformed, oversized and foreign texts decode to nothing', () => {
  const cursor = [[0, 0], [35, 2], [123456789, 40]] as const;
  const text = encodeCursor(cursor);
  assert.is(text, '1.0.0~z.2~21i3v9.14');
  assert.equal(decodeCursor(text, 3), cursor);
  for (const bad of ['', '1.', '2.0.0~0.0~0.0', '1.0.0~0.0', '1.0.0~0.0~0.0~0.0', '1.-1.0~0.0~0.0', '1.0.0~0.0~0.Z', '1.0.0~0.0~zzzzzzzzzzzz.0',
    `1.${'0.0~'.repeat(2000)}0.0`, '1.0.0~0.0~0.0\n', '1.０.0~0.0~0.0', 'x'.repeat(MAX_CURSOR_CHARS + 1)]) {
    assert.is(decodeCursor(bad, 3), undefined, JSON.stringify(bad.slice(0, 40)));
  }
});

test('events reach the subscriptions of their device and ground only, in order, with the documented data', async () => {
  const w = await world();
  try {
    const d1 = new Collector();
    const g1 = new Collector();
    const g2 = new Collector();
    const states = new Collector();
    w.hub.subscribe(byDevice('d1'), d1);
    w.hub.subscribe({ groundId: 'g1', kinds: ALL_KINDS }, g1);
    w.hub.subscribe({ groundId: 'g2', kinds: ALL_KINDS }, g2);
    w.hub.subscribe({ deviceId: 'd1', kinds: new Set(['state']) }, states);
    await w.publishStates('d1', [1, 2, 3]);
    await w.publishStates('d2', [4]);
    w.publisher.publish(rejectionEvents([LETTER]));
    w.publisher.publish([commandEvent(VIEW)]);
    await w.publisher.flush();
    await waitFor(() => d1.events.length === 5 && g1.events.length === 6, 10_000, 'events');
    assert.equal(d1.events.map((e) => e.kind), ['state', 'state', 'state', 'rejection', 'command']);
    assert.equal(d1.values().slice(0, 3), [1, 2, 3]);
    assert.equal(JSON.parse(d1.events[0].json), { deviceId: 'd1', asset: 't', value: 1, at: '2026-01-01T00:00:00.001Z', receivedAt: 1, uplinkId: 'u1' });
    assert.equal(JSON.parse(d1.events[3].json), { deviceId: 'd1', code: 'PROFILE_VIOLATION', reason: 'too hot', asset: 't', rejectedAt: 5, uplinkId: 'u5' });
    assert.equal(JSON.parse(d1.events[4].json), { deviceId: 'd1', commandId: 'c1', status: 'queued', asset: 'light', attempts: 0, changedAt: 6 });
    assert.equal(states.events.map((e) => e.kind), ['state', 'state', 'state']);
    assert.is(g2.events.length, 0);
  } finally {
    await w.close();
  }
});

test('resume: every event after the cursor exactly once; an id older than the ring gets reset', async () => {
  const w = await world(5);
  try {
    const first = new Collector();
    w.hub.subscribe(byDevice('d1'), first);
    await w.publishStates('d1', [1, 2, 3]);
    await waitFor(() => first.events.length === 3, 10_000, 'three');
    const resumed = new Collector();
    w.hub.subscribe(byDevice('d1'), resumed, first.events[0].id);
    assert.equal(resumed.values(), [2, 3]);
    await w.publishStates('d1', [4]);
    await waitFor(() => resumed.events.length === 3, 10_000, 'the live one');
    assert.equal(resumed.values(), [2, 3, 4]);
    // Six more events push the first ones out of a ring of 5.
    await w.publishStates('d3', [5, 6, 7, 8, 9, 10]);
    await waitFor(() => w.hub.eventsIn === 10, 10_000, 'ten events in');
    const late = new Collector();
    w.hub.subscribe(byDevice('d1'), late, first.events[0].id);
    assert.is(late.resets, 1);
    assert.is(late.events.length, 0);
    const garbage = new Collector();
    w.hub.subscribe(byDevice('d1'), garbage, 'not a cursor');
    assert.is(garbage.resets, 1);
  } finally {
    await w.close();
  }
});

test('a cursor from an edge further ahead: what the client already saw is not sent again', async () => {
  const w = await world();
  try {
    const probe = new Collector();
    w.hub.subscribe(byDevice('d1'), probe);
    await w.publishStates('d1', [1]);
    await waitFor(() => probe.events.length === 1, 10_000, 'one');
    // The cursor another edge gives after values 2 and 3 (one record each, offsets o+1 and o+2): [o+3, 0].
    const [p] = [probe.events[0].partition];
    const ahead = decodeCursor(probe.events[0].id, 3)!.map((pos, i) => (i === p ? [pos[0] + 3, 0] as const : pos));
    const client = new Collector();
    w.hub.subscribe(byDevice('d1'), client, encodeCursor(ahead));
    await w.publishStates('d1', [2]);
    await w.publishStates('d1', [3]);
    await w.publishStates('d1', [4]);
    await waitFor(() => probe.events.length === 4, 10_000, 'four');
    assert.equal(client.values(), [4]);
  } finally {
    await w.close();
  }
});

test('a subscriber that refuses an event is dropped; the others go on', async () => {
  const w = await world();
  try {
    const slow = new Collector(1);
    const fine = new Collector();
    w.hub.subscribe(byDevice('d1'), slow);
    w.hub.subscribe(byDevice('d1'), fine);
    await w.publishStates('d1', [1, 2, 3]);
    await waitFor(() => fine.events.length === 3, 10_000, 'three');
    assert.is(slow.events.length, 1);
    assert.is(w.hub.subscribers, 1);
    await w.hub.stop();
    assert.is(fine.closed, 'closing');
  } finally {
    await w.close();
  }
});

test('registry changes end the subscriptions they withdraw, and only those', async () => {
  const w = await world();
  try {
    const owner = (subjectId: string, tokenHash: string, groundId: string) => ({ subjectId, tokenHash, groundId });
    const revoked = new Collector();
    const deleted = new Collector();
    const left = new Collector();
    const other = new Collector();
    w.hub.subscribe(byDevice('d2'), revoked, undefined, owner('user-a', 'hash-a', 'g1'));
    w.hub.subscribe(byDevice('d1'), deleted, undefined, owner('user-b', 'hash-b', 'g1'));
    w.hub.subscribe({ groundId: 'g1', kinds: ALL_KINDS }, left, undefined, owner('user-c', 'hash-c', 'g1'));
    w.hub.subscribe({ groundId: 'g2', kinds: ALL_KINDS }, other, undefined, owner('user-c', 'hash-c2', 'g2'));
    w.hub.apply({ kind: 'token-revoked', tokenHash: 'hash-a' });
    assert.is(revoked.closed, 'forbidden');
    assert.is(deleted.closed, undefined);
    w.hub.apply({ kind: 'device-deleted', deviceId: 'd1' });
    assert.is(deleted.closed, 'forbidden');
    w.hub.apply({ kind: 'membership-changed', groundId: 'g1', userId: 'user-c' });
    assert.is(left.closed, 'forbidden');
    assert.is(other.closed, undefined, 'the same user\'s stream of another ground stays');
    w.hub.apply({ kind: 'device-changed', deviceId: 'd3' });
    assert.is(w.hub.subscribers, 1);
  } finally {
    await w.close();
  }
});

test('a device\'s batch heavier than a record may be goes in several records, in order: on a log whose records hold 1 MiB, 3 MiB of one device\'s events all arrive', async () => {
  const w = await world(1000);
  try {
    const d1 = new Collector();
    w.hub.subscribe(byDevice('d1'), d1);
    const big = 'x'.repeat(16 * 1024);
    const rows = Array.from({ length: 200 }, (_, i) => ({ ...row('d1', i), value: `${i}:${big}` }));
    w.publisher.publish(stateEvents(rows));
    await w.publisher.flush();
    assert.is(w.publisher.dropped, 0, 'nothing dropped');
    assert.is(w.publisher.published, 200);
    await waitFor(() => d1.events.length === 200, 10_000, 'the 200 events');
    assert.equal(d1.values().map((v) => Number(String(v).split(':')[0])), rows.map((_, i) => i), 'in order');
    const records = await w.log.endOffsets('live');
    assert.ok(records.reduce((a, b) => a + b, 0) >= 7, `${records.join('+')} records of at most 512 KiB`);
  } finally {
    await w.close();
  }
});

test('the publisher never waits: past its bound it drops and counts', async () => {
  let release: () => void = () => undefined;
  const stuck = new Promise<void>((resolve) => { release = resolve; });
  const dropped: Array<[number, string | undefined]> = [];
  let appended = 0;
  const publisher = new LivePublisher({
    log: { append: async (_topic, records) => { await stuck; appended += records.length; return []; } },
    clock: systemClock, topic: 'live', lingerMs: 0, maxBatchEvents: 10, maxPendingEvents: 20,
    onDropped: (count, error) => dropped.push([count, error?.code]),
  });
  for (let i = 0; i < 30; i++) publisher.publish(stateEvents([row('d1', i)]));
  assert.is(publisher.dropped, 10);
  release();
  await publisher.flush();
  assert.is(publisher.published, 20);
  assert.ok(appended >= 2, 'one record per device per batch');
  const failing = new LivePublisher({
    log: { append: async () => { throw new FleetError('UNAVAILABLE', 'down'); } },
    clock: systemClock, topic: 'live', lingerMs: 0, onDropped: (count, error) => dropped.push([count, error?.code]),
  });
  failing.publish(stateEvents([row('d1', 1), row('d2', 2)]));
  await failing.flush();
  assert.is(failing.dropped, 2);
  assert.equal(dropped.at(-1), [2, 'UNAVAILABLE']);
  await publisher.close();
  await failing.close();
});

test('nobody subscribed: records are held unread, and a resume still gets every event after its cursor, by device and by ground', async () => {
  const w = await world();
  try {
    const probe = new Collector();
    const unsubscribe = w.hub.subscribe(byDevice('d1'), probe);
    await w.publishStates('d1', [1]);
    await waitFor(() => probe.events.length === 1, 10_000, 'one');
    const cursor = probe.events[0].id;
    unsubscribe();
    await w.publishStates('d1', [2, 3]);
    await w.publishStates('d3', [4]);
    await w.publishStates('d1', [5]);
    // Another client's record, without the count at its head: read at once, held as events.
    const foreign = { v: 1, e: [['state', { deviceId: 'd1', asset: 't', value: 6, at: '2026-01-01T00:00:00.006Z', receivedAt: 1, uplinkId: 'u6' }]] };
    await w.log.append('live', [{ key: 'd1', value: new TextEncoder().encode(JSON.stringify(foreign)) }]);
    // A record whose head counts one event but whose body is cut: held unread, so reported only when a resume reads it.
    await w.log.append('live', [{ key: 'd1', value: new TextEncoder().encode('{"v":1,"n":1,"e":[["state",{"deviceId":"d1"') }]);
    await waitFor(() => w.hub.eventsIn === 7, 10_000, 'seven events in');
    assert.equal(w.errors, []);
    const device = new Collector();
    w.hub.subscribe(byDevice('d1'), device, cursor);
    assert.equal(device.values(), [2, 3, 5, 6]);
    assert.is(device.resets, 0);
    assert.equal(w.errors.map((e) => e.code), ['VALIDATION_FAILED']);
    const ground = new Collector();
    w.hub.subscribe({ groundId: 'g2', kinds: ALL_KINDS }, ground, cursor);
    assert.equal(ground.values(), [4]);
    assert.equal(JSON.parse(device.events[0].json), { deviceId: 'd1', asset: 't', value: 2, at: '2026-01-01T00:00:00.002Z', receivedAt: 1, uplinkId: 'u2' });
    // Resumed from a held event's id: exactly what came after it.
    const again = new Collector();
    w.hub.subscribe(byDevice('d1'), again, device.events[1].id);
    assert.equal(again.values(), [5, 6]);
    // Subscribed again, events are read and fanned out as they come.
    await w.publishStates('d1', [7]);
    await waitFor(() => device.events.length === 5, 10_000, 'the live one');
    assert.equal(device.values(), [2, 3, 5, 6, 7]);
  } finally {
    await w.close();
  }
});

test('records held unread count their events against the ring: a cursor they pushed out gets reset, a newer one resumes', async () => {
  const w = await world(5);
  try {
    const probe = new Collector();
    let unsubscribe = w.hub.subscribe(byDevice('d1'), probe);
    await w.publishStates('d1', [1]);
    await waitFor(() => probe.events.length === 1, 10_000, 'one');
    const old = probe.events[0].id;
    unsubscribe();
    // One record of six events: more than the ring holds, so nothing before or in it can be resumed.
    await w.publishStates('d3', [2, 3, 4, 5, 6, 7]);
    await waitFor(() => w.hub.eventsIn === 7, 10_000, 'seven events in');
    const late = new Collector();
    w.hub.subscribe(byDevice('d1'), late, old);
    assert.is(late.resets, 1);
    assert.is(late.events.length, 0);
    unsubscribe = w.hub.subscribe(byDevice('d1'), probe);
    await w.publishStates('d1', [8]);
    await waitFor(() => probe.events.length === 2, 10_000, 'two');
    const recent = probe.events[1].id;
    unsubscribe();
    await w.publishStates('d1', [9, 10]);
    await waitFor(() => w.hub.eventsIn === 10, 10_000, 'ten events in');
    const resumed = new Collector();
    w.hub.subscribe(byDevice('d1'), resumed, recent);
    assert.is(resumed.resets, 0);
    assert.equal(resumed.values(), [9, 10]);
  } finally {
    await w.close();
  }
});

test('a states feed gets the stored states of the batches read while it wants them, and only those', async () => {
  const w = await world();
  try {
    let wanted = false;
    const fed: number[] = [];
    const stop = w.hub.followStates((rows) => fed.push(...rows.map((r) => r.value as number)), () => wanted);
    await w.publishStates('d1', [1, 2]);
    await waitFor(() => w.hub.eventsIn === 2, 10_000, 'two events in');
    assert.equal(fed, []);
    wanted = true;
    await w.publishStates('d1', [3]);
    await waitFor(() => fed.length === 1, 10_000, 'fed');
    assert.equal(fed, [3]);
    // From the start of every partition: the records held unread resume like the others.
    const probe = new Collector();
    w.hub.subscribe(byDevice('d1'), probe, '1.0.0~0.0~0.0');
    assert.equal(probe.values(), [1, 2, 3]);
    stop();
    await w.publishStates('d1', [4]);
    await waitFor(() => w.hub.eventsIn === 4, 10_000, 'four events in');
    assert.equal(fed, [3]);
  } finally {
    await w.close();
  }
});

test('the only reader: events are built only while someone may read them, resumes within the window, a cursor from before a gap gets reset', async () => {
  const clock = new SimulatedClock(1_000_000);
  const w = await world(1000, { clock, onlyReader: true });
  const { hub, publisher, log } = w;
  const appended = async () => (await log.endOffsets('live')).reduce((a, b) => a + b, 0);
  const states = async (values: number[]) => {
    publisher.states(values.map((v) => row('d1', v)));
    await publisher.flush();
  };
  try {
    // Nobody has subscribed since the start: nothing is built or appended, only counted.
    assert.is(hub.wantsEvents(), false);
    await states([1, 2]);
    publisher.rejections([LETTER]);
    publisher.command(VIEW);
    await publisher.flush();
    assert.is(publisher.unwatched, 4);
    assert.is(publisher.published, 0);
    assert.is(await appended(), 0);

    // A subscription: events flow.
    const first = new Collector();
    const unsubscribe = hub.subscribe(byDevice('d1'), first);
    assert.is(hub.wantsEvents(), true);
    await states([3, 4]);
    await waitFor(() => first.events.length === 2, 10_000, 'two events');
    assert.equal(first.values(), [3, 4]);
    unsubscribe();

    // Within the window after the last subscriber left: still published, and a resume has no gap.
    clock.advance(59_000);
    assert.is(hub.wantsEvents(), true);
    await states([5]);
    await waitFor(() => hub.eventsIn === 3, 10_000, 'event 5 in');
    const back = new Collector();
    const leave = hub.subscribe(byDevice('d1'), back, first.events[1].id);
    assert.equal([back.resets, back.values()], [0, [5]]);
    leave();

    // Past the window: not built; the next subscription resets a cursor from before the gap.
    clock.advance(60_000);
    assert.is(hub.wantsEvents(), false);
    await states([6]);
    assert.is(publisher.unwatched, 5);
    const late = new Collector();
    hub.subscribe(byDevice('d1'), late, back.events[0].id);
    assert.equal([late.resets, late.values()], [1, []]);
    await states([7]);
    await waitFor(() => late.events.length === 1, 10_000, 'live after the reset');
    assert.equal(late.values(), [7]);
    // A cursor given out after the gap resumes.
    const again = new Collector();
    hub.subscribe(byDevice('d1'), again, late.events[0].id);
    assert.equal([again.resets, again.values()], [0, []]);

    // A states feed that wants rows keeps events wanted with nobody subscribed.
    const other = new LiveHub({ log, clock, topic: 'live', group: 'edge-2', groundOf: async (id) => GROUNDS[id] });
    let feeding = false;
    other.followStates(() => undefined, () => feeding);
    assert.is(other.wantsEvents(), false);
    feeding = true;
    assert.is(other.wantsEvents(), true);
  } finally {
    await w.close();
  }
});

test('idle when unwanted: nobody listening, nothing is read; readingFromNow takes reading up at the end, and a cursor from before gets reset', async () => {
  const clock = new SimulatedClock(1_000_000);
  const w = await world(1000, { clock, idle: true });
  const { hub } = w;
  try {
    const first = new Collector();
    await hub.readingFromNow();
    const unsubscribe = hub.subscribe(byDevice('d1'), first);
    await w.publishStates('d1', [1]);
    await waitFor(() => first.events.length === 1, 10_000, 'the first event');
    unsubscribe();

    // Within the resume window the hub reads on (a client may come back with its cursor).
    clock.advance(30_000);
    assert.is(hub.reading, true);
    await w.publishStates('d1', [2]);
    await waitFor(() => hub.eventsIn === 2, 10_000, 'the event within the window is read');

    // Past it, the next look pauses every partition: what is published is not read.
    clock.advance(31_000);
    assert.is(hub.reading, false);
    assert.is(hub.idled, 1);
    await w.publishStates('d1', [3, 4]);
    await w.publishStates('d3', [5]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.is(hub.eventsIn, 2, 'nothing read while idle');

    // Taken up again at the end: the events published while idle are not read, the next ones are.
    const waking = [hub.readingFromNow(), hub.readingFromNow()];
    await Promise.all(waking);
    assert.is(hub.woke, 1, 'one wake for both calls');
    assert.is(hub.reading, true);
    const late = new Collector();
    hub.subscribe(byDevice('d1'), late, first.events[0].id);
    assert.equal([late.resets, late.values()], [1, []], 'a cursor from before the idle time is reset');
    const ground = new Collector();
    hub.subscribe({ groundId: 'g2', kinds: ALL_KINDS }, ground);
    await w.publishStates('d1', [6]);
    await w.publishStates('d3', [7]);
    await waitFor(() => late.events.length === 1 && ground.events.length === 1, 10_000, 'the events after the wake');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(late.values(), [6]);
    assert.equal(ground.values(), [7]);
    assert.is(hub.eventsIn, 4);

    // While subscribed it stays awake, however long; a cursor given out after the wake resumes.
    clock.advance(600_000);
    assert.is(hub.reading, true);
    const again = new Collector();
    hub.subscribe(byDevice('d1'), again, late.events[0].id);
    assert.equal([again.resets, again.values()], [0, []]);
    assert.equal(w.errors, []);
  } finally {
    await w.close();
  }
});

test('idle when unwanted: a woken hub nobody subscribes to idles again after the grace; a followed states feed keeps it reading', async () => {
  const clock = new SimulatedClock(1_000_000);
  const w = await world(1000, { clock, idle: true });
  const { hub } = w;
  try {
    clock.advance(1_000);
    assert.is(hub.reading, false, 'nobody ever listened: idle at the first look');
    await hub.readingFromNow();
    clock.advance(9_000);
    assert.is(hub.reading, true, 'the subscription that woke it has 10 s to come');
    clock.advance(2_000);
    assert.is(hub.reading, false);
    assert.is(hub.idled, 2);

    let feeding = false;
    const rows: StateRow[] = [];
    hub.followStates((batch) => rows.push(...batch), () => feeding);
    feeding = true;
    await hub.readingFromNow();
    await w.publishStates('d2', [8]);
    await waitFor(() => rows.length === 1, 10_000, 'the feed gets the state');
    clock.advance(120_000);
    assert.is(hub.reading, true, 'the feed is followed');
    feeding = false;
    clock.advance(1_000);
    assert.is(hub.reading, false, 'the feed no longer followed and nobody subscribed: idle at the next look');
    assert.is(hub.idled, 3);
  } finally {
    await w.close();
  }
});

test.run();
