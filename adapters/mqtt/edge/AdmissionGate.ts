/**
 * Uplinks of all connections handed to admission and not yet answered, bounded below the log
 * intake's own bound (UplinkIngest maxPending, 4096 by default, beyond which it refuses with
 * BACKPRESSURE): at the bound a connection stops reading and waits its turn, so a burst from many
 * clients becomes TCP backpressure instead of refusals or closed connections.
 */
export class AdmissionGate {
  readonly max: number;
  inflight = 0;
  /** Connections waiting for room, first come first served. */
  readonly #waiting = new Set<() => void>();

  constructor(max: number) {
    this.max = max;
  }

  get open(): boolean {
    return this.inflight < this.max;
  }

  /** `wake` runs once there is room again. */
  wait(wake: () => void): void {
    this.#waiting.add(wake);
  }

  done(): void {
    this.inflight--;
    for (const wake of this.#waiting) {
      if (this.inflight >= this.max) break;
      this.#waiting.delete(wake);
      wake();
    }
  }
}
