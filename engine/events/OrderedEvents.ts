/**
 * Keeps the events of a partition's uplinks in the order the pipeline handed the uplinks out: each
 * takes a place when it is emitted and fills it once what it stored and refused is durable; records
 * go to the EventWriter (one append at a time) in the order of the places. Without it, an uplink
 * refused whole (its dead letter lingers a little) would have its event land after the states of
 * the device's next uplink.
 */
import type { FleetError } from '../kernel/errors.ts';
import type { ProducerRecord } from '../ports/log.ts';
import type { EventWriter } from './EventWriter.ts';

export interface EventPlace {
  record: ProducerRecord | undefined;
  done: ((error?: FleetError) => void) | undefined;
  filled: boolean;
}

export class OrderedEvents {
  readonly #writer: EventWriter;
  readonly #queues = new Map<number, EventPlace[]>();

  constructor(writer: EventWriter) {
    this.#writer = writer;
  }

  /** A place in the partition's order, taken when the uplink is emitted. */
  reserve(partition: number): EventPlace {
    const place: EventPlace = { record: undefined, done: undefined, filled: false };
    let queue = this.#queues.get(partition);
    if (queue === undefined) this.#queues.set(partition, (queue = []));
    queue.push(place);
    return place;
  }

  /** The uplink's record (undefined: nothing to write); `done` once it is durable, in its turn. */
  fill(partition: number, place: EventPlace, record: ProducerRecord | undefined, done: (error?: FleetError) => void): void {
    place.record = record;
    place.done = done;
    place.filled = true;
    const queue = this.#queues.get(partition)!;
    while (queue.length > 0 && queue[0].filled) {
      const next = queue.shift()!;
      this.#writer.addThen(next.record, next.done!);
    }
  }
}
