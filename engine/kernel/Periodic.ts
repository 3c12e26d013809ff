/**
 * A task run once per interval on the Clock, the first time a random part of the interval after
 * start (processes started together do not run it together); a run starts `intervalMs` after the
 * previous one ended, never beside it. stop() cancels the next run and waits for one under way.
 */
import type { Clock, TimerHandle } from './clock.ts';
import { toFleetError, type FleetError } from './errors.ts';

export interface PeriodicOptions {
  clock: Clock;
  intervalMs: number;
  run(): Promise<unknown>;
  /** A run that failed; the next runs on its schedule. */
  onError?(error: FleetError): void;
}

export class Periodic {
  readonly #o: PeriodicOptions;
  #timer: TimerHandle | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;

  constructor(options: PeriodicOptions) {
    this.#o = options;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  start(): void {
    this.#schedule(Math.floor(Math.random() * this.#o.intervalMs));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    await this.#running?.catch(() => undefined);
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      const running = this.#running = this.#o.run().catch((error: unknown) => this.#o.onError?.(toFleetError(error)));
      void running.then(() => this.#schedule(this.#o.intervalMs));
    }, delayMs);
  }
}
