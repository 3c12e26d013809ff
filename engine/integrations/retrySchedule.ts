/**
 * When a failed delivery is tried again. The delay is the engine's one exponential backoff
 * (kernel/backoff.ts: about 1 s before the first retry, doubling, at most 10 minutes apart) with
 * jitter, and attempts stop once the first failure is `giveUpAfterMs` old (24 h by default).
 *
 * - Jitter, unlike the kernel's other users: after a receiver's outage every integration pointing at
 *   it failed at about the same moment, and without jitter they would all come back at once. Each
 *   delay is drawn from ±`jitter` around the nominal one (±20%: the first retry comes 0.8–1.2 s
 *   after the failure), never above the cap. The random source is injected, like the Clock.
 * - Retry-After (429, 503; deliveryOutcome.ts) is honoured as a lower bound, up to the same cap: a
 *   receiver may slow an integration down to one attempt every `maxDelayMs`, never to a standstill
 *   (a hostile or mistaken `Retry-After: 999999999` does not park it for years), and the give-up
 *   window holds whatever the receiver asks.
 * - The last attempt is made at the deadline rather than skipped when the delay would cross it, so
 *   a receiver back just before the window closes still gets its events.
 */
import { exponentialBackoff, type Backoff } from '../kernel/backoff.ts';
import { nonNegative } from '../kernel/checkOption.ts';

export interface RetryScheduleOptions {
  /** Nominal delay before the first retry, ms. Default 1000. */
  initialDelayMs?: number;
  /** Longest wait between two attempts, jitter and Retry-After included, ms. Default 600 000 (10 min). */
  maxDelayMs?: number;
  /** Attempts stop once the first failure is this old, ms. Default 86 400 000 (24 h). */
  giveUpAfterMs?: number;
  /** Fraction of the nominal delay drawn at random either side, 0..1. Default 0.2. */
  jitter?: number;
  /** Uniform in [0, 1). Default Math.random. */
  random?: () => number;
}

export const RETRY_DEFAULTS = { initialDelayMs: 1000, maxDelayMs: 600_000, giveUpAfterMs: 86_400_000, jitter: 0.2 } as const;

/** The failures so far of the events an attempt carried. */
export interface RetryState {
  /** Failed attempts, this one included (1 after the first failure). */
  failures: number;
  /** When the first of them failed, epoch ms. */
  firstFailureAt: number;
}

export type RetryDecision =
  | { kind: 'retry'; at: number; delayMs: number }
  | { kind: 'give-up'; since: number };

export interface RetrySchedule {
  /** After a failure at `nowMs`: when to try again, or that the window is over. `retryAfterMs` as the receiver asked. */
  afterFailure(state: RetryState, nowMs: number, retryAfterMs?: number): RetryDecision;
}

export function retrySchedule(options: RetryScheduleOptions = {}): RetrySchedule {
  const maxDelayMs = nonNegative(options.maxDelayMs ?? RETRY_DEFAULTS.maxDelayMs, 'retry schedule: maxDelayMs');
  const giveUpAfterMs = nonNegative(options.giveUpAfterMs ?? RETRY_DEFAULTS.giveUpAfterMs, 'retry schedule: giveUpAfterMs');
  const jitter = nonNegative(options.jitter ?? RETRY_DEFAULTS.jitter, 'retry schedule: jitter');
  if (jitter > 1) throw new TypeError('retry schedule: jitter must be <= 1');
  const random = options.random ?? Math.random;
  const nominal: Backoff = exponentialBackoff({ initialMs: options.initialDelayMs ?? RETRY_DEFAULTS.initialDelayMs, maxMs: maxDelayMs });
  return {
    afterFailure(state, nowMs, retryAfterMs) {
      if (!Number.isSafeInteger(state.failures) || state.failures < 1) throw new RangeError('retry schedule: failures must be an integer >= 1');
      const deadline = state.firstFailureAt + giveUpAfterMs;
      if (nowMs >= deadline) return { kind: 'give-up', since: state.firstFailureAt };
      const base = nominal(state.failures - 1);
      const jittered = base * (1 + jitter * (2 * random() - 1));
      const wanted = Math.max(jittered, retryAfterMs !== undefined && retryAfterMs > 0 ? retryAfterMs : 0);
      const delayMs = Math.round(Math.min(maxDelayMs, wanted, deadline - nowMs));
      return { kind: 'retry', at: nowMs + delayMs, delayMs };
    },
  };
}
