/**
 * Publishes live events on topic `live` (key = device id), one record per device per batch
 * (schemas/live.ts). Engines call it with what they stored and rejected, edges with the refusals they
 * recorded and the command changes of their actors.
 *
 * Live data is a view, not the record: the store, the dead letters and the command history are.
 * So publishing never holds the pipeline back: events are offered to a bounded batcher and, past
 * `maxPendingEvents` or when an append fails for good, dropped and counted (onDropped). A subscriber
 * that resumes across such a drop misses those events; the REST reads still have them.
 *
 * With `wanted` (the embedded log, whose one reader is this process's LiveHub: wantsEvents()),
 * stored states, refusals and command changes are turned into events only while someone may read
 * them; otherwise they are counted as unwatched. Building and writing events for nobody cost the
 * embedded service about a third of its uplinks in 100-state batches (bench/batch.bench.ts).
 */
import { Batcher } from '../kernel/Batcher.ts';
import type { Clock } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import type { Log, ProducerRecord } from '../ports/log.ts';
import type { CommandView } from '../../schemas/commands.ts';
import type { LiveEvent, LiveRecord } from '../../schemas/live.ts';
import type { DeadLetter, StateRow } from '../../schemas/messages.ts';
import { alarmLiveEvent, commandEvent, rejectionEvents, stateEvents } from './liveEvents.ts';
import type { Alarm } from '../../schemas/alarms.ts';
import type { LiveAlarm } from '../../schemas/live.ts';

export interface LivePublisherOptions {
  log: Pick<Log, 'append'>;
  clock: Clock;
  /** Topic name (with the configured prefix). */
  topic: string;
  /** Longest an event waits for companions before its batch is appended, ms. Default 10. */
  lingerMs?: number;
  /**
   * With no append in flight, fewer events than this are appended in the next turn instead of after
   * lingerMs (Batcher immediateBelow): at low load an event does not wait for companions. Default 1 000.
   */
  immediateEvents?: number;
  /** Events per append. Default 5 000. */
  maxBatchEvents?: number;
  /** Events held (waiting or being appended) before new ones are dropped. Default 50 000. */
  maxPendingEvents?: number;
  /**
   * Largest record value, bytes: a device's events of one batch that weigh more go in several
   * records, in order (the log refuses a record over its limit, 1 MiB on the local log, and a Kafka
   * broker a batch over 1 MiB). Default 512 KiB.
   */
  maxRecordBytes?: number;
  /** Events given up: overflow (no error) or an append that failed (with it). */
  onDropped?(count: number, error?: FleetError): void;
  /**
   * Whether events could be read now; absent: always (other processes read the topic). Asked once
   * per states(), rejections() or command() call, before any event is built.
   */
  wanted?(): boolean;
}

const encoder = new TextEncoder();

export class LivePublisher {
  readonly #batcher: Batcher<LiveEvent[]>;
  readonly #onDropped: LivePublisherOptions['onDropped'];
  readonly #wanted: (() => boolean) | undefined;
  published = 0;
  dropped = 0;
  /** Events not built: nobody could read them (`wanted`). */
  unwatched = 0;

  constructor(options: LivePublisherOptions) {
    this.#onDropped = options.onDropped;
    this.#wanted = options.wanted;
    const { log, topic } = options;
    const maxBatch = options.maxBatchEvents ?? 5_000;
    const maxRecordBytes = options.maxRecordBytes ?? 512 * 1024;
    this.#batcher = new Batcher<LiveEvent[]>({
      clock: options.clock,
      name: 'live publisher',
      maxItems: maxBatch,
      maxDelayMs: options.lingerMs ?? 10,
      immediateBelow: options.immediateEvents ?? 1_000,
      maxPending: options.maxPendingEvents ?? 50_000,
      overflow: 'refuse',
      weight: (events) => events.length,
      write: async (batches) => {
        const records = recordsOf(batches, maxRecordBytes);
        await log.append(topic, records);
        for (const events of batches) this.published += events.length;
      },
      onFailed: (batches, error) => this.#drop(batches.reduce((n, b) => n + b.length, 0), error),
    });
  }

  /** Offers events (in the order they happened); never waits and never throws. */
  publish(events: readonly LiveEvent[]): void {
    if (events.length === 0) return;
    if (this.#batcher.closed || !this.#batcher.offer([...events])) this.#drop(events.length);
  }

  /** Stored states, as `state` events. */
  states(rows: readonly StateRow[]): void {
    if (this.#watched(rows.length)) this.publish(stateEvents(rows));
  }

  /** Refused uplinks, as `rejection` events. */
  rejections(letters: readonly DeadLetter[]): void {
    if (this.#watched(letters.length)) this.publish(rejectionEvents(letters));
  }

  /** A command's change, as a `command` event. */
  command(view: CommandView): void {
    if (this.#watched(1)) this.publish([commandEvent(view)]);
  }

  /** An alarm's change, as an `alarm` event; `by`, the member who made it. */
  alarm(change: LiveAlarm['change'], alarm: Alarm, by?: string): void {
    if (this.#watched(1)) this.publish([alarmLiveEvent(change, alarm, by)]);
  }

  #watched(count: number): boolean {
    if (count === 0 || this.#wanted === undefined || this.#wanted()) return true;
    this.unwatched += count;
    return false;
  }

  /** Appends what is held (shutdown, tests). */
  flush(): Promise<void> {
    return this.#batcher.flush();
  }

  close(): Promise<void> {
    return this.#batcher.close();
  }

  #drop(count: number, error?: FleetError): void {
    this.dropped += count;
    this.#onDropped?.(count, error);
  }
}

/**
 * One record per device, its events in order; devices in order of their first event. A device's
 * record over `maxBytes` (large values, or a large batch of one device) is cut into records of at
 * most that much, in order: one record over the log's limit would have lost all of them.
 */
function recordsOf(batches: readonly LiveEvent[][], maxBytes: number): ProducerRecord[] {
  const byDevice = new Map<string, LiveRecord['e']>();
  for (const events of batches) {
    for (const event of events) {
      let list = byDevice.get(event.data.deviceId);
      if (list === undefined) byDevice.set(event.data.deviceId, list = []);
      list.push([event.kind, event.data]);
    }
  }
  const records: ProducerRecord[] = [];
  // `n` right after `v`: a hub with nobody subscribed counts the events from the record's head (LiveHub).
  for (const [key, e] of byDevice) {
    const value = encoder.encode(JSON.stringify({ v: 1, n: e.length, e } satisfies LiveRecord));
    if (value.byteLength <= maxBytes || e.length === 1) records.push({ key, value });
    else for (const part of cut(e, maxBytes)) records.push({ key, value: encoder.encode(JSON.stringify({ v: 1, n: part.length, e: part } satisfies LiveRecord)) });
  }
  return records;
}

/** Runs of `events` whose records weigh at most `maxBytes` (an event heavier than that alone). */
function cut(events: LiveRecord['e'], maxBytes: number): LiveRecord['e'][] {
  const parts: LiveRecord['e'][] = [];
  let part: LiveRecord['e'] = [];
  // The record's own bytes around its events: {"v":1,"n":<count>,"e":[…]}.
  let bytes = 32;
  for (const event of events) {
    const size = Buffer.byteLength(JSON.stringify(event)) + 1;
    if (part.length > 0 && bytes + size > maxBytes) {
      parts.push(part);
      part = [];
      bytes = 32;
    }
    part.push(event);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}
