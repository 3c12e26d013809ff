/**
 * DeliveryLane's decisions on a simulated clock, with an in-memory journal and a scripted
 * receiver: batching (size and linger), a batch saved before its first attempt and rebuilt from
 * the same records after a restart (same webhook-id, and not sent again once delivered), retries on
 * the schedule, Retry-After, the retry window, 410, pausing while a receiver fails, records finished
 * only once delivered, giving way while ingestion is busy, and what is skipped (other grounds,
 * records older than the integration, malformed records). The real receivers, signing and the log
 * are in the service tests.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { createJsonLogger } from '../../../engine/kernel/logger.ts';
import { OffsetTracker } from '../../../engine/consumer/OffsetTracker.ts';
import { DeliveryLane } from '../../../engine/integrations/DeliveryLane.ts';
import { retrySchedule } from '../../../engine/integrations/retrySchedule.ts';
import { eventsBody } from '../../../engine/integrations/eventsBody.ts';
import { SharedParses } from '../../../engine/integrations/SharedParses.ts';
import { BusyTurns } from '../../../engine/integrations/BusyTurns.ts';
import type { DeliveredBatch, DeliveryBatch, DeliveryError, IntegrationDeliveries } from '../../../engine/ports/integrationDeliveries.ts';
import type { Integration } from '../../../engine/ports/integrationRegistry.ts';
import type { LogRecord } from '../../../engine/ports/log.ts';
import type { WebhookAnswer, WebhookRequest } from '../../../engine/ports/webhooks.ts';

const GROUND = 'g1';
const encoder = new TextEncoder();

const integration: Integration = {
  id: 'i1', groundId: GROUND, name: 'app', kind: 'webhook', url: 'https://receiver.example/hook', events: ['state', 'rejection', 'command'],
  headers: {}, status: 'active', createdAt: 1_000_000, updatedAt: 1_000_000,
};

/** The journal as the SQL adapter keeps it, in memory. */
class MemoryJournal implements IntegrationDeliveries {
  readonly batches = new Map<string, DeliveryBatch>();
  delivered = 0;
  failedAttempts = 0;
  dropped = 0;
  lastError: DeliveryError | undefined;
  disabled: string | undefined;
  async saveBatch(batch: DeliveryBatch) { this.batches.set(`${batch.partition}/${batch.firstOffset}`, { ...batch }); }
  async saveBatches(batches: readonly DeliveryBatch[]) { for (const batch of batches) await this.saveBatch(batch); }
  async batchesDelivered(batches: readonly DeliveredBatch[]) { for (const b of batches) await this.batchDelivered(b.integrationId, b.partition, b.firstOffset, b.at); }
  async savedBatches(_id: string, partition: number) {
    return [...this.batches.values()].filter((b) => b.partition === partition).sort((a, b) => a.firstOffset - b.firstOffset).map((b) => ({ ...b }));
  }
  readonly prunes: number[] = [];
  async pruneBatches(_id: string, _partition: number, below: number) { this.prunes.push(below); }
  async attemptFailed(_id: string, partition: number, firstOffset: number, update: { attempts: number; nextAttemptAt: number; error: DeliveryError }) {
    const batch = this.batches.get(`${partition}/${firstOffset}`)!;
    batch.attempts = update.attempts;
    batch.nextAttemptAt = update.nextAttemptAt;
    this.failedAttempts++;
    this.lastError = update.error;
  }
  async batchDelivered(_id: string, partition: number, firstOffset: number, at: number) {
    const batch = this.batches.get(`${partition}/${firstOffset}`)!;
    batch.deliveredAt = at;
    this.delivered += batch.events;
  }
  async batchDropped(_id: string, partition: number, firstOffset: number, outcome: { at: number; error: DeliveryError }) {
    const batch = this.batches.get(`${partition}/${firstOffset}`)!;
    batch.deliveredAt = outcome.at;
    this.dropped += batch.events;
  }
  async addDropped(_id: string, count: number) { this.dropped += count; }
  async disableIntegration(_id: string, reason: string) { this.disabled = reason; }
  async deliveryStats() { return { delivered: this.delivered, failedAttempts: this.failedAttempts, dropped: this.dropped, pending: { events: 0 } }; }
}

function stateRecord(offset: number, deviceId: string, asset = 't', timestamp = 2_000_000, source?: number): LogRecord {
  const uplink = source ?? offset;
  const events = [{ type: 'state', id: `u${uplink}/${asset}`, deviceId, asset, value: uplink, at: '2026-01-01T00:00:00.000Z', receivedAt: '2026-01-01T00:00:00.000Z', uplinkId: `u${uplink}` }];
  const value = source === undefined ? { events } : { source: { partition: 0, offset: source }, events };
  return { topic: 'events', partition: 0, offset, key: deviceId, value: encoder.encode(JSON.stringify(value)), timestamp };
}

/** A run of uplinks as the engine writes it on the local log (schemas/events.ts UplinksRecord): `uplinks`, [device, source] each. */
function runRecord(offset: number, uplinks: [string, number][], raw = false): LogRecord {
  const parts = uplinks.map(([deviceId, source]) => ({ source: { partition: 0, offset: source }, deviceId, uplinkId: `u${source}`, receivedAt: 1_767_225_600_000, states: [['t', 1_767_225_600_000, source]] }));
  const text = raw ? `{ "uplinks": ${JSON.stringify(parts)}}` : JSON.stringify({ uplinks: parts });
  return { topic: 'events', partition: 0, offset, key: uplinks[0][0], value: encoder.encode(text), timestamp: 2_000_000 };
}

interface World {
  clock: SimulatedClock;
  journal: MemoryJournal;
  sent: WebhookRequest[];
  finished: number[];
  paused: number;
  resumed: number;
  repeated: number;
  lane: DeliveryLane;
  tracker: OffsetTracker;
}

interface WorldOptions {
  journal?: MemoryJournal;
  maxEvents?: number;
  maxHeldEvents?: number;
  retryWindowMs?: number;
  busy?(): boolean;
  /** The process's shared parses (SharedParses). */
  parses?: SharedParses;
  /** The integration's turns while busy (BusyTurns), and the clock of the lanes that share them. */
  turns?: BusyTurns;
  clock?: SimulatedClock;
  onMalformed?(): void;
  /** A receiver that answers when it is told (requests under way), instead of `answers` at once. */
  send?(request: WebhookRequest): Promise<WebhookAnswer>;
}

function world(answers: (request: WebhookRequest, index: number) => WebhookAnswer, options: WorldOptions = {}): World {
  const clock = options.clock ?? new SimulatedClock(2_000_000);
  const w = { clock, journal: options.journal ?? new MemoryJournal(), sent: [] as WebhookRequest[], finished: [] as number[], paused: 0, resumed: 0, repeated: 0 } as World;
  w.tracker = new OffsetTracker(0);
  w.lane = new DeliveryLane({
    partition: 0,
    settings: () => integration,
    journal: w.journal,
    transport: { send: options.send ?? (async (request) => answers(request, w.sent.push(request) - 1)) },
    secrets: async () => ['whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0'],
    groundOf: (deviceId) => (deviceId.startsWith('other') ? 'g2' : GROUND),
    clock,
    schedule: retrySchedule({ random: () => 0.5, giveUpAfterMs: options.retryWindowMs }),
    maxEvents: options.maxEvents ?? 3,
    lingerMs: 1000,
    maxHeldEvents: options.maxHeldEvents ?? 100,
    busy: options.busy,
    ...(options.parses === undefined ? {} : { expand: (record: LogRecord, groundId: string) => options.parses!.expand(record, groundId) }),
    ...(options.turns === undefined ? {} : { turns: options.turns }),
    finish: (offset) => { w.finished.push(offset); w.tracker.finish(offset); },
    pause: () => { w.paused++; },
    resume: () => { w.resumed++; },
    hooks: { delivered() {}, failedAttempt() {}, dropped() {}, disabled() {}, malformed() { options.onMalformed?.(); }, repeated() { w.repeated++; } },
    logger: createJsonLogger({ level: 'error', write: () => undefined }),
  });
  return w;
}

const ok: WebhookAnswer = { outcome: { kind: 'delivered', status: 200 }, status: 200, body: '' };
const failing: WebhookAnswer = { outcome: { kind: 'retry', reason: 'status', status: 500 }, status: 500, body: 'down' };

/** Lets the lane's promises run, advancing the simulated clock by `ms` in small steps. */
async function run(w: World, ms = 0): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  for (let left = ms; left > 0; left -= Math.min(left, 100)) {
    w.clock.advance(Math.min(left, 100));
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  }
}

const eventIds = (request: WebhookRequest) => (request.events as { id: string }[]).map((e) => e.id);

test('a batch leaves at once when nothing is under way; the rest as soon as the request before it is answered', async () => {
  const w = world(() => ok, { maxEvents: 3 });
  await w.lane.take([stateRecord(0, 'd1')], w.tracker);
  await run(w);
  assert.equal(w.sent.map(eventIds), [['u0/t']], 'one event on an idle lane goes at once');
  await w.lane.take([1, 2, 3, 4, 5].map((o) => stateRecord(o, 'd1')), w.tracker);
  await run(w);
  assert.equal(w.sent.map(eventIds), [['u0/t'], ['u1/t', 'u2/t', 'u3/t'], ['u4/t', 'u5/t']], 'a full batch, then the rest');
  assert.equal(w.finished, [0, 1, 2, 3, 4, 5]);
  assert.ok((w.sent[0].events as { groundId: string }[]).every((e) => e.groundId === GROUND));
  assert.is(w.journal.delivered, 6);
  assert.is(new Set(w.sent.map((r) => r.messageId)).size, 3);
});

test('with the process\'s shared parses, a record another integration of the ground read is neither parsed nor expanded again: the same events, frozen, and the same body', async () => {
  const parses = new SharedParses();
  const records = [stateRecord(0, 'd1'), stateRecord(1, 'd2')];
  for (const r of records) parses.expand(r, integration.groundId);
  const first = world(() => ok, { parses });
  await first.lane.take(records, first.tracker);
  await run(first);
  assert.equal([parses.hits, parses.misses], [2, 2], 'both records read from the shared parses');
  assert.equal(first.sent.flatMap(eventIds), ['u0/t', 'u1/t']);
  const second = world(() => ok, { parses });
  await second.lane.take(records, second.tracker);
  await run(second);
  assert.equal([parses.hits, parses.misses], [4, 2]);
  const [a, b] = [first.sent[0].events, second.sent[0].events];
  assert.is(b[0], a[0], 'one expansion for both integrations');
  assert.ok(Object.isFrozen(a[0]));
  assert.is(eventsBody(b), eventsBody(a));
  assert.is(eventsBody(a), JSON.stringify({ events: a }));
});

test('while ingestion is busy, the lane waits up to 1 s before it takes records and again before it sends a batch; not busy, at once', async () => {
  let busy = true;
  const w = world(() => ok, { maxEvents: 3, busy: () => busy });
  let taken = false;
  const taking = w.lane.take([stateRecord(0, 'd1')], w.tracker).then(() => { taken = true; });
  await run(w, 900);
  assert.not.ok(taken, 'the records wait');
  await run(w, 200);
  await taking;
  assert.equal([w.sent.length, w.journal.batches.size], [0, 0], 'taken; the batch is neither saved nor sent yet');
  await run(w, 1000);
  assert.is(w.sent.length, 1, 'sent a second later: deliveries always move');
  assert.equal(w.finished, [0]);
  busy = false;
  await w.lane.take([stateRecord(1, 'd1')], w.tracker);
  await run(w);
  assert.equal(w.sent.map(eventIds), [['u0/t'], ['u1/t']], 'not busy: at once');
  busy = true;
  await run(w, 100);
  let stoppedTake = false;
  const late = w.lane.take([stateRecord(2, 'd1')], w.tracker).then(() => { stoppedTake = true; });
  await run(w, 100);
  w.lane.stop();
  await late;
  assert.ok(stoppedTake, 'stop() ends the wait');
  await run(w, 3000);
  assert.is(w.sent.length, 2, 'nothing taken after stop()');
  assert.equal(w.finished, [0, 1]);
});

test('while busy, the lanes of one integration take turns: one step a second for the integration, in the order they asked; not busy, all at once', async () => {
  let busy = true;
  const clock = new SimulatedClock(2_000_000);
  const turns = new BusyTurns(1000);
  const lanes = [0, 1, 2].map(() => world(() => ok, { maxEvents: 3, busy: () => busy, clock, turns }));
  const stepsAt: Array<[number, string]> = [];
  const takes = lanes.map((w, i) => w.lane.take([stateRecord(i, `d${i}`)], w.tracker).then(() => { stepsAt.push([clock.now() - 2_000_000, `take ${i}`]); }));
  const advance = async (ms: number) => {
    for (let left = ms; left > 0; left -= 50) {
      clock.advance(50);
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await advance(3100);
  await Promise.all(takes);
  assert.equal(stepsAt.map(([, step]) => step), ['take 0', 'take 1', 'take 2'], 'in the order they asked');
  const gaps = stepsAt.slice(1).map(([at], i) => at - stepsAt[i][0]);
  assert.ok(stepsAt[0][0] >= 1000 && gaps.every((gap) => gap >= 1000), `one step a second: ${JSON.stringify(stepsAt)}`);
  assert.is(lanes.reduce((n, w) => n + w.sent.length, 0), 0, 'the sends wait their turn too');
  await advance(1000);
  assert.is(lanes.reduce((n, w) => n + w.sent.length, 0), 1, 'the next second, one send');
  busy = false;
  await advance(100);
  assert.equal(lanes.map((w) => w.sent.length), [1, 1, 1], 'not busy: the others at once');

  // Eight lanes asking at once: no step waits past 5 s for its turn (a Kafka consumer holding its batch longer would be evicted).
  busy = true;
  const more = Array.from({ length: 8 }, () => world(() => ok, { maxEvents: 3, busy: () => busy, clock, turns }));
  const asked = clock.now();
  const waits: number[] = [];
  const reads = more.map((w, i) => w.lane.take([stateRecord(10 + i, `e${i}`)], w.tracker).then(() => { waits.push(clock.now() - asked); }));
  await advance(5200);
  await Promise.all(reads);
  assert.is(waits.length, 8);
  assert.ok(Math.max(...waits) <= 5050, `the longest wait: ${Math.max(...waits)} ms`);
  assert.ok(waits.filter((wait) => wait < 5000).length >= 4, `the first in line in turn, a second apart: ${JSON.stringify(waits)}`);
});

test('the delivered batches the cursor passed are forgotten every 10 s, but not while ingestion is busy: that waits until it is not', async () => {
  let busy = false;
  const w = world(() => ok, { maxEvents: 1, busy: () => busy });
  let offset = 0;
  const deliverOne = async () => {
    const taking = w.lane.take([stateRecord(offset, 'd1')], w.tracker);
    offset++;
    await run(w, busy ? 2100 : 0);
    await taking;
    await run(w);
  };
  for (let i = 0; i < 3; i++) await deliverOne();
  assert.equal(w.journal.prunes, [], 'the first look only marks where the cursor is (past offset 0)');
  await run(w, 10_000);
  busy = true;
  await deliverOne();
  assert.is(w.sent.length, 4);
  assert.equal(w.journal.prunes, [], 'busy: not now');
  busy = false;
  await deliverOne();
  assert.equal(w.journal.prunes, [1], 'no longer busy: the batches below the mark');
});

test('a batch never holds more than maxEvents: it closes before a record that would pass it; a larger record goes alone, whole', async () => {
  const w = world(() => ok, { maxEvents: 3 });
  const record = (offset: number, states: number): LogRecord => {
    const events = Array.from({ length: states }, (_, i) => ({ type: 'state', id: `u${offset}/a${i}`, deviceId: 'd1', asset: `a${i}`, value: i, at: '2026-01-01T00:00:00.000Z', receivedAt: '2026-01-01T00:00:00.000Z', uplinkId: `u${offset}` }));
    return { topic: 'events', partition: 0, offset, key: 'd1', value: encoder.encode(JSON.stringify({ events })), timestamp: 2_000_000 };
  };
  await w.lane.take([record(0, 1)], w.tracker);
  await w.lane.take([record(1, 2), record(2, 2), record(3, 5), record(4, 1)], w.tracker);
  await run(w, 2000);
  assert.equal(w.sent.map((r) => r.events.length), [1, 2, 2, 5, 1]);
  assert.equal(w.sent.map(eventIds).flat(), [0, 1, 2, 3, 4].flatMap((o) => Array.from({ length: [1, 2, 2, 5, 1][o] }, (_, i) => `u${o}/a${i}`)), 'every event once, in order');
  assert.equal(w.finished, [0, 1, 2, 3, 4]);
});

test('while a request is under way, events gather until it is answered; the linger closes a batch, the answer sends it', async () => {
  const sent: WebhookRequest[] = [];
  const answers: ((answer: WebhookAnswer) => void)[] = [];
  const w = world(() => ok, { maxEvents: 10, send: (request) => new Promise((resolve) => { sent.push(request); answers.push(resolve); }) });
  await w.lane.take([stateRecord(0, 'd1')], w.tracker);
  await run(w);
  assert.is(sent.length, 1);
  await w.lane.take([stateRecord(1, 'd1'), stateRecord(2, 'd1')], w.tracker);
  await run(w, 500);
  assert.is(sent.length, 1, 'gathering while the first request is under way');
  answers.shift()!(ok);
  await run(w);
  assert.equal(sent.map(eventIds), [['u0/t'], ['u1/t', 'u2/t']], 'sent as soon as the first was answered');
  await w.lane.take([stateRecord(3, 'd1')], w.tracker);
  await run(w, 1000);
  assert.is(sent.length, 2, 'one request in flight per partition: the linger closes the batch, it waits its turn');
  answers.shift()!(ok);
  await run(w);
  assert.equal(sent.map(eventIds), [['u0/t'], ['u1/t', 'u2/t'], ['u3/t']]);
  answers.shift()!(ok);
  await run(w);
  assert.equal(w.finished, [0, 1, 2, 3]);
});

test('records of other grounds, older than the integration or malformed are skipped and finished at once', async () => {
  const w = world(() => ok);
  const junk: LogRecord = { ...stateRecord(3, 'd1'), value: encoder.encode('{"events":[{"type":"state"}]}') };
  const forged: LogRecord = { ...stateRecord(4, 'd1'), value: encoder.encode(JSON.stringify({ events: [{ type: 'state', id: 'x', deviceId: 'd2', asset: 't' }] })) };
  const old = stateRecord(2, 'd1', 't', integration.createdAt - 60_000);
  await w.lane.take([stateRecord(0, 'other-device'), stateRecord(1, 'd1'), old, junk, forged], w.tracker);
  await run(w, 1000);
  assert.equal(w.sent.map(eventIds), [['u1/t']]);
  assert.equal([...w.finished].sort(), [0, 1, 2, 3, 4]);
});

test('a failing receiver: retried on the schedule with the same webhook-id, the partition paused, Retry-After honoured, then delivered', async () => {
  const answers = [failing, failing, { outcome: { kind: 'retry', reason: 'status', status: 429, retryAfterMs: 30_000 }, status: 429, body: '' } as WebhookAnswer];
  const w = world((_r, i) => answers[i] ?? ok, { maxEvents: 2, maxHeldEvents: 3 });
  await w.lane.take([0, 1, 2, 3].map((o) => stateRecord(o, 'd1')), w.tracker);
  await run(w);
  assert.is(w.sent.length, 1);
  assert.is(w.paused, 1, 'more than maxHeldEvents held: the partition is paused');
  await run(w, 999);
  assert.is(w.sent.length, 1, 'the first retry is not before about 1 s');
  await run(w, 1);
  assert.is(w.sent.length, 2);
  await run(w, 2000);
  assert.is(w.sent.length, 3, 'then 2 s later');
  await run(w, 29_000);
  assert.is(w.sent.length, 3, 'Retry-After: 30 s is waited out');
  await run(w, 1000);
  assert.ok(w.sent.length >= 4);
  assert.equal(new Set(w.sent.slice(0, 4).map((r) => r.messageId)).size, 1, 'every attempt of a batch has its webhook-id');
  assert.equal(w.finished.slice(0, 2), [0, 1], 'its records finish only once delivered');
  assert.is(w.journal.failedAttempts, 3);
  assert.equal(w.journal.lastError, { status: 429, message: '', at: w.journal.lastError!.at });
  await run(w, 1000);
  assert.equal(w.finished, [0, 1, 2, 3]);
  assert.is(w.resumed, 1);
});

test('retryNow: a batch waiting out its backoff is tried at once (the receiver is back)', async () => {
  const answers = [failing, failing, failing];
  const w = world((_r, i) => answers[i] ?? ok);
  await w.lane.take([stateRecord(0, 'd1')], w.tracker);
  await run(w, 3000);
  assert.is(w.sent.length, 3, 'tried at once, after 1 s and after 2 more');
  await run(w, 1000);
  assert.is(w.sent.length, 3, 'the next attempt is 4 s away');
  w.lane.retryNow();
  await run(w);
  assert.is(w.sent.length, 4);
  assert.equal(w.finished, [0]);
  w.lane.retryNow();
  await run(w);
  assert.is(w.sent.length, 4, 'nothing waiting: nothing to do');
});

test('after a restart, a saved batch is rebuilt from the same records with its webhook-id; a delivered one is not sent again', async () => {
  const journal = new MemoryJournal();
  const first = world(() => failing, { journal, maxEvents: 2 });
  await first.lane.take([0, 1, 2].map((o) => stateRecord(o, 'd1')), first.tracker);
  await run(first, 1000);
  const id = first.sent[0].messageId;
  first.lane.stop();
  assert.equal(first.finished, [], 'nothing finished: all of it comes again');
  // A restart: the records come again, in one read, and the receiver is back.
  const second = world(() => ok, { journal, maxEvents: 100 });
  await second.lane.take([0, 1, 2].map((o) => stateRecord(o, 'd1')), second.tracker);
  await run(second);
  assert.is(second.sent.length, 0, 'its next attempt is due when the journal says, not at once');
  await run(second, 5000);
  assert.is(second.sent[0].messageId, id, 'the saved batch goes under its id');
  assert.equal(eventIds(second.sent[0]), ['u0/t', 'u1/t'], 'with the same events, although 100 would fit');
  assert.equal(second.sent.map(eventIds), [['u0/t', 'u1/t'], ['u2/t']]);
  // Delivered, but the cursor did not move before the next crash: nothing is sent again.
  const third = world(() => ok, { journal, maxEvents: 100 });
  await third.lane.take([0, 1, 2].map((o) => stateRecord(o, 'd1')), third.tracker);
  await run(third, 1000);
  assert.is(third.sent.length, 0);
  assert.equal(third.finished, [0, 1, 2]);
});

test('past the retry window a batch is given up and counted as dropped; 410 disables the integration and stops', async () => {
  const w = world(() => failing, { retryWindowMs: 10_000 });
  await w.lane.take([stateRecord(0, 'd1')], w.tracker);
  await run(w, 20_000);
  assert.is(w.journal.dropped, 1);
  assert.equal(w.finished, [0], 'a dropped batch is settled: the cursor moves on');
  const sentBefore = w.sent.length;
  await run(w, 20_000);
  assert.is(w.sent.length, sentBefore);

  const gone = world(() => ({ outcome: { kind: 'disable', reason: 'gone', status: 410 }, status: 410, body: 'gone' }));
  await gone.lane.take([stateRecord(0, 'd1'), stateRecord(1, 'd1')], gone.tracker);
  await run(gone, 5000);
  assert.is(gone.journal.disabled, 'gone');
  assert.is(gone.sent.length, 1);
  assert.equal(gone.finished, [], 'nothing finished: a re-enabled integration delivers it');
});

test('events the engine wrote again after a crash are known by their source: skipped, also after a restart of the lane', async () => {
  const journal = new MemoryJournal();
  const first = world(() => ok, { journal, maxEvents: 2 });
  // Uplinks 0..3 written; the engine crashed and wrote 2..3 again; then 4.
  const records = [0, 1, 2, 3, 2, 3, 4].map((source, offset) => stateRecord(offset, 'd1', 't', 2_000_000, source));
  await first.lane.take(records.slice(0, 4), first.tracker);
  await run(first);
  first.lane.stop();
  assert.equal(first.sent.map(eventIds), [['u0/t', 'u1/t'], ['u2/t', 'u3/t']]);
  // The lane restarts where its cursor stands (offset 4): the saved batches say which sources were taken.
  const second = world(() => ok, { journal, maxEvents: 2 });
  await second.lane.take(records.slice(4), second.tracker);
  await run(second, 1000);
  assert.equal(second.sent.map(eventIds), [['u4/t']], 'the repeats of uplinks 2 and 3 are not sent again');
  assert.is(second.repeated, 2);
  assert.equal(second.finished, [4, 5, 6]);
});

test('a run of uplinks: the uplinks of the ground\'s devices are delivered, in order, each a repeat or not by its own source', async () => {
  const journal = new MemoryJournal();
  const first = world(() => ok, { journal, maxEvents: 10 });
  // Two runs (uplinks 0..2, 3..5), a device of another ground among them; the engine crashed and
  // wrote 4..7 again as one run; then a run of 8.
  const records = [
    runRecord(0, [['d1', 0], ['other1', 1], ['d2', 2]]),
    runRecord(1, [['d1', 3], ['d2', 4], ['d1', 5]]),
    runRecord(2, [['d2', 4], ['d1', 5], ['other1', 6], ['d2', 7]]),
    runRecord(3, [['d1', 8]]),
  ];
  await first.lane.take(records.slice(0, 2), first.tracker);
  await run(first, 1000);
  first.lane.stop();
  assert.equal(first.sent.flatMap(eventIds), ['u0/t/1767225600000/0', 'u2/t/1767225600000/0', 'u3/t/1767225600000/0', 'u4/t/1767225600000/0', 'u5/t/1767225600000/0'], 'the other ground\'s uplink is not sent');
  assert.equal(first.sent.flatMap((r) => (r.events as { deviceId: string; groundId: string }[]).map((e) => `${e.deviceId}@${e.groundId}`)), ['d1@g1', 'd2@g1', 'd1@g1', 'd2@g1', 'd1@g1']);
  const second = world(() => ok, { journal, maxEvents: 10 });
  await second.lane.take(records.slice(2), second.tracker);
  await run(second, 1000);
  assert.equal(second.sent.flatMap(eventIds), ['u7/t/1767225600000/0', 'u8/t/1767225600000/0'], 'of the run written again, only what was not taken');
  assert.is(second.repeated, 1);
  assert.equal(second.finished, [2, 3]);
});

test('a run of repeats only is finished as a repeat; a run not written as the engine writes them, or of another device first than its key, is malformed', async () => {
  const w = world(() => ok, { maxEvents: 10 });
  await w.lane.take([runRecord(0, [['d1', 0], ['d2', 1]])], w.tracker);
  await run(w, 1000);
  await w.lane.take([runRecord(1, [['d1', 0], ['other1', 2]])], w.tracker);
  await run(w, 1000);
  assert.is(w.repeated, 1, 'd1\'s uplink 0 again, and nothing of the ground besides');
  let malformed = 0;
  const spaced = runRecord(2, [['d1', 3]], true);
  const misKeyed = { ...runRecord(3, [['d1', 4], ['d2', 5]]), key: 'd2' };
  const m = world(() => ok, { maxEvents: 10, onMalformed: () => { malformed++; } });
  await m.lane.take([spaced, misKeyed], m.tracker);
  await run(m, 1000);
  assert.is(m.sent.length, 0, 'nothing of either is sent');
  assert.is(malformed, 2);
  assert.equal(m.finished, [2, 3]);
  assert.equal(w.finished, [0, 1]);
});

test.run();
