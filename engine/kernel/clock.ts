/**
 * Injected time. Flushes, timeouts, passivation and backoff all read a Clock, so tests advance a
 * simulated clock instead of sleeping.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const timer = setTimeout(fn, ms);
    timer.unref?.();
    return { cancel: () => clearTimeout(timer) };
  },
};

interface PendingTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** A clock that only moves when told to. */
export class SimulatedClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: PendingTimer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: PendingTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    this.#timers.push(timer);
    return { cancel: () => { timer.cancelled = true; } };
  }

  /** Moves time forward, firing due timers in order (timers set by timers fire too if due). */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      this.#timers = this.#timers.filter((t) => !t.cancelled);
      let next: PendingTimer | undefined;
      for (const t of this.#timers) {
        if (t.at <= target && (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      }
      if (!next) break;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      this.#now = Math.max(this.#now, next.at);
      next.fn();
    }
    this.#now = target;
  }

  /** Number of timers still waiting. */
  get pending(): number {
    return this.#timers.filter((t) => !t.cancelled).length;
  }
}
