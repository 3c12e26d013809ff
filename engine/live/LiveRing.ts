/**
 * The events an edge holds for resumes, and where it stands on each partition of topic `live`
 * (docs/live.md "Resume"): the last `ringEvents` events (or `ringBytes` bytes, whichever bound comes
 * first), the oldest position still held per partition (the floor: a cursor below it cannot be
 * resumed without a gap) and the next position to read (the cursor parts of what was read).
 */
import type { FleetError } from '../kernel/errors.ts';
import { before, type LivePosition } from './liveCursor.ts';
import { HeldRecord, type HeldEvent, type Held } from './heldEvents.ts';

export interface LiveRingOptions {
  /** Events kept (all partitions together). */
  ringEvents: number;
  /** Bytes of event data kept (an event counts its share of the record it came in). */
  ringBytes: number;
}

export class LiveRing {
  readonly #o: LiveRingOptions;
  /** Oldest first. */
  #ring: Held[] = [];
  #ringStart = 0;
  /** Events in the ring (a record held unread counts its events). */
  #eventsHeld = 0;
  #bytesHeld = 0;
  /** Per partition: what was read (next position), and the oldest position still held. */
  #next: LivePosition[] = [];
  #floor: LivePosition[] = [];
  /** Per partition, the cursor part of the next position. */
  #parts: string[] = [];
  #reading: boolean[] = [];

  constructor(options: LiveRingOptions) {
    this.#o = options;
  }

  get partitions(): number {
    return this.#next.length;
  }

  /** Reading starts at these end offsets, one per partition (as near as the log tells before the group is joined). */
  startAt(ends: readonly number[]): void {
    this.#next = ends.map((offset) => [offset, 0] as LivePosition);
    this.#floor = this.#next.slice();
    this.#parts = ends.map((offset) => `${offset.toString(36)}.0`);
    this.#reading = ends.map(() => false);
  }

  /** A cursor at or past the floor of every partition replays without a gap. */
  resumable(cursor: readonly LivePosition[]): boolean {
    return cursor.every((position, p) => !before(position, this.#floor[p]));
  }

  /** The cursor is ahead of what this edge read on some partition (a client of an edge further on). */
  behind(cursor: readonly LivePosition[]): boolean {
    return cursor.some((position, p) => before(this.#next[p], position));
  }

  /**
   * The cursor of an event of partition `p` differs from the others only in that partition's part:
   * what stands before and after it, made once per batch.
   */
  cursorAround(p: number): { prefix: string; suffix: string } {
    const parts = this.#parts;
    return {
      prefix: `1.${parts.slice(0, p).map((part) => `${part}~`).join('')}`,
      suffix: parts.slice(p + 1).map((part) => `~${part}`).join(''),
    };
  }

  /** The first record read of a partition corrects where reading started (records appended in between were never held). */
  reached(p: number, offset: number): void {
    if (this.#reading[p]) return;
    this.#reading[p] = true;
    if (before(this.#floor[p], [offset, 0])) this.#floor[p] = [offset, 0];
  }

  /** A record of partition `p` is read: the next position moves past it. */
  read(p: number, offset: number): void {
    this.#next[p] = [offset + 1, 0];
    this.#parts[p] = `${(offset + 1).toString(36)}.0`;
  }

  hold(held: Held): void {
    this.#ring.push(held);
    this.#bytesHeld += held.size;
    this.#eventsHeld += held instanceof HeldRecord ? held.count : 1;
    while (this.#eventsHeld > this.#o.ringEvents || this.#bytesHeld > this.#o.ringBytes) {
      const gone = this.#ring[this.#ringStart++];
      this.#bytesHeld -= gone.size;
      if (gone instanceof HeldRecord) {
        this.#eventsHeld -= gone.count;
        this.#floor[gone.partition] = [gone.offset + 1, 0];
      } else {
        this.#eventsHeld--;
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
  *events(onError: ((error: FleetError) => void) | undefined): Generator<HeldEvent> {
    for (let i = this.#ringStart; i < this.#ring.length; i++) {
      const held = this.#ring[i];
      if (held instanceof HeldRecord) yield* held.events(onError);
      else yield held;
    }
  }

  /**
   * Events went unpublished: nothing held can be resumed without missing them. Everything held is
   * let go and the floor moves to what comes next, so any cursor given out before gets `reset`.
   */
  clear(): void {
    this.#ring = [];
    this.#ringStart = 0;
    this.#eventsHeld = 0;
    this.#bytesHeld = 0;
    this.#floor = this.#next.slice();
  }
}
