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
 *
 * An uplink's events come as they are (UplinkEvents, addUplinkThen) and are written when their
 * batch is: one record each, or, with `combine` (the local log, whose readers are the
 * integrations), the uplinks of one partition of `uplinks` in a batch share records: runs in
 * their order, `{"uplinks":[…]}` (schemas/events.ts UplinksRecord), of at most `maxEvents` events,
 * so that a record never holds more than an integration's request. A record per uplink cost the
 * engine a fifth to a third of its throughput while an integration was active (its text, its
 * place in the log); a run of 25 uplinks costs one.
 */
import { Batcher } from '../kernel/Batcher.ts';
import { exponentialBackoff } from '../kernel/backoff.ts';
import type { Clock } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import type { Log, ProducerRecord } from '../ports/log.ts';
import { writeUplinkEvents, type UplinkEvents } from './eventRecords.ts';
import { JsonBytes } from './JsonBytes.ts';

/**
 * Runs of uplinks share records. Only where topic `events` has as many partitions as `uplinks`:
 * then the devices of one partition of `uplinks` are those of the same partition of `events`, and
 * a record keyed by the first of them lands where each one's own records do.
 */
export interface Combine {
  /** Events a record holds at most (the integrations' batch). */
  maxEvents: number;
  /** Whether runs share records now: set once the log has said that the partition counts match. */
  on: boolean;
}

/** An uplink's events, not yet a record, and its partition of `uplinks`. */
interface Uplink {
  partition: number;
  events: UplinkEvents;
}

type Item = ProducerRecord | Uplink;
const isUplink = (item: Item): item is Uplink => 'events' in item;

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
  /** Runs of uplinks share records (see above). */
  combine?: Combine;
}

export class EventWriter {
  readonly #batcher: Batcher<Item>;
  readonly #combine: Combine | undefined;
  readonly #bytes = new JsonBytes();
  readonly #wanted: (() => boolean) | undefined;
  readonly #clock: Clock;
  /** Records appended. */
  written = 0;

  constructor(options: EventWriterOptions) {
    const { log, topic } = options;
    this.#wanted = options.wanted;
    this.#clock = options.clock;
    this.#combine = options.combine;
    this.#batcher = new Batcher<Item>({
      name: 'event writer',
      clock: options.clock,
      write: async (items) => {
        const records = this.#records(items);
        await log.append(topic, records);
        this.written += records.length;
      },
      // An uplink's text is not written yet: about 60 bytes an event, and what they share.
      weight: (item) => (isUplink(item) ? 80 + 60 * item.events.count : item.value.byteLength),
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

  /** Appends an uplink's events (of partition `partition` of `uplinks`), as addThen(). */
  addUplinkThen(partition: number, events: UplinkEvents, done: (error?: FleetError) => void): void {
    this.#batcher.addThen({ partition, events }, done);
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

  /**
   * A batch's records: an uplink's events become its record, or with `combine` on, those of a
   * partition of `uplinks` become runs of at most maxEvents events (an uplink of as many or more is
   * a record of its own), each partition's in its order. Any other record ends the runs under way
   * first: what came before it stays before it. A batch written again after a failure is made
   * into records again.
   */
  #records(items: readonly Item[]): ProducerRecord[] {
    const now = this.#clock.now();
    const combine = this.#combine?.on === true ? this.#combine : undefined;
    const records: ProducerRecord[] = [];
    const single = (events: UplinkEvents) => records.push({ key: events.deviceId, value: writeUplinkEvents(this.#bytes, events).take(), timestamp: now });
    // Per partition of `uplinks`, the run being gathered and its events.
    const runs = new Map<number, { uplinks: UplinkEvents[]; count: number }>();
    const write = (run: { uplinks: UplinkEvents[] }) => {
      const [first, ...rest] = run.uplinks;
      if (rest.length === 0) return single(first);
      const out = writeUplinkEvents(this.#bytes.raw('{"uplinks":['), first);
      for (const events of rest) writeUplinkEvents(out.raw(','), events);
      records.push({ key: first.deviceId, value: out.raw(']}').take(), timestamp: now });
    };
    const writeAll = () => {
      for (const run of runs.values()) write(run);
      runs.clear();
    };
    for (const item of items) {
      if (!isUplink(item)) {
        writeAll();
        records.push(item);
        continue;
      }
      const { partition, events } = item;
      if (combine === undefined || events.count >= combine.maxEvents) {
        const run = runs.get(partition);
        if (run !== undefined) {
          write(run);
          runs.delete(partition);
        }
        single(events);
        continue;
      }
      let run = runs.get(partition);
      if (run !== undefined && run.count + events.count > combine.maxEvents) {
        write(run);
        run = undefined;
      }
      if (run === undefined) runs.set(partition, (run = { uplinks: [], count: 0 }));
      run.uplinks.push(events);
      run.count += events.count;
    }
    writeAll();
    return records;
  }
}
