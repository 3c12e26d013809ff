/**
 * A bounded map whose entries expire `ttlMs` after they were set, by the injected Clock. When full,
 * the least recently set entry goes first. ttlMs 0 keeps nothing. getOrLoad() runs one load per key
 * at a time: when an entry expires under load, the requests that miss together share one lookup.
 */
import type { Clock } from './clock.ts';

export interface TtlCacheOptions {
  clock: Clock;
  ttlMs: number;
  /** Entries kept at most. Default 100 000. */
  maxEntries?: number;
}

export class TtlCache<K, V> {
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #entries = new Map<K, { value: V; expires: number }>();
  readonly #loading = new Map<K, Promise<V | undefined>>();

  constructor(options: TtlCacheOptions) {
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#max = options.maxEntries ?? 100_000;
  }

  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.#clock.now() >= entry.expires) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** The cached value, else the result of `load` (kept when defined; a failure is not kept). */
  getOrLoad(key: K, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.get(key);
    if (cached !== undefined) return Promise.resolve(cached);
    const running = this.#loading.get(key);
    if (running !== undefined) return running;
    const pending: Promise<V | undefined> = load().then(
      (value) => {
        // Not kept when delete() ran meanwhile (the value may predate that change).
        if (this.#loading.get(key) === pending) {
          this.#loading.delete(key);
          if (value !== undefined) this.set(key, value);
        }
        return value;
      },
      (error: unknown) => {
        if (this.#loading.get(key) === pending) this.#loading.delete(key);
        throw error;
      },
    );
    this.#loading.set(key, pending);
    return pending;
  }

  set(key: K, value: V): void {
    if (this.#ttlMs <= 0) return;
    this.#entries.delete(key);
    if (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, { value, expires: this.#clock.now() + this.#ttlMs });
  }

  /** Also makes a load in progress for the key not count: its result may predate the change. */
  delete(key: K): void {
    this.#entries.delete(key);
    this.#loading.delete(key);
  }

  /** Drops every entry whose value matches, and discounts every load in progress (their values are unknown yet). */
  deleteWhere(match: (value: V, key: K) => boolean): void {
    for (const [key, entry] of this.#entries) if (match(entry.value, key)) this.#entries.delete(key);
    this.#loading.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
