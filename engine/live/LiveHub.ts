/**
 * An edge's reader of topic `live` (docs/live.md): it follows every partition from the end (its own
 * consumer group, `startAt: 'latest'`), keeps the last `ringEvents` events in memory for resumes, and
 * fans each event out to the subscriptions whose filter it matches, in partition order.
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
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import { Listeners } from '../kernel/Listeners.ts';
import type { Consumer, Log, RecordBatch } from '../ports/log.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';
import { LIVE_KINDS, type LiveKind, type LiveState } from '../../schemas/live.ts';
import type { StateRow } from '../../schemas/messages.ts';
import { before, decodeCursor, encodeCursor, type LivePosition } from './liveCursor.ts';
import type { LiveFrame, LiveSubscriber } from './LiveSubscription.ts';

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
  onError?(error: FleetError): void;
}

/** One event as held and fanned out: its data serialised once for every subscriber. */
export interface HubEvent {
  readonly partition: number;
  readonly position: LivePosition;
  readonly kind: LiveKind;
  readonly deviceId: string;
  readonly groundId: string | undefined;
  readonly json: string;
  /** The cursor just after this event. */
  readonly id: string;
  /** Wire frames built once per event and format during its fan-out, shared by every subscriber (LiveSubscription). */
  readonly frames: Map<object, LiveFrame>;
}

export interface LiveFilter {
  deviceId?: string;
  groundId?: string;
  kinds: ReadonlySet<LiveKind>;
}

/** Who opened a subscription, so registry changes can end it (engine/ports/registryChanges.ts). */
export interface LiveOwner {
  /** The user or device id of the token. */
  subjectId: string;
  /** engine/access/tokens.ts hashToken of the token. */
  tokenHash: string;
  /** The ground the access was granted through: the ground streamed, or the ground of the device streamed. */
  groundId: string;
}

interface Entry {
  filter: LiveFilter;
  owner: LiveOwner | undefined;
  subscriber: LiveSubscriber;
  /** Positions below which this subscriber has already seen everything (a resume). */
  from: LivePosition[] | undefined;
}

/**
 * An event as the ring holds it. Most events reach no subscriber (nobody follows their device or
 * ground) and leave the ring unread, so what only a subscriber needs is built on first use: the
 * JSON (then the parsed data is let go), the cursor and the frame cache.
 */
class HeldEvent implements HubEvent {
  readonly partition: number;
  readonly position: LivePosition;
  readonly kind: LiveKind;
  readonly deviceId: string;
  readonly groundId: string | undefined;
  /** What the ring counts for this event, bytes. */
  readonly size: number;
  #data: unknown;
  #json: string | undefined;
  /** The other partitions' parts of the cursor, around this partition's. */
  readonly #prefix: string;
  readonly #suffix: string;
  #frames: Map<object, LiveFrame> | undefined;

  constructor(partition: number, position: LivePosition, kind: LiveKind, deviceId: string, groundId: string | undefined, data: unknown, size: number, prefix: string, suffix: string) {
    this.partition = partition;
    this.position = position;
    this.kind = kind;
    this.deviceId = deviceId;
    this.groundId = groundId;
    this.#data = data;
    this.size = size;
    this.#prefix = prefix;
    this.#suffix = suffix;
  }

  get json(): string {
    if (this.#json === undefined) {
      this.#json = JSON.stringify(this.#data);
      this.#data = undefined;
    }
    return this.#json;
  }

  get id(): string {
    const [offset, index] = this.position;
    return `${this.#prefix}${offset.toString(36)}.${(index + 1).toString(36)}${this.#suffix}`;
  }

  get frames(): Map<object, LiveFrame> {
    return (this.#frames ??= new Map());
  }

  dropFrames(): void {
    this.#frames = undefined;
  }
}

/** A record held unread (nobody subscribed when it came): its events are read only for a resume. */
class HeldRecord {
  readonly partition: number;
  readonly offset: number;
  readonly deviceId: string;
  readonly groundId: string | undefined;
  readonly value: Uint8Array;
  /** Its events, as its publisher counted them. */
  readonly count: number;
  readonly size: number;
  readonly #prefix: string;
  readonly #suffix: string;

  constructor(partition: number, offset: number, deviceId: string, groundId: string | undefined, value: Uint8Array, count: number, prefix: string, suffix: string) {
    this.partition = partition;
    this.offset = offset;
    this.deviceId = deviceId;
    this.groundId = groundId;
    this.value = value;
    this.count = count;
    this.size = value.byteLength;
    this.#prefix = prefix;
    this.#suffix = suffix;
  }

  /** Its events, as they would have been held (none when the record is not a live record after all). */
  events(onError: ((error: FleetError) => void) | undefined): HeldEvent[] {
    const events = decodeRecord(this.value, onError);
    return events === undefined ? [] : heldEvents(this.partition, this.offset, this.deviceId, this.groundId, events, this.size, this.#prefix, this.#suffix);
  }
}

/** A record's events as the ring holds them; each counts its share of the record's bytes (before, or without, its JSON). */
function heldEvents(
  partition: number, offset: number, deviceId: string, groundId: string | undefined,
  events: [LiveKind, unknown][], bytes: number, prefix: string, suffix: string,
): HeldEvent[] {
  const size = Math.ceil(bytes / Math.max(events.length, 1));
  return events.map(([kind, data], index) => new HeldEvent(partition, [offset, index], kind, deviceId, groundId, data, size, prefix, suffix));
}

type Held = HeldEvent | HeldRecord;

export const ALL_KINDS: ReadonlySet<LiveKind> = new Set(LIVE_KINDS);
const decoder = new TextDecoder();
/** The head LivePublisher writes, `{"v":1,"n":<events>,"e":…`: the events of a record counted without reading it. */
const COUNTED_HEAD = /^\{"v":1,"n":([0-9]{1,9}),"e":/;
const HEAD_BYTES = 32;

/** A record's events; undefined (reported) when it is not a live record of version 1. */
function decodeRecord(value: Uint8Array, onError: ((error: FleetError) => void) | undefined): [LiveKind, unknown][] | undefined {
  try {
    const parsed = JSON.parse(decoder.decode(value)) as { v?: unknown; e?: unknown };
    if (parsed.v !== 1 || !Array.isArray(parsed.e)) throw new Error(`not a live record of version 1`);
    return parsed.e.filter(isEvent);
  } catch (error) {
    // A record another writer put on the topic: skipped, the stream goes on.
    onError?.(toFleetError(error, 'VALIDATION_FAILED'));
    return undefined;
  }
}

/** The event count a record's head gives, or undefined (another writer's record: read it whole). */
function countedEvents(value: Uint8Array): number | undefined {
  const match = COUNTED_HEAD.exec(decoder.decode(value.subarray(0, HEAD_BYTES)));
  return match === null ? undefined : Number(match[1]);
}

export class LiveHub {
  readonly #o: LiveHubOptions & { ringEvents: number; ringBytes: number; commitIntervalMs: number; resumeWindowMs: number };
  #ringBytesHeld = 0;
  readonly #entries = new Set<Entry>();
  /** The entries of #entries by the device or the ground their filter names. */
  readonly #byDevice = new Map<string, Set<Entry>>();
  readonly #byGround = new Map<string, Set<Entry>>();
  /** Oldest first. */
  #ring: Held[] = [];
  #ringStart = 0;
  /** Events in the ring (a record held unread counts its events). */
  #ringEventsHeld = 0;
  /** Per partition: what was fanned out (next position), and the oldest position still held. */
  #next: LivePosition[] = [];
  #floor: LivePosition[] = [];
  #parts: string[] = [];
  #partitions = 0;
  #reading: boolean[] = [];
  #consumer: Consumer | undefined;
  #commitTimer: TimerHandle | undefined;
  #toCommit = new Map<number, number>();
  /** Stored states as they arrive (the MQTT feed), to the feeds that want them now. */
  readonly #states: Listeners<readonly StateRow[]>;
  /** Whether each feed wants states now: rows are built only while one does. */
  readonly #statesWanted = new Set<{ wanted: () => boolean }>();
  /** When the last subscription ended (clock ms); none yet: nobody to resume. */
  #lastLeftAt = Number.NEGATIVE_INFINITY;
  /** wantsEvents() said no since the last subscription: events were not published. */
  #gap = false;
  eventsIn = 0;
  /** Subscriptions that refused an event (overflow) and were dropped. */
  subscribersDropped = 0;

  constructor(options: LiveHubOptions) {
    this.#o = {
      ...options,
      ringEvents: options.ringEvents ?? 10_000,
      ringBytes: options.ringBytes ?? 16 * 1024 * 1024,
      commitIntervalMs: options.commitIntervalMs ?? 1_000,
      resumeWindowMs: options.resumeWindowMs ?? 60_000,
    };
    this.#states = new Listeners<readonly StateRow[]>((error) => options.onError?.(toFleetError(error)));
  }

  /**
   * Calls `listener` with the stored states of every batch read while `wanted()` is true (the MQTT
   * feed: while a client follows one). Returns the function that removes it.
   */
  followStates(listener: (rows: readonly StateRow[]) => void, wanted: () => boolean = () => true): () => void {
    const feed = { wanted };
    this.#statesWanted.add(feed);
    const remove = this.#states.add((rows) => { if (wanted()) listener(rows); });
    return () => {
      this.#statesWanted.delete(feed);
      remove();
    };
  }

  #statesWantedNow(): boolean {
    for (const feed of this.#statesWanted) if (feed.wanted()) return true;
    return false;
  }

  /**
   * Whether events published now could reach anyone through this hub: a subscription, a states feed
   * that wants rows, or a client that left within `resumeWindowMs` and may resume. Ask it only where
   * this hub is the topic's only reader: a no is remembered as a gap in what the topic holds.
   */
  wantsEvents(): boolean {
    if (this.#entries.size > 0 || this.#statesWantedNow()) return true;
    if (this.#o.clock.now() - this.#lastLeftAt < this.#o.resumeWindowMs) return true;
    this.#gap = true;
    return false;
  }

  get partitions(): number {
    return this.#partitions;
  }

  get subscribers(): number {
    return this.#entries.size;
  }

  async start(): Promise<void> {
    // Where reading starts, as near as the log tells before the group is joined; the first record
    // of a partition corrects it (records appended in between were never held).
    const ends = await this.#o.log.endOffsets(this.#o.topic);
    this.#partitions = ends.length;
    this.#next = ends.map((offset) => [offset, 0] as LivePosition);
    this.#floor = this.#next.slice();
    this.#parts = ends.map((offset) => `${offset.toString(36)}.0`);
    this.#reading = ends.map(() => false);
    const consumer = this.#o.log.consumer({
      group: this.#o.group,
      topics: [this.#o.topic],
      startAt: 'latest',
      onBatch: (batch) => this.#onBatch(batch),
    });
    this.#consumer = consumer;
    await consumer.start();
  }

  /** Ends every subscription (the edge is closing) and leaves the group. */
  async stop(): Promise<void> {
    for (const entry of [...this.#entries]) entry.subscriber.close('closing');
    this.#entries.clear();
    this.#byDevice.clear();
    this.#byGround.clear();
    this.#commitTimer?.cancel();
    this.#commitTimer = undefined;
    await this.#consumer?.stop();
    this.#consumer = undefined;
  }

  /**
   * Adds a subscription. With `lastEventId`, held events after it that match are sent first, or
   * `reset` when it cannot be resumed without a gap. Returns the function that removes it.
   */
  subscribe(filter: LiveFilter, subscriber: LiveSubscriber, lastEventId?: string, owner?: LiveOwner): () => void {
    if (this.#gap) this.#closeGap();
    const entry: Entry = { filter, owner, subscriber, from: undefined };
    if (lastEventId !== undefined) {
      const cursor = decodeCursor(lastEventId, this.#partitions);
      const resumable = cursor !== undefined && cursor.every((position, p) => !before(position, this.#floor[p]));
      if (!resumable) {
        subscriber.reset();
      } else {
        for (const event of this.#heldEvents()) {
          if (before(event.position, cursor[event.partition]) || !matches(filter, event)) continue;
          const kept = subscriber.send(event);
          event.dropFrames();
          if (!kept) {
            this.subscribersDropped++;
            return () => undefined;
          }
        }
        // A cursor from an edge further ahead: events this edge has not fanned out yet but the client saw.
        if (cursor.some((position, p) => before(this.#next[p], position))) entry.from = cursor.slice();
      }
    }
    this.#add(entry);
    return () => this.#remove(entry);
  }

  #add(entry: Entry): void {
    this.#entries.add(entry);
    const { deviceId, groundId } = entry.filter;
    const [index, key] = deviceId !== undefined ? [this.#byDevice, deviceId] : [this.#byGround, groundId];
    // A filter naming neither matches nothing: kept (it is a subscription) but never indexed.
    if (key === undefined) return;
    let set = index.get(key);
    if (set === undefined) index.set(key, set = new Set());
    set.add(entry);
  }

  /**
   * Events went unpublished since the last subscription: nothing held can be resumed without missing
   * them. Everything held is let go and the floor moves to what comes next, so any cursor given out
   * before gets `reset`; records published before the gap and not read yet are held and fanned out.
   */
  #closeGap(): void {
    this.#gap = false;
    this.#ring = [];
    this.#ringStart = 0;
    this.#ringEventsHeld = 0;
    this.#ringBytesHeld = 0;
    this.#floor = this.#next.slice();
  }

  #remove(entry: Entry): void {
    if (!this.#entries.delete(entry)) return;
    if (this.#entries.size === 0) this.#lastLeftAt = this.#o.clock.now();
    const { deviceId, groundId } = entry.filter;
    const [index, key] = deviceId !== undefined ? [this.#byDevice, deviceId] : [this.#byGround, groundId];
    if (key === undefined) return;
    const set = index.get(key);
    if (set?.delete(entry) === true && set.size === 0) index.delete(key);
  }

  /**
   * Ends the subscriptions a registry change may have withdrawn: those of a revoked token, of a
   * deleted device, and those a user holds through a ground whose membership changed (closed on a
   * join too: the client reconnects and is authorised again, which is never wrong).
   */
  apply(change: RegistryChange): void {
    switch (change.kind) {
      case 'token-revoked':
        return this.#closeWhere((e) => e.owner?.tokenHash === change.tokenHash);
      case 'device-deleted':
        return this.#closeWhere((e) => e.filter.deviceId === change.deviceId || (e.owner?.subjectId === change.deviceId));
      case 'membership-changed':
        return this.#closeWhere((e) => e.owner?.subjectId === change.userId && e.owner.groundId === change.groundId);
      case 'device-changed':
        // A device moved to another ground: its ground streams follow once the lookup cache expires.
        return;
    }
  }

  #closeWhere(predicate: (entry: Entry) => boolean): void {
    for (const entry of [...this.#entries]) {
      if (predicate(entry)) {
        this.#remove(entry);
        entry.subscriber.close('forbidden');
      }
    }
  }

  async #onBatch(batch: RecordBatch): Promise<void> {
    const p = batch.partition;
    const grounds = new Map<string, string | undefined>();
    for (const { key } of batch.records) {
      if (!grounds.has(key)) {
        grounds.set(key, await this.#o.groundOf(key).catch(() => undefined));
      }
    }
    // Decided after the lookups: a subscription made while they ran gets this batch's events.
    const statesWanted = this.#statesWantedNow();
    // Nobody to fan out to: the records are held as they came, read only if a resume needs them.
    const unread = this.#entries.size === 0 && !statesWanted;
    // Rows for the MQTT feed only while it listens.
    const stored: StateRow[] | undefined = statesWanted ? [] : undefined;
    // The cursor after an event of this batch differs from the others only in partition p's part.
    const parts = this.#parts;
    const prefix = `1.${parts.slice(0, p).map((part) => `${part}~`).join('')}`;
    const suffix = parts.slice(p + 1).map((part) => `~${part}`).join('');
    for (const { offset, key: deviceId, value } of batch.records) {
      const count = unread ? countedEvents(value) : undefined;
      const events = count === undefined ? decodeRecord(value, this.#o.onError) : undefined;
      if (count === undefined && events === undefined) continue;
      if (!this.#reading[p]) {
        this.#reading[p] = true;
        if (before(this.#floor[p], [offset, 0])) this.#floor[p] = [offset, 0];
      }
      const groundId = grounds.get(deviceId);
      if (events === undefined) {
        this.eventsIn += count!;
        this.#hold(new HeldRecord(p, offset, deviceId, groundId, value, count!, prefix, suffix));
      } else {
        const held = heldEvents(p, offset, deviceId, groundId, events, value.byteLength, prefix, suffix);
        for (let index = 0; index < held.length; index++) {
          const event = held[index];
          this.eventsIn++;
          this.#hold(event);
          this.#fanOut(event);
          // From the record's events: the fan-out may have let the event's own data go (HeldEvent.json).
          if (event.kind === 'state' && stored !== undefined) stored.push(stateRowOf(events[index][1] as LiveState));
        }
      }
      this.#next[p] = [offset + 1, 0];
      this.#parts[p] = `${(offset + 1).toString(36)}.0`;
    }
    if (stored !== undefined && stored.length > 0) this.#states.emit(stored);
    this.#toCommit.set(p, batch.records[batch.records.length - 1].offset + 1);
    this.#scheduleCommit();
  }

  #hold(held: Held): void {
    this.#ring.push(held);
    this.#ringBytesHeld += held.size;
    this.#ringEventsHeld += held instanceof HeldRecord ? held.count : 1;
    while (this.#ringEventsHeld > this.#o.ringEvents || this.#ringBytesHeld > this.#o.ringBytes) {
      const gone = this.#ring[this.#ringStart++];
      this.#ringBytesHeld -= gone.size;
      if (gone instanceof HeldRecord) {
        this.#ringEventsHeld -= gone.count;
        this.#floor[gone.partition] = [gone.offset + 1, 0];
      } else {
        this.#ringEventsHeld--;
        this.#floor[gone.partition] = [gone.position[0], gone.position[1] + 1];
      }
    }
    // Compact now and then rather than shift() on every event.
    if (this.#ringStart >= 1024 && this.#ringStart * 2 >= this.#ring.length) {
      this.#ring = this.#ring.slice(this.#ringStart);
      this.#ringStart = 0;
    }
  }

  /** The held events, oldest first; records held unread are read here. */
  *#heldEvents(): Generator<HeldEvent> {
    for (let i = this.#ringStart; i < this.#ring.length; i++) {
      const held = this.#ring[i];
      if (held instanceof HeldRecord) yield* held.events(this.#o.onError);
      else yield held;
    }
  }

  #fanOut(event: HeldEvent): void {
    const byDevice = this.#byDevice.get(event.deviceId);
    if (byDevice !== undefined) this.#sendTo(byDevice, event);
    const byGround = event.groundId === undefined ? undefined : this.#byGround.get(event.groundId);
    if (byGround !== undefined) this.#sendTo(byGround, event);
    // The frames served this fan-out; the ring keeps only the data (a resume builds them again).
    event.dropFrames();
  }

  /** Sends to the entries of one index set (an entry dropped meanwhile leaves it: Set iteration allows that). */
  #sendTo(entries: Set<Entry>, event: HubEvent): void {
    for (const entry of entries) {
      if (!entry.filter.kinds.has(event.kind)) continue;
      if (entry.from !== undefined && before(event.position, entry.from[event.partition])) continue;
      let kept: boolean;
      try {
        kept = entry.subscriber.send(event);
      } catch (error) {
        // One broken connection must not fail the batch: it would come again for everybody.
        this.#o.onError?.(toFleetError(error));
        kept = false;
      }
      if (!kept) {
        this.#remove(entry);
        this.subscribersDropped++;
      }
    }
  }

  #scheduleCommit(): void {
    if (this.#commitTimer !== undefined) return;
    this.#commitTimer = this.#o.clock.setTimeout(() => {
      this.#commitTimer = undefined;
      const consumer = this.#consumer;
      const offsets = [...this.#toCommit].map(([partition, offset]) => ({ topic: this.#o.topic, partition, offset }));
      this.#toCommit.clear();
      if (consumer === undefined || offsets.length === 0) return;
      // A commit refused during a rebalance is harmless: the next batch commits again.
      consumer.commit(offsets).catch(() => undefined);
    }, this.#o.commitIntervalMs);
  }
}

function matches(filter: LiveFilter, event: HubEvent): boolean {
  if (!filter.kinds.has(event.kind)) return false;
  if (filter.deviceId !== undefined) return filter.deviceId === event.deviceId;
  return filter.groundId !== undefined && filter.groundId === event.groundId;
}

function isEvent(value: unknown): value is [LiveKind, unknown] {
  return Array.isArray(value) && value.length === 2 && ALL_KINDS.has(value[0] as LiveKind) && typeof value[1] === 'object' && value[1] !== null;
}

function stateRowOf(state: LiveState): StateRow {
  return { deviceId: state.deviceId, asset: state.asset, ts: Date.parse(state.at), receivedAt: state.receivedAt, value: state.value as StateRow['value'], uplinkId: state.uplinkId };
}
