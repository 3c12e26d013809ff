/**
 * Keeps the events of a partition's uplinks in the order the pipeline handed the uplinks out: each
 * takes a place when it is emitted and fills it once what it stored and refused is durable; the
 * uplinks' events go to the EventWriter (one append at a time) in the order of the places, with
 * their partition of `uplinks` (the writer may make a run of them one record). Without it, an
 * uplink refused whole (its dead letter lingers a little) would have its event land after the
 * states of the device's next uplink.
 */
import type { FleetError } from '../kernel/errors.ts';
import type { EventWriter } from './EventWriter.ts';
import type { UplinkEvents } from './eventRecords.ts';

export interface EventPlace {
  events: UplinkEvents | undefined;
  done: ((error?: FleetError) => void) | undefined;
  filled: boolean;
}

export class OrderedEvents {
  readonly #writer: EventWriter;
  /** Per partition: its places, and the index of the first not yet handed on (shift() is O(n) on tens of thousands). */
  readonly #queues = new Map<number, { places: EventPlace[]; head: number }>();

  constructor(writer: EventWriter) {
    this.#writer = writer;
  }

  /** A place in the partition's order, taken when the uplink is read. */
  reserve(partition: number): EventPlace {
    const place: EventPlace = { events: undefined, done: undefined, filled: false };
    let queue = this.#queues.get(partition);
    if (queue === undefined) this.#queues.set(partition, (queue = { places: [], head: 0 }));
    queue.places.push(place);
    return place;
  }

  /** The uplink's events (undefined: nothing to write); `done` once they are durable, in their turn. */
  fill(partition: number, place: EventPlace, events: UplinkEvents | undefined, done: (error?: FleetError) => void): void {
    place.events = events;
    place.done = done;
    place.filled = true;
    const queue = this.#queues.get(partition)!;
    const { places } = queue;
    let head = queue.head;
    while (head < places.length && places[head].filled) {
      const next = places[head++];
      if (next.events === undefined) this.#writer.addThen(undefined, next.done!);
      else this.#writer.addUplinkThen(partition, next.events, next.done!);
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
}
