/**
 * Writes the latest value per key, coalesced: what the Batcher is not. The Batcher queues every
 * item and bounds them by count; here a key set again before its flush replaces (merges into) its
 * pending value, so what waits is bounded by the keys touched in one interval (devices seen,
 * sessions opened or closed), however many times each was touched, and also while the writer is
 * down: a failed flush's entries merge back under the newer ones and are retried after the one
 * backoff. A non-retriable error drops that flush (told to `onError`): it would fail again.
 * No timer runs while nothing waits.
 */
import { exponentialBackoff, type Backoff } from './backoff.ts';
import { positiveInteger } from './checkOption.ts';
import type { Clock, TimerHandle } from './clock.ts';
import { toFleetError, type FleetError } from './errors.ts';

export interface CoalescingWriterOptions<K, V> {
  clock: Clock;
  /** Longest a value waits before its flush starts, ms. */
  intervalMs: number;
  /** The value kept when `key` is set again before its flush (or a failed flush's value meets a newer one). */
  merge(older: V, newer: V): V;
  /** Writes one flush. */
  write(entries: ReadonlyMap<K, V>): Promise<void>;
  /** Delay before retry `attempt` after a retriable failure. Default 1 s doubling to 30 s. */
  backoff?: Backoff;
  onError?(error: FleetError, retrying: boolean): void;
}

export class CoalescingWriter<K, V> {
  readonly #o: CoalescingWriterOptions<K, V>;
  readonly #backoff: Backoff;
  #pending = new Map<K, V>();
  #timer: TimerHandle | undefined;
  #flushing: Promise<void> | undefined;
  #failures = 0;
  #stopped = false;

  constructor(options: CoalescingWriterOptions<K, V>) {
    positiveInteger(options.intervalMs, 'coalescing writer: intervalMs');
    this.#o = options;
    this.#backoff = options.backoff ?? exponentialBackoff({ initialMs: 1000, maxMs: 30_000 });
  }

  /** Values waiting for a flush. */
  get size(): number {
    return this.#pending.size;
  }

  set(key: K, value: V): void {
    if (this.#stopped) return;
    const older = this.#pending.get(key);
    this.#pending.set(key, older === undefined ? value : this.#o.merge(older, value));
    if (this.#timer === undefined && this.#flushing === undefined) this.#arm(this.#o.intervalMs);
  }

  /** Writes what waits now (after the flush in progress, if any); rejects when that write fails. */
  async flush(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing.catch(() => undefined);
    this.#timer?.cancel();
    this.#timer = undefined;
    if (this.#pending.size === 0) return;
    const entries = this.#pending;
    this.#pending = new Map();
    const flushing = this.#o.write(entries);
    this.#flushing = flushing.then(() => undefined, () => undefined);
    try {
      await flushing;
      this.#failures = 0;
    } catch (error) {
      const e = toFleetError(error);
      const retrying = e.retriable && !this.#stopped;
      this.#failures = retrying ? this.#failures + 1 : 0;
      if (retrying) {
        for (const [key, value] of entries) {
          const newer = this.#pending.get(key);
          this.#pending.set(key, newer === undefined ? value : this.#o.merge(value, newer));
        }
      }
      this.#o.onError?.(e, retrying);
      throw e;
    } finally {
      this.#flushing = undefined;
      if (!this.#stopped && this.#pending.size > 0 && this.#timer === undefined) {
        this.#arm(this.#failures > 0 ? this.#backoff(this.#failures - 1) : this.#o.intervalMs);
      }
    }
  }

  /** Writes what waits once more (a failure is told to onError, not thrown), then takes nothing. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    await this.flush().catch(() => undefined);
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#pending.clear();
  }

  /** Stops at once: what waits is dropped. */
  discard(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#pending.clear();
  }

  #arm(ms: number): void {
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      // A failure was told to onError; flush arms the retry.
      this.flush().catch(() => undefined);
    }, ms);
  }
}
