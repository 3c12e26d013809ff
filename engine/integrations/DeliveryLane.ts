/**
 * One integration's deliveries from one partition of topic `events`: the device order of that
 * partition, one request in flight, its batches and their retries (docs/integrations.md).
 *
 * - Records come in offset order (IntegrationDelivery's consumer). The events the integration
 *   takes (selectEvents.ts) gather into a batch. It leaves at once when no request is under way;
 *   while one is, events gather until it is answered, `maxEvents` are there, or `lingerMs` passed
 *   since the first (group commit: one event at low load goes at once, a busy lane sends full
 *   batches). A record's events are never split: a batch closes before a record that would take
 *   it past `maxEvents`, and a record of more is a batch of its own. A record with none of the
 *   integration's events is finished at once.
 * - A batch is saved (IntegrationDeliveries port) BEFORE its first attempt, with its records and
 *   its `webhook-id`. After a restart, the records of a saved batch are gathered into that batch
 *   again, whatever the timing: the receiver gets the same events under the same id. A saved batch
 *   already delivered is not sent again.
 * - Batches go one at a time, in order. An attempt that fails is retried on the retry schedule
 *   (the first retry about 1 s later, doubling up to 10 minutes, `Retry-After` honoured) until
 *   24 h have passed since the batch's first attempt; then its events are counted as dropped.
 *   A 410 disables the integration. Every outcome is saved before the next step.
 * - A record is finished (its offset may be committed: the integration's cursor) only once its
 *   batch is delivered or given up. While more than `maxHeldEvents` wait, the partition is
 *   paused: a failing receiver holds back its own integration, never ingestion or another one.
 * - Repeats: after a crash the engine writes the events of the uplinks it had not committed
 *   again. Uplinks' events come in the order of their source on topic `uplinks` (EventSource), so
 *   a record from a source at or before the last one taken is a repeat: skipped, never sent under
 *   another webhook-id. Where the lane stands is saved with each batch (`sources`).
 * - A run of uplinks (the local log's records, schemas/events.ts UplinksRecord) is read uplink by
 *   uplink: those of devices of the integration's ground, each a repeat or not by its own source
 *   (written again after a crash, a run may begin before the last source taken and end after it).
 * - stop() abandons what is held: it is not finished, so whoever reads the partition next
 *   (this process after a restart, or another engine after a rebalance) delivers it.
 */
import { exponentialBackoff } from '../kernel/backoff.ts';
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError } from '../kernel/errors.ts';
import { newId } from '../kernel/ids.ts';
import type { Logger } from '../kernel/logger.ts';
import type { OffsetTracker } from '../consumer/OffsetTracker.ts';
import type { DeliveryBatch, IntegrationDeliveries } from '../ports/integrationDeliveries.ts';
import type { Integration } from '../ports/integrationRegistry.ts';
import type { LogRecord } from '../ports/log.ts';
import type { WebhookAnswer, WebhookTransport } from '../ports/webhooks.ts';
import { BusyTurns } from './BusyTurns.ts';
import type { RetrySchedule } from './retrySchedule.ts';
import type { ExpandedPart, ExpandedRecord } from '../events/expandEventsRecord.ts';
import { coversDevice, expandParsed, parseRecord, selectExpanded } from './selectEvents.ts';

/** Records older than the integration by more than this are not its events (clocks of several processes differ a little). */
const CREATED_MARGIN_MS = 5000;
const MAX_ERROR_CHARS = 256;
const PRUNE_EVERY_MS = 10_000;
/** While ingestion is busy, a lane looks again in steps of this whether it may read or send (#giveWay). */
const GIVE_WAY_STEP_MS = 50;
/**
 * While ingestion is busy, the longest a step waits for its turn: reading waits inside the log
 * consumer's batch, and a Kafka consumer that holds a batch past its session (30 s) is evicted.
 */
const GIVE_WAY_LONGEST_MS = 5000;
/** A record whose source's events were taken already. */
const REPEAT = Symbol('repeat');
const journalBackoff = exponentialBackoff({ initialMs: 100, maxMs: 5000 });
const expandHere = (record: LogRecord, groundId: string) => expandParsed(record.key, parseRecord(record.value), groundId);
const RUN_PREFIX = Buffer.from('{"uplinks":');
/** Whether a record is a run of uplinks (schemas/events.ts UplinksRecord), as the engine writes them: a look at its first bytes. */
const isRun = (record: LogRecord) => record.value.length > RUN_PREFIX.length && Buffer.from(record.value.buffer, record.value.byteOffset, RUN_PREFIX.length).equals(RUN_PREFIX);

/** What a lane tells its integration (metrics, status). */
export interface LaneHooks {
  delivered(events: number, batch: DeliveryBatch): void;
  failedAttempt(answer: WebhookAnswer): void;
  dropped(events: number): void;
  disabled(reason: string): void;
  malformed(): void;
  /** A record the engine wrote again after a crash, skipped. */
  repeated(): void;
}

export interface DeliveryLaneOptions {
  partition: number;
  /** The integration as it is now: its settings may change while it runs. */
  settings(): Integration;
  journal: IntegrationDeliveries;
  transport: WebhookTransport;
  /** The secrets that sign now; undefined once the integration is gone. */
  secrets(): Promise<readonly string[] | undefined>;
  /** The ground a device is in now (undefined: deleted); a promise when it must be looked up. */
  groundOf(deviceId: string): string | undefined | Promise<string | undefined>;
  clock: Clock;
  schedule: RetrySchedule;
  maxEvents: number;
  lingerMs: number;
  maxHeldEvents: number;
  /**
   * Whether ingestion has more than it can do now (the engine's uplinks in flight): the lane gives
   * way before it takes a batch of records and before it sends a batch (#giveWay), so it takes
   * little of the engine's time while it catches up or takes a burst, yet always moves.
   */
  busy?(): boolean;
  /** The turns of the lanes of the lane's integration while busy (BusyTurns); default: the lane's own. */
  turns?: BusyTurns;
  /** A record's events for the integration's ground (selectEvents.ts expandParsed; undefined: malformed), shared by the integrations of the process (SharedParses). Default: parsed and expanded here. */
  expand?(record: LogRecord, groundId: string): ExpandedRecord | undefined;
  finish(offset: number): void;
  pause(): void;
  resume(): void;
  hooks: LaneHooks;
  logger: Logger;
}

/** A run of uplinks as read: its uplinks, and the ground of each one's device now. */
interface Run {
  parts: readonly ExpandedPart[];
  grounds: readonly (string | undefined)[];
}

/** A batch being gathered or waiting its turn. */
interface Pending {
  firstOffset: number;
  lastOffset: number;
  offsets: number[];
  events: Record<string, unknown>[];
  /** Its saved form, once saved (or when it is rebuilt from one). */
  saved?: DeliveryBatch;
  linger?: TimerHandle;
  /** The last source taken per `uplinks` partition when it closed. */
  sources?: Record<string, number>;
}

export class DeliveryLane {
  readonly #o: DeliveryLaneOptions;
  /** Saved batches not yet reached by the records, by firstOffset; loaded with the first records. */
  #saved: DeliveryBatch[] | undefined;
  #open: Pending | undefined;
  readonly #queue: Pending[] = [];
  #held = 0;
  #paused = false;
  #pumping = false;
  #stopped = false;
  readonly #sleeps = new Set<{ timer: TimerHandle; wake: () => void }>();
  /** The sleep until a failed batch's next attempt, which retryNow() cuts short. */
  #retryWait: { timer: TimerHandle; wake: () => void } | undefined;
  #tracker: OffsetTracker | undefined;
  /** Per partition of `uplinks`, the last source whose events were taken. */
  readonly #seen = new Map<number, number>();
  /** The first offset of the last batch settled: kept in the journal, where a restart finds #seen. */
  #lastSettled = -1;
  /** The watermark seen at the last prune: committed by the next one, delivered batches below it are done with. */
  #pruneMark = { at: 0, offset: 0 };
  /** Turns while busy when the integration gives none. */
  readonly #turns = new BusyTurns();

  constructor(options: DeliveryLaneOptions) {
    this.#o = options;
  }

  /** Events gathered and not yet delivered. */
  get held(): number {
    return this.#held;
  }

  /** Takes records of the partition, in offset order; each is started on `tracker` and finished once settled. */
  async take(records: readonly LogRecord[], tracker: OffsetTracker): Promise<void> {
    await this.#giveWay();
    if (this.#stopped) return;
    this.#tracker = tracker;
    if (this.#saved === undefined) {
      const id = this.#o.settings().id;
      const saved = await this.#persist(() => this.#o.journal.savedBatches(id, this.#o.partition));
      if (saved === undefined) return;
      // The first record read is where the cursor stands: the last batch before it says which
      // sources were taken; the batches before that one are done with.
      const cursor = records[0]?.offset ?? 0;
      const before = saved.value.filter((batch) => batch.lastOffset < cursor);
      const last = before[before.length - 1];
      for (const [partition, offset] of Object.entries(last?.sources ?? {})) this.#seen.set(Number(partition), offset);
      this.#saved = saved.value.filter((batch) => batch.lastOffset >= cursor);
      if (before.length > 1) void this.#persist(() => this.#o.journal.pruneBatches(id, this.#o.partition, last.firstOffset));
    }
    for (const record of records) {
      tracker.start(record.offset);
      // A run of uplinks (schemas/events.ts UplinksRecord) is of several devices: each one's ground counts.
      const run = isRun(record) ? await this.#runGrounds(record) : undefined;
      const ground = run === undefined ? await this.#o.groundOf(record.key) : undefined;
      if (this.#stopped) return;
      this.#takeRecord(record, ground, run);
    }
    if (this.#queue.length === 0 && !this.#pumping) this.#closeGathered();
    if (!this.#paused && this.#held > this.#o.maxHeldEvents) {
      this.#paused = true;
      this.#o.pause();
    }
  }

  /**
   * Tries the batch waiting for its next attempt now: another partition of the integration was just
   * delivered after failures, so its receiver is back (the retry schedule is for a receiver away).
   */
  retryNow(): void {
    const waiting = this.#retryWait;
    if (waiting === undefined) return;
    waiting.timer.cancel();
    waiting.wake();
  }

  /** Abandons what is held (not finished: replayed by the partition's next reader). */
  stop(): void {
    this.#stopped = true;
    if (this.#open?.linger !== undefined) this.#open.linger.cancel();
    for (const pending of this.#queue) pending.linger?.cancel();
    for (const sleep of [...this.#sleeps]) {
      sleep.timer.cancel();
      sleep.wake();
    }
  }

  /** A run's uplinks and the ground of each one's device (undefined: the record is malformed). */
  async #runGrounds(record: LogRecord): Promise<Run | undefined> {
    const parts = this.#expand(record)?.parts;
    if (parts === undefined) return undefined;
    const grounds: (string | undefined)[] = [];
    for (const part of parts) grounds.push(await this.#o.groundOf(part.deviceId));
    return { parts, grounds };
  }

  #expand(record: LogRecord): ExpandedRecord | undefined {
    return (this.#o.expand ?? expandHere)(record, this.#o.settings().groundId);
  }

  #takeRecord(record: LogRecord, groundId: string | undefined, run?: Run): void {
    const offset = record.offset;
    if (this.#open?.saved !== undefined && this.#open.saved.lastOffset < offset) this.#close();
    const saved = this.#savedAt(offset);
    if (this.#open !== undefined && this.#open.saved !== saved) this.#close();
    const events = run === undefined ? this.#select(record, groundId) : this.#selectRun(record, run);
    if (events === REPEAT) {
      this.#o.finish(offset);
      return;
    }
    if (events.length === 0) {
      this.#o.finish(offset);
      if (saved !== undefined && offset >= saved.lastOffset && this.#open !== undefined) this.#close();
      return;
    }
    // A gathered batch holds at most maxEvents: one that this record's events would carry past it
    // leaves first. A record's events are never split (one uplink's events go together), so a
    // record of more than maxEvents is a batch of its own.
    if (saved === undefined && this.#open !== undefined && this.#open.events.length + events.length > this.#o.maxEvents) this.#close();
    const open = this.#open ?? (this.#open = this.#gather(offset, saved));
    for (const event of events) open.events.push(event);
    open.offsets.push(offset);
    open.lastOffset = offset;
    this.#held += events.length;
    if (saved !== undefined ? offset >= saved.lastOffset : open.events.length >= this.#o.maxEvents) this.#close();
  }

  /** The saved batch `offset` belongs to, forgetting those it is past. */
  #savedAt(offset: number): DeliveryBatch | undefined {
    const saved = this.#saved!;
    while (saved.length > 0 && saved[0].lastOffset < offset) saved.shift();
    return saved.length > 0 && saved[0].firstOffset <= offset ? saved[0] : undefined;
  }

  /** The integration's events of a record; REPEAT for the events of a source already taken. */
  #select(record: LogRecord, groundId: string | undefined): Record<string, unknown>[] | typeof REPEAT {
    const settings = this.#o.settings();
    if (groundId !== settings.groundId || record.timestamp < settings.createdAt - CREATED_MARGIN_MS) return [];
    if (!coversDevice(settings, record.key)) return [];
    // A run of uplinks that does not begin as the engine writes them (isRun) is malformed there.
    const selection = selectExpanded(settings, this.#expand(record));
    if (selection.malformed) this.#o.hooks.malformed();
    const { source } = selection;
    if (selection.events.length === 0 || source === undefined) return selection.events;
    if (source.offset <= (this.#seen.get(source.partition) ?? -1)) {
      this.#o.hooks.repeated();
      return REPEAT;
    }
    this.#seen.set(source.partition, source.offset);
    return selection.events;
  }

  /**
   * The integration's events of a run of uplinks: those of the uplinks of its ground's devices,
   * each uplink a repeat or not by its own source (a run written again after a crash may begin
   * before the last source taken and end after it). REPEAT when every uplink that had events for
   * the integration was a repeat.
   */
  #selectRun(record: LogRecord, { parts, grounds }: Run): Record<string, unknown>[] | typeof REPEAT {
    const settings = this.#o.settings();
    if (record.timestamp < settings.createdAt - CREATED_MARGIN_MS) return [];
    const events: Record<string, unknown>[] = [];
    let repeats = 0;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (grounds[i] !== settings.groundId || !coversDevice(settings, part.deviceId)) continue;
      const chosen = selectExpanded(settings, { events: part.events }).events;
      const source = part.source;
      if (chosen.length === 0 || source === undefined) {
        for (const event of chosen) events.push(event);
        continue;
      }
      if (source.offset <= (this.#seen.get(source.partition) ?? -1)) {
        repeats++;
        continue;
      }
      this.#seen.set(source.partition, source.offset);
      for (const event of chosen) events.push(event);
    }
    if (repeats > 0) this.#o.hooks.repeated();
    return events.length === 0 && repeats > 0 ? REPEAT : events;
  }

  #gather(offset: number, saved: DeliveryBatch | undefined): Pending {
    const pending: Pending = { firstOffset: offset, lastOffset: offset, offsets: [], events: [], saved };
    pending.linger = this.#o.clock.setTimeout(() => {
      if (this.#open === pending) this.#close();
    }, this.#o.lingerMs);
    return pending;
  }

  /** Closes the batch being gathered, unless it is one rebuilt from the journal (it ends where it ended). */
  #closeGathered(): void {
    if (this.#open !== undefined && this.#open.saved === undefined) this.#close();
  }

  #close(): void {
    const open = this.#open;
    if (open === undefined) return;
    open.linger?.cancel();
    open.sources = Object.fromEntries(this.#seen);
    this.#open = undefined;
    this.#queue.push(open);
    void this.#pump();
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (!this.#stopped && this.#queue.length > 0) {
        const pending = this.#queue[0];
        // The saving, signing and sending of a batch are the engine's time too: they wait as reading does.
        if (!(await this.#giveWay())) return;
        if (!(await this.#deliver(pending)) || this.#stopped) return;
        this.#queue.shift();
        this.#lastSettled = pending.firstOffset;
        for (const offset of pending.offsets) this.#o.finish(offset);
        this.#held -= pending.events.length;
        this.#prune();
        if (this.#queue.length === 0) this.#closeGathered();
        if (this.#paused && this.#held <= this.#o.maxHeldEvents / 2) {
          this.#paused = false;
          this.#o.resume();
        }
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Resolves true once the batch is settled (delivered or given up), false when stopped first. */
  async #deliver(pending: Pending): Promise<boolean> {
    let batch = pending.saved ?? (await this.#save(pending));
    if (batch === undefined) return false;
    if (batch.deliveredAt !== undefined) return true; // delivered before a restart: not sent again
    const { journal, clock } = this.#o;
    const id = batch.integrationId;
    for (;;) {
      if (!(await this.#sleepUntil(batch.nextAttemptAt, batch.attempts > 0))) return false;
      const answer = await this.#attempt(batch, pending.events);
      if (answer === undefined || this.#stopped) return false;
      const at = clock.now();
      const { firstOffset } = batch;
      if (answer.outcome.kind === 'delivered') {
        if (!(await this.#persist(() => journal.batchDelivered(id, this.#o.partition, firstOffset, at)))) return false;
        this.#o.hooks.delivered(pending.events.length, batch);
        return true;
      }
      this.#o.hooks.failedAttempt(answer);
      const error = { ...(answer.status !== undefined ? { status: answer.status } : {}), message: (answer.error ?? answer.body).slice(0, MAX_ERROR_CHARS), at };
      const attempts: number = batch.attempts + 1;
      if (answer.outcome.kind === 'disable') {
        const reason = answer.outcome.reason;
        await this.#persist(() => journal.attemptFailed(id, this.#o.partition, firstOffset, { attempts, nextAttemptAt: at, error }));
        await this.#persist(() => journal.disableIntegration(id, reason));
        this.#o.hooks.disabled(reason);
        this.stop();
        return false;
      }
      const decision = this.#o.schedule.afterFailure({ failures: attempts, firstFailureAt: batch.createdAt }, at, answer.outcome.retryAfterMs);
      if (decision.kind === 'give-up') {
        if (!(await this.#persist(() => journal.batchDropped(id, this.#o.partition, firstOffset, { at, error })))) return false;
        this.#o.hooks.dropped(pending.events.length);
        return true;
      }
      batch = { ...batch, attempts, nextAttemptAt: decision.at };
      if (!(await this.#persist(() => journal.attemptFailed(id, this.#o.partition, firstOffset, { attempts, nextAttemptAt: decision.at, error })))) return false;
    }
  }

  /**
   * Every PRUNE_EVERY_MS, forgets the delivered batches below the watermark seen the time before:
   * the cursor (committed every few hundred ms) has passed them since. Not while ingestion is busy.
   */
  #prune(): void {
    const now = this.#o.clock.now();
    // Housekeeping gives way to ingestion as deliveries do: it is done once the engine is not busy.
    if (this.#tracker === undefined || now - this.#pruneMark.at < PRUNE_EVERY_MS || this.#o.busy?.() === true) return;
    // The last batch settled stays: a restart reads from it which sources were taken.
    const below = Math.min(this.#pruneMark.offset, this.#lastSettled);
    this.#pruneMark = { at: now, offset: this.#tracker.watermark };
    if (below > 0) void this.#persist(() => this.#o.journal.pruneBatches(this.#o.settings().id, this.#o.partition, below));
  }

  async #save(pending: Pending): Promise<DeliveryBatch | undefined> {
    const now = this.#o.clock.now();
    const batch: DeliveryBatch = {
      integrationId: this.#o.settings().id,
      partition: this.#o.partition,
      firstOffset: pending.firstOffset,
      lastOffset: pending.lastOffset,
      messageId: `msg_${newId()}`,
      events: pending.events.length,
      attempts: 0,
      nextAttemptAt: now,
      createdAt: now,
      sources: pending.sources,
    };
    if (!(await this.#persist(() => this.#o.journal.saveBatch(batch)))) return undefined;
    pending.saved = batch;
    return batch;
  }

  /** One attempt with the settings and secrets of now; undefined when the integration is gone or the lane stopped. */
  async #attempt(batch: DeliveryBatch, events: readonly unknown[]): Promise<WebhookAnswer | undefined> {
    const secrets = (await this.#persist(() => this.#o.secrets()))?.value;
    if (secrets === undefined || this.#stopped) return undefined;
    const settings = this.#o.settings();
    try {
      return await this.#o.transport.send({ url: settings.url, messageId: batch.messageId, events, secrets, headers: settings.headers });
    } catch (error) {
      // A request the sender refuses to make (a URL or header no longer valid) waits like a failure.
      return { outcome: { kind: 'retry', reason: 'refused' }, body: '', error: toFleetError(error).message };
    }
  }

  /**
   * Waits while ingestion is busy: at least the turns' spacing (1 s) from now, and its turn among
   * the lanes of its integration (BusyTurns: one step of the integration per spacing), at most
   * GIVE_WAY_LONGEST_MS, so deliveries take little of the engine's time while it catches up or
   * takes a burst, yet always move. False when stopped.
   */
  async #giveWay(): Promise<boolean> {
    const busy = this.#o.busy;
    if (busy === undefined || this.#stopped || !busy()) return !this.#stopped;
    const clock = this.#o.clock;
    const turns = this.#o.turns ?? this.#turns;
    const askedAt = clock.now();
    const latest = askedAt + GIVE_WAY_LONGEST_MS;
    const ticket = turns.join();
    try {
      while (!this.#stopped && busy() && clock.now() < latest && !turns.pass(ticket, askedAt, clock.now())) {
        await this.#sleepUntil(Math.max(clock.now() + 1, Math.min(clock.now() + GIVE_WAY_STEP_MS, latest, Math.max(turns.nextAt, askedAt + turns.spacingMs))));
      }
    } finally {
      turns.leave(ticket);
    }
    return !this.#stopped;
  }

  /** Resolves true at `at` (or at retryNow() for a retry), false when stopped first. */
  #sleepUntil(at: number, retry = false): Promise<boolean> {
    const delay = at - this.#o.clock.now();
    if (delay <= 0 || this.#stopped) return Promise.resolve(!this.#stopped);
    return new Promise((resolve) => {
      const sleep = {
        timer: this.#o.clock.setTimeout(() => sleep.wake(), delay),
        wake: () => {
          this.#sleeps.delete(sleep);
          if (this.#retryWait === sleep) this.#retryWait = undefined;
          resolve(!this.#stopped);
        },
      };
      this.#sleeps.add(sleep);
      if (retry) this.#retryWait = sleep;
    });
  }

  /**
   * The journal's answer, retried with backoff while the database is away (a delivery never moves
   * on without its step saved); undefined when the lane stopped meanwhile.
   */
  async #persist<T>(step: () => Promise<T>): Promise<{ value: T } | undefined> {
    for (let attempt = 0; ; attempt++) {
      if (this.#stopped) return undefined;
      try {
        const value = await step();
        return this.#stopped ? undefined : { value };
      } catch (error) {
        if (attempt === 0 || attempt % 20 === 0) this.#o.logger.warn('an integration could not save its delivery; trying again', { error: toFleetError(error).message, partition: this.#o.partition });
        await this.#sleepUntil(this.#o.clock.now() + journalBackoff(attempt));
      }
    }
  }
}
