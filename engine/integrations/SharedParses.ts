/**
 * The parsed values of the latest records of topic `events`, and their events, shared by the
 * integrations of a process: each integration reads the topic with its own consumer group, and ten
 * integrations reading the same records would parse and expand each ten times. A record is the
 * same on every read (a partition's offset is never reused), so its parse serves every integration
 * while it is among the latest read (the bound below), and its events serve those of one ground
 * (`expand`): frozen, and written as JSON once for all their requests (eventsBody.ts).
 * Bounded by the bytes of the records held, the oldest forgotten first: a record is one uplink's
 * events or, on the local log, a run of many uplinks' (schemas/events.ts UplinksRecord), so a
 * count of records would bound nothing. A record's parse and events take several times its bytes,
 * and what is held lives through every garbage collection: 4,096 runs held about 120 MB of a
 * service's heap after ten integrations had delivered everything. 2 MiB of records (about 8,000
 * uplinks of 4 states, some 25 MB of heap; 4 MiB held about 50 MB) holds the spread between ten
 * integrations draining a backlog: each record parsed about once (bench/integrations.bench.ts
 * phase 2: one read in nine a parse with 2 MiB or 4 MiB, one in ten at best), where with 1 MiB one
 * in five was.
 */
import type { ExpandedRecord } from '../events/expandEventsRecord.ts';
import type { LogRecord } from '../ports/log.ts';
import { shareEvents } from './eventsBody.ts';
import { expandParsed, parseRecord } from './selectEvents.ts';

interface Held {
  parsed: unknown;
  /** The record's value bytes. */
  bytes: number;
  /** The events of the ground that last asked (undefined: malformed). */
  groundId?: string;
  expanded?: ExpandedRecord;
}

/** Offsets past this are parsed, not kept: the key below is offset × 1024 + partition. */
const MAX_KEYED_OFFSET = 2 ** 42;

export class SharedParses {
  readonly #capacityBytes: number;
  readonly #held = new Map<number, Held>();
  #bytes = 0;
  hits = 0;
  misses = 0;

  /** `capacityBytes`: record bytes held at most (the latest record is held whatever its size). Default 2 MiB. */
  constructor(capacityBytes = 2 * 1024 * 1024) {
    this.#capacityBytes = capacityBytes;
  }

  /** Record bytes held now. */
  get heldBytes(): number {
    return this.#bytes;
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
    if (record.offset > MAX_KEYED_OFFSET || record.partition >= 1024) return { parsed: parseRecord(record.value), bytes: record.value.byteLength };
    const key = record.offset * 1024 + record.partition;
    const held = this.#held.get(key);
    if (held !== undefined) {
      this.hits++;
      return held;
    }
    this.misses++;
    const fresh: Held = { parsed: parseRecord(record.value), bytes: record.value.byteLength };
    this.#held.set(key, fresh);
    this.#bytes += fresh.bytes;
    for (const [oldest, old] of this.#held) {
      if (this.#bytes <= this.#capacityBytes || old === fresh) break;
      this.#held.delete(oldest);
      this.#bytes -= old.bytes;
    }
    return fresh;
  }
}
