/**
 * The parsed values of the latest records of topic `events`, and their events, shared by the
 * integrations of a process: each integration reads the topic with its own consumer group, and ten
 * integrations reading the same records would parse and expand each ten times. A record is the
 * same on every read (a partition's offset is never reused), so its parse serves every
 * integration while it is among the last `capacity` read, and its events serve those of one
 * ground (`expand`): frozen, and written as JSON once for all their requests (eventsBody.ts).
 * Bounded: the oldest record is forgotten first.
 */
import type { ExpandedRecord } from '../events/expandEventsRecord.ts';
import type { LogRecord } from '../ports/log.ts';
import { shareEvents } from './eventsBody.ts';
import { expandParsed, parseRecord } from './selectEvents.ts';

interface Held {
  parsed: unknown;
  /** The events of the ground that last asked (undefined: malformed). */
  groundId?: string;
  expanded?: ExpandedRecord;
}

/** Offsets past this are parsed, not kept: the key below is offset × 1024 + partition. */
const MAX_KEYED_OFFSET = 2 ** 42;

export class SharedParses {
  readonly #capacity: number;
  readonly #held = new Map<number, Held>();
  hits = 0;
  misses = 0;

  constructor(capacity = 4096) {
    this.#capacity = capacity;
  }

  /** The record's events for an integration of `groundId` (expandParsed; undefined: malformed), frozen. */
  expand(record: LogRecord, groundId: string): ExpandedRecord | undefined {
    const held = this.#hold(record);
    if (held.groundId === groundId) return held.expanded;
    const expanded = expandParsed(record.key, held.parsed, groundId);
    if (expanded !== undefined) {
      shareEvents(expanded.events);
      if (expanded.source !== undefined) Object.freeze(expanded.source);
      Object.freeze(expanded.events);
    }
    held.groundId = groundId;
    held.expanded = expanded;
    return expanded;
  }

  #hold(record: LogRecord): Held {
    if (record.offset > MAX_KEYED_OFFSET || record.partition >= 1024) return { parsed: parseRecord(record.value) };
    const key = record.offset * 1024 + record.partition;
    const held = this.#held.get(key);
    if (held !== undefined) {
      this.hits++;
      return held;
    }
    this.misses++;
    const fresh: Held = { parsed: parseRecord(record.value) };
    this.#held.set(key, fresh);
    if (this.#held.size > this.#capacity) this.#held.delete(this.#held.keys().next().value!);
    return fresh;
  }
}
