/**
 * A bounded map whose entries expire `ttlMs` after they were set, by the injected Clock. When full,
 * the least recently set entry goes first. ttlMs 0 keeps nothing.
 */
import type { Clock } from '../../engine/clock.ts';

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

  set(key: K, value: V): void {
    if (this.#ttlMs <= 0) return;
    this.#entries.delete(key);
    if (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, { value, expires: this.#clock.now() + this.#ttlMs });
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  /** Drops every entry whose value matches. */
  deleteWhere(match: (value: V, key: K) => boolean): void {
    for (const [key, entry] of this.#entries) if (match(entry.value, key)) this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
