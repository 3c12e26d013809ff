/**
 * The one retry delay of the engine (batchers, dead-letter retries, command resends): exponential,
 * `initialMs · 2^attempt`, capped at `maxMs`. Callers wait it out on their Clock.
 *
 * No jitter, on purpose: a batcher retries one batch at a time per process, so there is no crowd of
 * clients to spread out, and a delay that is a pure function of the attempt keeps schedules exact on
 * the SimulatedClock. The one crowd is command resends, one per device, after a network server
 * refused them all at once; jitter there would take a random source injected like the Clock.
 */
import { nonNegative } from './checkOption.ts';

export interface BackoffOptions {
  /** Delay before the first retry, ms. */
  initialMs: number;
  /** Ceiling of the delay, ms. */
  maxMs: number;
}

/** Delay before retry `attempt` (0 for the first), ms. */
export type Backoff = (attempt: number) => number;

export function exponentialBackoff(options: BackoffOptions): Backoff {
  const initialMs = nonNegative(options.initialMs, 'backoff: initialMs');
  const maxMs = nonNegative(options.maxMs, 'backoff: maxMs');
  return (attempt) => {
    if (!Number.isInteger(attempt) || attempt < 0) throw new RangeError('backoff: attempt must be an integer >= 0');
    return Math.min(maxMs, initialMs * 2 ** attempt);
  };
}
