/**
 * Keeps the events of a partition's uplinks in the order the pipeline handed the uplinks out: each
 * takes a place when it is emitted and fills it once what it stored and refused is durable; records
 * go to the EventWriter (one append at a time) in the order of the places. Without it, an uplink
 * refused whole (its dead letter lingers a little) would have its event land after the states of
 * the device's next uplink.
 *
 * With `combine` (the local log, whose readers are the integrations), the uplinks filled in one
 * turn share records: a run of places in order becomes one record `{"uplinks":[…]}` of their records in that order
 * (schemas/events.ts), of at most `maxEvents` events, so that a record never holds more than an
 * integration's batch. A record per uplink would cost the engine a third of its throughput while
 * an integration is active: its text, its buffer, its place in the log.
 */
import type { FleetError } from '../kernel/errors.ts';
import type { ProducerRecord } from '../ports/log.ts';
import type { EventWriter } from './EventWriter.ts';
import { writeUplinkEvents, type UplinkEvents } from './eventRecords.ts';
import { JsonBytes } from './JsonBytes.ts';

export interface EventPlace {
  events: UplinkEvents | undefined;
  done: ((error?: FleetError) => void) | undefined;
  filled: boolean;
}

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

interface Queue {
  places: EventPlace[];
  /** The first place not yet handed on (shift() is O(n) on tens of thousands). */
  head: number;
  /** A hand-on is due at the end of this turn. */
  due: boolean;
}

export class OrderedEvents {
  readonly #writer: EventWriter;
  readonly #combine: Combine | undefined;
  readonly #queues = new Map<number, Queue>();
  readonly #bytes = new JsonBytes();

  constructor(writer: EventWriter, combine?: Combine) {
    this.#writer = writer;
    this.#combine = combine;
  }

  /** A place in the partition's order, taken when the uplink is read. */
  reserve(partition: number): EventPlace {
    const place: EventPlace = { events: undefined, done: undefined, filled: false };
    let queue = this.#queues.get(partition);
    if (queue === undefined) this.#queues.set(partition, (queue = { places: [], head: 0, due: false }));
    queue.places.push(place);
    return place;
  }

  /** The uplink's events (undefined: nothing to write); `done` once they are durable, in their turn. */
  fill(partition: number, place: EventPlace, events: UplinkEvents | undefined, done: (error?: FleetError) => void): void {
    place.events = events;
    place.done = done;
    place.filled = true;
    const queue = this.#queues.get(partition)!;
    if (this.#combine?.on !== true) return this.#handOn(queue);
    // The places filled in this turn (a batch of rows made durable fills many) go on together.
    if (queue.due || queue.places[queue.head]?.filled !== true) return;
    queue.due = true;
    queueMicrotask(() => {
      queue.due = false;
      this.#handOn(queue);
    });
  }

  /** Hands on the filled places at the head of `queue`, in order. */
  #handOn(queue: Queue): void {
    const { places } = queue;
    let head = queue.head;
    const start = head;
    while (head < places.length && places[head].filled) head++;
    if (this.#combine?.on !== true) {
      for (let i = start; i < head; i++) this.#writer.addThen(this.#record(places[i].events, this.#writer.now()), places[i].done!);
    } else {
      this.#combined(places, start, head);
    }
    if (head === places.length) {
      places.length = 0;
      head = 0;
    } else if (head > 4096 && head * 2 > places.length) {
      places.splice(0, head);
      head = 0;
    }
    queue.head = head;
  }

  #record(events: UplinkEvents | undefined, now: number): ProducerRecord | undefined {
    return events === undefined ? undefined : { key: events.deviceId, value: writeUplinkEvents(this.#bytes, events).take(), timestamp: now };
  }

  /** places[from, to) as records of runs of at most maxEvents events. */
  #combined(places: EventPlace[], from: number, to: number): void {
    const { maxEvents } = this.#combine!;
    const now = this.#writer.now();
    let i = from;
    while (i < to) {
      const first = places[i].events;
      if (first === undefined || first.count >= maxEvents) {
        this.#writer.addThen(this.#record(first, now), places[i++].done!);
        continue;
      }
      let end = i + 1;
      let count = first.count;
      for (; end < to; end++) {
        const next = places[end].events;
        if (next === undefined || count + next.count > maxEvents) break;
        count += next.count;
      }
      if (end === i + 1) {
        this.#writer.addThen(this.#record(first, now), places[i++].done!);
        continue;
      }
      const out = writeUplinkEvents(this.#bytes.raw('{"uplinks":['), first);
      const dones: ((error?: FleetError) => void)[] = [places[i].done!];
      for (let k = i + 1; k < end; k++) {
        writeUplinkEvents(out.raw(','), places[k].events!);
        dones.push(places[k].done!);
      }
      this.#writer.addThen({ key: first.deviceId, value: out.raw(']}').take(), timestamp: now }, (error) => {
        for (const done of dones) done(error);
      });
      i = end;
    }
  }
}

