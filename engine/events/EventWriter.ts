/**
 * Appends records to topic `events` (schemas/events.ts, engine/events/eventRecords.ts) in batches
 * (the kernel Batcher): many sources per log append. Each caller is told when its record is
 * durable, and only then finishes its source (the uplink record, the dead letter, the command
 * record): what the engine stored is on `events` at least once, a crash replays the source and
 * writes the same events again.
 *
 * Bounded: past `maxPending` records held, callers wait (as the state batcher makes them). A
 * retriable append failure (a broker away) is retried with backoff for as long as it lasts, as the
 * store's outages are waited out.
 *
 * With `wanted` (the embedded log: events are written only while an integration delivers them, or
 * the operator asked for the topic), nothing is built or appended while it answers false: writing
 * events nobody reads would cost the embedded pipeline a good part of its throughput.
 */
import { Batcher } from '../kernel/Batcher.ts';
import { exponentialBackoff } from '../kernel/backoff.ts';
import type { Clock } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import type { Log, ProducerRecord } from '../ports/log.ts';

export interface EventWriterOptions {
  log: Pick<Log, 'append'>;
  clock: Clock;
  /** Topic `events`, with the configured prefix. */
  topic: string;
  /** Whether events are written now; absent: always. Asked once per source. */
  wanted?(): boolean;
  /** Longest a record waits for companions, ms. Default 5. */
  lingerMs?: number;
  /** Bytes of values per append. Default 256 KiB: under a Kafka broker's message.max.bytes, with room. */
  maxBatchBytes?: number;
  /** Bytes held before callers wait. Default 16 MiB. */
  maxPendingBytes?: number;
}

export class EventWriter {
  readonly #batcher: Batcher<ProducerRecord>;
  readonly #wanted: (() => boolean) | undefined;
  readonly #clock: Clock;
  /** Records appended. */
  written = 0;

  constructor(options: EventWriterOptions) {
    const { log, topic } = options;
    this.#wanted = options.wanted;
    this.#clock = options.clock;
    this.#batcher = new Batcher({
      name: 'event writer',
      clock: options.clock,
      write: async (records) => {
        await log.append(topic, records);
        this.written += records.length;
      },
      weight: (record) => record.value.byteLength,
      maxItems: options.maxBatchBytes ?? 256 * 1024,
      maxDelayMs: options.lingerMs ?? 5,
      maxPending: options.maxPendingBytes ?? 16 * 1024 * 1024,
      overflow: 'wait',
      // Several appends under way (each a synced write, or a broker's acknowledgement): both logs
      // place concurrent appends in the order they were made, so a device's events keep theirs.
      concurrency: 4,
      retry: { backoff: exponentialBackoff({ initialMs: 100, maxMs: 5000 }), maxRetries: Number.MAX_SAFE_INTEGER },
    });
  }

  /** Whether a source's events are to be written now. */
  get wanted(): boolean {
    return this.#wanted === undefined || this.#wanted();
  }

  /** Epoch ms, the records' timestamp. */
  now(): number {
    return this.#clock.now();
  }

  /** Appends `record` (undefined: nothing to write); `done` once it is durable, or with the FleetError; never synchronously. */
  addThen(record: ProducerRecord | undefined, done: (error?: FleetError) => void): void {
    if (record === undefined) {
      queueMicrotask(() => done());
      return;
    }
    this.#batcher.addThen(record, done);
  }

  add(record: ProducerRecord | undefined): Promise<void> {
    return record === undefined ? Promise.resolve() : this.#batcher.add(record);
  }

  /** Appends what is held and waits for the appends under way. */
  flush(): Promise<void> {
    return this.#batcher.flush();
  }

  close(): Promise<void> {
    return this.#batcher.close();
  }
}
