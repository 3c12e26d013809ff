/**
 * An edge's reader of topic `live` (docs/live.md): it follows every partition from the end (its own
 * consumer group, `startAt: 'latest'`), keeps the last `ringEvents` events in memory for resumes
 * (LiveRing.ts, with the cursors), and fans each event out to the subscriptions whose filter it
 * matches, in partition order (LiveFanOut.ts, with the indexes and revocation).
 *
 * Who may see what is decided once, at subscribe time, by the edge; here each event is matched by
 * device id, or by the ground its device belongs to (looked up through `groundOf`, cached by the
 * registry lookups, before the batch is fanned out so the fan-out itself is synchronous).
 * Subscriptions are indexed by the device or ground they follow, so an event costs the subscribers
 * it reaches, not a test of every subscription of the edge (1 000 consoles on 1 000 grounds).
 *
 * Resume (liveCursor.ts): a cursor at or past the oldest event held for every partition replays the
 * held events after it; an older one (or one from another topic layout) gets `reset` first.
 *
 * While nobody subscribes and no states feed wants rows, records are held as they came, unread: a
 * resume reads them then. Decoding every event for nobody cost the embedded service about a sixth
 * of its uplinks (bench/batch.bench.ts, 100-state batches).
 *
 * Where this hub is the topic's only reader (the embedded log: one process per data dir), the
 * publisher asks wantsEvents() before it builds events: while nobody subscribes, no states feed
 * wants rows and the last subscriber left more than `resumeWindowMs` ago, nothing is published. The
 * hub remembers that gap; the next subscription first moves the floor past everything held, so a
 * cursor from before the gap gets `reset` instead of a resume that silently misses events.
 *
 * Where others publish whatever this hub wants (an edge on Kafka: the engines publish every stored
 * state, for every edge), `idleWhenUnwanted` stops the reading itself: once wantsEvents() says no,
 * the hub pauses every partition and fetches nothing. readingFromNow() takes it up again at the
 * topic's end, which it reads before it resolves; a subscription made once it resolved misses
 * nothing published after. The live routes and the MQTT edge await it before they answer a
 * subscription. What was held before is dropped, so a cursor from before gets `reset`.
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import { Listeners } from '../kernel/Listeners.ts';
import { LiveFeeds } from './LiveFeeds.ts';
import { TopicConsumer } from '../consumer/TopicConsumer.ts';
import type { OffsetTracker } from '../consumer/OffsetTracker.ts';
import type { Log, RecordBatch } from '../ports/log.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';
import type { LiveAlarm, LiveState } from '../../schemas/live.ts';
import type { StateRow } from '../../schemas/messages.ts';
import { before, decodeCursor } from './liveCursor.ts';
import { countedEvents, decodeRecord, HeldRecord, heldEvents, stateRowOf } from './heldEvents.ts';
import { LiveFanOut, matches, type LiveEntry } from './LiveFanOut.ts';
import { LiveRing } from './LiveRing.ts';
import type { LiveFilter, LiveOwner, LiveSubscriber } from './liveTypes.ts';

export { ALL_KINDS, type HubEvent, type LiveFilter, type LiveOwner } from './liveTypes.ts';

export interface LiveHubOptions {
  log: Pick<Log, 'consumer' | 'endOffsets'>;
  clock: Clock;
  topic: string;
  /** This edge's consumer group: unique per edge process, as every edge reads all partitions. */
  group: string;
  /** The ground of a device, undefined when it is gone (then only device subscriptions match). */
  groundOf(deviceId: string): Promise<string | undefined>;
  /** Events kept for resumes (all partitions together). Default 10 000. */
  ringEvents?: number;
  /**
   * Bytes of event data kept for resumes, whichever bound comes first (an event counts its share of
   * the record it came in). Default 16 MiB.
   */
  ringBytes?: number;
  /** How often the group's position is committed, ms (lets the local log drop read segments). Default 1 000. */
  commitIntervalMs?: number;
  /**
   * After the last subscriber left, how long events are still wanted (wantsEvents()), so a client
   * that reconnects within it resumes without a gap, ms. Default 60 000.
   */
  resumeWindowMs?: number;
  /** Pause reading while wantsEvents() says no (see above), looking every `idleCheckMs`. Default false. */
  idleWhenUnwanted?: boolean;
  /** How often an idle-capable hub asks whether to pause, ms. Default 1 000. */
  idleCheckMs?: number;
  onError?(error: FleetError): void;
}

/** After readingFromNow(), how long a hub keeps reading for the subscription that asked, ms. */
const WAKE_GRACE_MS = 10_000;

export class LiveHub {
  readonly #o: LiveHubOptions & { commitIntervalMs: number; resumeWindowMs: number };
  readonly #ring: LiveRing;
  readonly #fanOut: LiveFanOut;
  #consumer: TopicConsumer | undefined;
  /** Stored states as they arrive (the MQTT feed), built only while a feed wants them. */
  readonly #states: LiveFeeds<StateRow>;
  /** Alarm changes as they arrive (the MQTT alarm topics), likewise. */
  readonly #alarms: LiveFeeds<LiveAlarm>;
  /** wantsEvents() said no since the last subscription: events were not published. */
  #gap = false;
  /** Told when a subscription or a states feed is added (onDemand). */
  readonly #demand = new Listeners<void>((error) => this.#o.onError?.(toFleetError(error)));
  eventsIn = 0;
  /** idleWhenUnwanted: every partition is paused, nothing is read. */
  #idle = false;
  #waking: Promise<void> | undefined;
  #wokeAt = Number.NEGATIVE_INFINITY;
  #idleTimer: TimerHandle | undefined;
  /** Times the hub stopped reading, and took it up again (idleWhenUnwanted). */
  idled = 0;
  woke = 0;

  constructor(options: LiveHubOptions) {
    this.#o = {
      ...options,
      commitIntervalMs: options.commitIntervalMs ?? 1_000,
      resumeWindowMs: options.resumeWindowMs ?? 60_000,
    };
    this.#ring = new LiveRing({ ringEvents: options.ringEvents ?? 10_000, ringBytes: options.ringBytes ?? 16 * 1024 * 1024 });
    this.#fanOut = new LiveFanOut(options.clock, options.onError);
    const onError = (error: unknown) => options.onError?.(toFleetError(error));
    this.#states = new LiveFeeds<StateRow>(onError, () => this.#demand.emit());
    this.#alarms = new LiveFeeds<LiveAlarm>(onError, () => this.#demand.emit());
  }

  /**
   * Calls `listener` with the stored states of every batch read while `wanted()` is true (the MQTT
   * feed: while a client follows one). Returns the function that removes it.
   */
  followStates(listener: (rows: readonly StateRow[]) => void, wanted: () => boolean = () => true): () => void {
    return this.#states.follow(listener, wanted);
  }

  /**
   * Calls `listener` with the alarm changes of every batch read while `wanted()` is true (the MQTT
   * alarm topics: while a client follows one). Returns the function that removes it.
   */
  followAlarms(listener: (alarms: readonly LiveAlarm[]) => void, wanted: () => boolean = () => true): () => void {
    return this.#alarms.follow(listener, wanted);
  }

  /**
   * Whether events published now could reach anyone through this hub: a subscription, a states feed
   * that wants rows, or a client that left within `resumeWindowMs` and may resume. Ask it only where
   * this hub is the topic's only reader: a no is remembered as a gap in what the topic holds.
   */
  wantsEvents(): boolean {
    if (this.#wanted()) return true;
    this.#gap = true;
    return false;
  }

  #wanted(): boolean {
    if (this.#fanOut.size > 0 || this.#states.wantedNow() || this.#alarms.wantedNow()) return true;
    return this.#o.clock.now() - this.#fanOut.lastLeftAt < this.#o.resumeWindowMs;
  }

  /** Whether the hub reads the topic now (idleWhenUnwanted pauses it). */
  get reading(): boolean {
    return !this.#idle;
  }

  /**
   * Resolves once the hub reads the topic from no later than now: at once while it reads; after
   * idling (idleWhenUnwanted), once it has taken every partition up again at the end the log
   * reports now. Never rejects: when the end cannot be read, reading goes on from where it paused.
   */
  readingFromNow(): Promise<void> {
    this.#wokeAt = this.#o.clock.now();
    if (!this.#idle) return Promise.resolve();
    this.#waking ??= this.#wake().finally(() => { this.#waking = undefined; });
    return this.#waking;
  }

  async #wake(): Promise<void> {
    const consumer = this.#consumer!;
    const partitions = this.#ring.partitions;
    try {
      const ends = await this.#o.log.endOffsets(this.#o.topic);
      // One call: the adapters check every position before moving any, so a refusal moves none.
      consumer.seek(ends.slice(0, partitions).map((offset, partition) => ({ partition, offset })));
      // What was held ends here: the next events are those after the ends.
      this.#ring.startAt(ends);
      this.#ring.clear();
    } catch (error) {
      // Not knowing the end (the log away), read on from where the pause stopped: late, never missing.
      this.#o.onError?.(toFleetError(error));
    }
    for (let p = 0; p < partitions; p++) consumer.resume(p);
    this.#idle = false;
    this.woke++;
  }

  /** idleWhenUnwanted: pauses every partition while nobody wants events. */
  #checkIdle(): void {
    const consumer = this.#consumer;
    if (consumer === undefined || this.#idle || this.#waking !== undefined) return;
    if (this.#wanted() || this.#o.clock.now() - this.#wokeAt < WAKE_GRACE_MS) return;
    for (let p = 0; p < this.#ring.partitions; p++) consumer.pause(p);
    this.#idle = true;
    this.idled++;
  }

  /**
   * Calls `listener` once a subscription or a states feed was added: where the publisher is another
   * process (embedded edge workers, app/liveDemand.ts), wantsEvents() may have turned yes. Returns
   * the function that removes it.
   */
  onDemand(listener: () => void): () => void {
    return this.#demand.add(listener);
  }

  get partitions(): number {
    return this.#ring.partitions;
  }

  get subscribers(): number {
    return this.#fanOut.size;
  }

  /** Subscriptions that refused an event (overflow) and were dropped. */
  get subscribersDropped(): number {
    return this.#fanOut.dropped;
  }

  async start(): Promise<void> {
    // Where reading starts, as near as the log tells before the group is joined; the first record
    // of a partition corrects it (records appended in between were never held).
    this.#ring.startAt(await this.#o.log.endOffsets(this.#o.topic));
    // Records finish as they are read: the group's position only lets the local log drop what was read.
    const consumer = new TopicConsumer({
      log: this.#o.log,
      clock: this.#o.clock,
      group: this.#o.group,
      topic: this.#o.topic,
      startAt: 'latest',
      prefer: 'throughput', // every stored state of the fleet, read by every edge
      commitIntervalMs: this.#o.commitIntervalMs,
      onBatch: (batch, tracker) => this.#onBatch(batch, tracker),
      // A commit refused during a rebalance is harmless: the next tick commits again.
      onCommitError: () => undefined,
    });
    this.#consumer = consumer;
    await consumer.start();
    if (this.#o.idleWhenUnwanted === true) {
      const look = () => {
        this.#checkIdle();
        this.#idleTimer = this.#o.clock.setTimeout(look, this.#o.idleCheckMs ?? 1_000);
      };
      this.#idleTimer = this.#o.clock.setTimeout(look, this.#o.idleCheckMs ?? 1_000);
    }
  }

  /** Ends every subscription (the edge is closing) and leaves the group. */
  async stop(): Promise<void> {
    this.#idleTimer?.cancel();
    this.#fanOut.closeAll();
    await this.#consumer?.stop();
    this.#consumer = undefined;
  }

  /**
   * Adds a subscription. With `lastEventId`, held events after it that match are sent first, or
   * `reset` when it cannot be resumed without a gap. Returns the function that removes it.
   */
  subscribe(filter: LiveFilter, subscriber: LiveSubscriber, lastEventId?: string, owner?: LiveOwner): () => void {
    if (this.#gap) {
      // Events went unpublished since the last subscription: records published before the gap and
      // not read yet are held and fanned out; nothing held before can be resumed.
      this.#gap = false;
      this.#ring.clear();
    }
    const entry: LiveEntry = { filter, owner, subscriber, from: undefined };
    if (lastEventId !== undefined && !this.#resume(entry, lastEventId)) return () => undefined;
    this.#fanOut.add(entry);
    this.#demand.emit();
    return () => this.#fanOut.remove(entry);
  }

  /** Sends the held events after the cursor (or `reset`); false when the subscriber was dropped meanwhile. */
  #resume(entry: LiveEntry, lastEventId: string): boolean {
    const { filter, subscriber } = entry;
    const cursor = decodeCursor(lastEventId, this.#ring.partitions);
    if (cursor === undefined || !this.#ring.resumable(cursor)) {
      subscriber.reset();
      return true;
    }
    for (const event of this.#ring.events(this.#o.onError)) {
      if (before(event.position, cursor[event.partition]) || !matches(filter, event)) continue;
      const kept = subscriber.send(event);
      event.dropFrames();
      if (!kept) {
        this.#fanOut.dropped++;
        return false;
      }
    }
    // A cursor from an edge further ahead: events this edge has not fanned out yet but the client saw.
    if (this.#ring.behind(cursor)) entry.from = cursor.slice();
    return true;
  }

  /** Ends the subscriptions a registry change may have withdrawn (LiveFanOut.apply). */
  apply(change: RegistryChange): void {
    this.#fanOut.apply(change);
  }

  async #onBatch(batch: RecordBatch, tracker: OffsetTracker): Promise<void> {
    const p = batch.partition;
    const grounds = new Map<string, string | undefined>();
    for (const { key } of batch.records) {
      if (!grounds.has(key)) {
        grounds.set(key, await this.#o.groundOf(key).catch(() => undefined));
      }
    }
    // Decided after the lookups: a subscription made while they ran gets this batch's events.
    const statesWanted = this.#states.wantedNow();
    // Nobody to fan out to: the records are held as they came, read only if a resume needs them.
    const alarmsWanted = this.#alarms.wantedNow();
    const unread = this.#fanOut.size === 0 && !statesWanted && !alarmsWanted;
    // Rows for the MQTT feed only while it listens.
    const stored: StateRow[] | undefined = statesWanted ? [] : undefined;
    const alarms: LiveAlarm[] | undefined = alarmsWanted ? [] : undefined;
    const { prefix, suffix } = this.#ring.cursorAround(p);
    for (const { offset, key: deviceId, value } of batch.records) {
      tracker.start(offset);
      tracker.finish(offset);
      const count = unread ? countedEvents(value) : undefined;
      const events = count === undefined ? decodeRecord(value, this.#o.onError) : undefined;
      if (count === undefined && events === undefined) continue;
      this.#ring.reached(p, offset);
      const groundId = grounds.get(deviceId);
      if (events === undefined) {
        this.eventsIn += count!;
        this.#ring.hold(new HeldRecord(p, offset, deviceId, groundId, value, count!, prefix, suffix));
      } else {
        const held = heldEvents(p, offset, deviceId, groundId, events, value.byteLength, prefix, suffix);
        for (let index = 0; index < held.length; index++) {
          const event = held[index];
          this.eventsIn++;
          this.#ring.hold(event);
          this.#fanOut.send(event);
          // From the record's events: the fan-out may have let the event's own data go (HeldEvent.json).
          if (event.kind === 'state' && stored !== undefined) stored.push(stateRowOf(events[index][1] as LiveState));
          else if (event.kind === 'alarm' && alarms !== undefined) alarms.push(events[index][1] as LiveAlarm);
        }
      }
      this.#ring.read(p, offset);
    }
    if (stored !== undefined) this.#states.emit(stored);
    if (alarms !== undefined) this.#alarms.emit(alarms);
  }
}
