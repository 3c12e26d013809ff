/**
 * Whether ingestion has more than the process can do now: the signal deliveries give way to
 * (DeliveryLane `busy`). Busy when either
 * - the engine holds more than `maxInFlight` uplinks (a backlog it works through), or
 * - uplinks came in since the last sample while the process's thread had no time to spare (its
 *   event loop busy at least `saturatedAt` of the time since that sample). A device edge in the
 *   same process, answering as fast as it can, never lets the engine's backlog grow, yet leaves no
 *   time for deliveries: without this, they took two thirds of the thread from it.
 *
 * A backlog of deliveries alone (the loop saturated, no uplink coming in) is not busy: deliveries
 * drain it at full speed. Once seen busy it stays so for `holdMs`: the in-flight count dips each
 * time a large store insert completes, and the loop's load each time deliveries give way, and
 * deliveries must not take those moments as idle. Sampled every `sampleMs`, however often it is
 * asked, or sooner once `sampleUplinks` uplinks have come in since the last sample (but not within
 * `minSampleMs` of it): the start of a burst is seen within tens of milliseconds instead of up to
 * a whole window, in which deliveries took the thread from the burst, while a trickle (fewer
 * uplinks than that per window) is sampled as before and deliveries keep their share of the time
 * under it.
 */
import type { Clock } from '../kernel/clock.ts';

export interface IngestionBusyOptions {
  clock: Pick<Clock, 'now'>;
  /** Uplinks the engine holds now. */
  inFlight(): number;
  /** Uplinks the engine has read so far (a count that only grows). */
  received(): number;
  /** The share (0 to 1) of the time since its previous call that the thread was busy; absent: only the in-flight count counts. */
  utilization?(): number;
  /** Default 2000. */
  maxInFlight?: number;
  /** Default 0.9. */
  saturatedAt?: number;
  /** Default 250 ms. */
  sampleMs?: number;
  /** Default 200. */
  sampleUplinks?: number;
  /** Default 25 ms. */
  minSampleMs?: number;
  /** Default 1000 ms. */
  holdMs?: number;
}

export class IngestionBusy {
  readonly #o: IngestionBusyOptions;
  readonly #maxInFlight: number;
  readonly #saturatedAt: number;
  readonly #sampleMs: number;
  readonly #sampleUplinks: number;
  readonly #minSampleMs: number;
  readonly #holdMs: number;
  #seenAt = Number.NEGATIVE_INFINITY;
  #sampledAt: number;
  #received: number;

  constructor(options: IngestionBusyOptions) {
    this.#o = options;
    this.#maxInFlight = options.maxInFlight ?? 2000;
    this.#saturatedAt = options.saturatedAt ?? 0.9;
    this.#sampleMs = options.sampleMs ?? 250;
    this.#sampleUplinks = options.sampleUplinks ?? 200;
    this.#minSampleMs = options.minSampleMs ?? 25;
    this.#holdMs = options.holdMs ?? 1000;
    this.#sampledAt = options.clock.now();
    this.#received = options.received();
    options.utilization?.();
  }

  busy(): boolean {
    const now = this.#o.clock.now();
    if (this.#o.inFlight() > this.#maxInFlight) this.#seenAt = now;
    else if (this.#o.utilization !== undefined && this.#due(now)) {
      const received = this.#o.received();
      const utilization = this.#o.utilization();
      if (received > this.#received && utilization >= this.#saturatedAt) this.#seenAt = now;
      this.#received = received;
      this.#sampledAt = now;
    }
    return now - this.#seenAt < this.#holdMs;
  }

  #due(now: number): boolean {
    const since = now - this.#sampledAt;
    return since >= this.#sampleMs || (since >= this.#minSampleMs && this.#o.received() - this.#received >= this.#sampleUplinks);
  }
}
