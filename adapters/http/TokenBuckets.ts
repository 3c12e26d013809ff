/**
 * Per-key token buckets (the edge keys them by bearer token). Time comes from the injected Clock,
 * so tests step a SimulatedClock instead of sleeping. The number of buckets is bounded: the least
 * recently used bucket is dropped first, which at worst hands a long-idle token a full bucket again.
 */
import type { Clock } from '../../engine/kernel/clock.ts';

export interface TokenBucketsOptions {
  clock: Clock;
  /** Sustained rate, requests per second (> 0). */
  perSecond: number;
  /** Bucket capacity: requests a key may make at once after being idle (>= 1). */
  burst: number;
  /** Buckets kept at most. Default 100 000. */
  maxKeys?: number;
}

interface Bucket {
  tokens: number;
  /** Epoch ms of the last refill. */
  at: number;
}

export class TokenBuckets {
  readonly #clock: Clock;
  readonly #perMs: number;
  readonly #burst: number;
  readonly #maxKeys: number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(options: TokenBucketsOptions) {
    if (!(options.perSecond > 0) || !(options.burst >= 1)) throw new RangeError('rate limit needs perSecond > 0 and burst >= 1');
    this.#clock = options.clock;
    this.#perMs = options.perSecond / 1000;
    this.#burst = options.burst;
    this.#maxKeys = options.maxKeys ?? 100_000;
  }

  /** Takes one token for `key`: 0 when allowed, else the seconds until a token will be there. */
  take(key: string): number {
    const now = this.#clock.now();
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.#burst, at: now };
      if (this.#buckets.size >= this.#maxKeys) {
        const oldest = this.#buckets.keys().next().value;
        if (oldest !== undefined) this.#buckets.delete(oldest);
      }
    } else {
      // Re-insert to keep Map order = least recently used first.
      this.#buckets.delete(key);
      const elapsed = Math.max(0, now - bucket.at);
      bucket.tokens = Math.min(this.#burst, bucket.tokens + elapsed * this.#perMs);
      bucket.at = now;
    }
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return (1 - bucket.tokens) / this.#perMs / 1000;
  }

  get size(): number {
    return this.#buckets.size;
  }
}
