/**
 * Uplinks of all connections handed to admission and not yet answered, bounded below the log
 * intake's own bound (UplinkIngest maxPending, 4096 by default, beyond which it refuses with
 * BACKPRESSURE): at the bound a connection stops reading and waits its turn, so a burst from many
 * clients becomes TCP backpressure instead of refusals or closed connections.
 *
 * Waiting connections are woken together once a quarter of the room is free again, first come
 * first served, and while any wait nobody else goes ahead of them. Woken one at a time at every
 * answered uplink, a thousand clients in a burst made the edge resume and pause a socket for nearly
 * every uplink (two system calls each, to start and stop reading), each connection admitting one
 * uplink per turn.
 */
export class AdmissionGate {
  readonly max: number;
  inflight = 0;
  /** Waiters are woken once the uplinks in flight are down to this. */
  readonly #wakeAt: number;
  /** Connections waiting for room, first come first served. */
  readonly #waiting = new Set<() => void>();
  #waking = false;

  constructor(max: number) {
    this.max = max;
    this.#wakeAt = max - Math.max(1, Math.floor(max / 4));
  }

  /** Room for one more uplink: below the bound, and no connection waiting for its turn. */
  get open(): boolean {
    return this.inflight < this.max && (this.#waking || this.#waiting.size === 0);
  }

  /** Connections waiting for room. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** `wake` runs once there is room again (synchronously, from done()). */
  wait(wake: () => void): void {
    this.#waiting.add(wake);
  }

  done(): void {
    this.inflight--;
    if (this.#waking || this.#waiting.size === 0 || this.inflight > this.#wakeAt) return;
    this.#waking = true;
    try {
      for (const wake of this.#waiting) {
        if (this.inflight >= this.max) break;
        this.#waiting.delete(wake);
        wake();
      }
    } finally {
      this.#waking = false;
    }
  }
}
