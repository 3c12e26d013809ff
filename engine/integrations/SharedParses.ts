/**
 * The parsed values of the latest records of topic `events`, shared by the integrations of a
 * process: each integration reads the topic with its own consumer group, and ten integrations
 * reading the same records would parse each ten times. A record is the same on every read (a
 * partition's offset is never reused), so the parse of one serves the others while it is among the
 * last `capacity` parsed. Bounded: the oldest parse is forgotten first.
 */
import type { LogRecord } from '../ports/log.ts';
import { parseRecord } from './selectEvents.ts';

/** Offsets past this are parsed, not kept: the key below is offset × 1024 + partition. */
const MAX_KEYED_OFFSET = 2 ** 42;

export class SharedParses {
  readonly #capacity: number;
  readonly #parsed = new Map<number, unknown>();
  hits = 0;
  misses = 0;

  constructor(capacity = 4096) {
    this.#capacity = capacity;
  }

  /** The record's value parsed (parseRecord: MALFORMED_RECORD when it is not JSON). */
  parse(record: LogRecord): unknown {
    if (record.offset > MAX_KEYED_OFFSET || record.partition >= 1024) return parseRecord(record.value);
    const key = record.offset * 1024 + record.partition;
    const held = this.#parsed.get(key);
    if (held !== undefined || this.#parsed.has(key)) {
      this.hits++;
      return held;
    }
    this.misses++;
    const parsed = parseRecord(record.value);
    this.#parsed.set(key, parsed);
    if (this.#parsed.size > this.#capacity) this.#parsed.delete(this.#parsed.keys().next().value!);
    return parsed;
  }
}
