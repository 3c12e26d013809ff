/**
 * While ingestion is busy, the lanes of one integration take turns (DeliveryLane #giveWay): each
 * step a lane takes (reading a batch of records, or saving and sending a batch) waits at least
 * `spacingMs` from when it asked, and at least `spacingMs` after the integration's previous step,
 * in the order the lanes asked. So a busy engine gives each integration one step per `spacingMs`,
 * not one per partition, and no partition of it waits behind another that asked later: the
 * integration never stops, and ten integrations of eight partitions take ten steps a second from
 * the engine during a burst, not eighty.
 */
export class BusyTurns {
  /** The least time between two steps of the integration, and a step's least wait, ms. Default 1000. */
  readonly spacingMs: number;
  /** When the integration's next step may start, epoch ms. */
  #nextAt = Number.NEGATIVE_INFINITY;
  /** Lanes waiting, in the order they asked. */
  readonly #queue: object[] = [];

  constructor(spacingMs = 1000) {
    this.spacingMs = spacingMs;
  }

  /** A place in the line, until given up (pass() or leave()). */
  join(): object {
    const ticket = {};
    this.#queue.push(ticket);
    return ticket;
  }

  /** Whether `ticket`, which asked at `askedAt`, may go at `now`: when it does, it leaves the line and the integration's next step is `spacingMs` away. */
  pass(ticket: object, askedAt: number, now: number): boolean {
    if (this.#queue[0] !== ticket || now < this.#nextAt || now < askedAt + this.spacingMs) return false;
    this.#queue.shift();
    this.#nextAt = now + this.spacingMs;
    return true;
  }

  /** Gives up a place (ingestion is no longer busy, or the lane stopped). */
  leave(ticket: object): void {
    const at = this.#queue.indexOf(ticket);
    if (at >= 0) this.#queue.splice(at, 1);
  }

  /** The earliest time a step may start. */
  get nextAt(): number {
    return this.#nextAt;
  }
}
