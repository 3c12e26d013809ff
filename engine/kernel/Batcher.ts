/**
 * The engine's one batching primitive: ClickHouse and Kafka want few large writes, callers make
 * many small items. A batch starts when `maxItems` weight is buffered or `maxDelayMs` after its
 * oldest item was accepted; batches are cut in arrival order, `concurrency` written at once, each
 * at most `maxItems` heavy unless one item is heavier. At most `maxPending` weight is buffered or
 * being written: an item that does not fit waits, unaccepted and in order (`overflow: 'wait'`, so
 * a caller awaiting add() is slowed to the writer's pace), or is refused at once (`'refuse'`); one
 * heavier than `maxPending` is accepted alone rather than never. A retriable FleetError is retried
 * after `retry.backoff(attempt)` on the Clock, up to `retry.maxRetries` times; any other error, or
 * the last retriable one, fails that batch only.
 */
import type { Backoff } from './backoff.ts';
import { nonNegative, positiveInteger } from './checkOption.ts';
import type { Clock, TimerHandle } from './clock.ts';
import { FleetError, toFleetError } from './errors.ts';

export interface BatcherOptions<T> {
  clock: Clock;
  /** Writes one batch; a synchronous throw counts as a rejection. */
  write(items: T[]): Promise<void>;
  maxItems: number;
  /** ms; 0 starts batches at once. */
  maxDelayMs: number;
  /**
   * With no batch being written, a buffer lighter than this starts in the next turn of the clock
   * (a 0 ms timer: what the rest of the turn adds goes with it) instead of `maxDelayMs` after its
   * oldest item; items that come while a batch is written wait for it and then start the same way
   * when they are still this light (group commit). A trickle is written as it comes; a flow, whose
   * items pile up past this while a batch is written, is batched by `maxItems` and `maxDelayMs` as
   * without it. Default 0: never.
   */
  immediateBelow?: number;
  /**
   * Least time between the starts of two batches started by `immediateBelow`, ms: bounds how many
   * small writes a steady trickle makes (each insert is a part for ClickHouse). Default 0.
   */
  immediateSpacingMs?: number;
  maxPending: number;
  overflow: 'wait' | 'refuse';
  /** Weight of one item (e.g. the rows of one append). Default 1. */
  weight?(item: T): number;
  /** Batches written at once. Default 1. */
  concurrency?: number;
  /** Default: no retries. */
  retry?: { backoff: Backoff; maxRetries: number };
  /** Told once per batch that failed for good (its items' promises reject too). */
  onFailed?(items: T[], error: FleetError): void;
  /** Names the batcher in errors. Default 'batcher'. */
  name?: string;
}

interface Held<T> {
  item: T;
  weight: number;
  seq: number;
  acceptedAt: number;
  resolve: (() => void) | undefined;
  reject: ((error: FleetError) => void) | undefined;
  /** addThen's callback. */
  done: ((error?: FleetError) => void) | undefined;
}

export class Batcher<T> {
  readonly #o: BatcherOptions<T> & { name: string; concurrency: number; immediateBelow: number; immediateSpacingMs: number; weight(item: T): number };
  #buffer: Held<T>[] = [];
  #bufferWeight = 0;
  #waiting: Held<T>[] = [];
  #waitingWeight = 0;
  /**
   * The batches being written (at most `concurrency`). An array, not a Set: a Set that is added to
   * and deleted from at every batch rehashes every few batches, and V8 keeps each replaced hash
   * table linked to its successor (for iterators that outlive it). Once one of those tables had
   * been moved to the old generation, that chain kept every later table, and the batches, items
   * and callbacks they held, reachable for the young-generation collector until the next full
   * collection, which copied them all to the old generation (~10 MB per scavenge against 0.04 MB).
   * `npx node bench/ingest.bench.ts 300000 256 ingest`: 131–170 ms of scavenge pauses per round
   * against 9–22 ms, 206–254k against 234–263k appends/s.
   */
  readonly #writing: Held<T>[][] = [];
  #writingWeight = 0;
  readonly #retries = new Set<{ timer: TimerHandle; run(): void }>();
  #timer: TimerHandle | undefined;
  /** #timer is the next turn's (immediateBelow), not the oldest item's maxDelayMs. */
  #soon = false;
  /** When the last batch started (immediateSpacingMs). */
  #lastStart = -Infinity;
  #seq = 0;
  #draining = 0;
  #lastTry = 0;
  #wakers: (() => void)[] = [];
  #closed = false;

  constructor(options: BatcherOptions<T>) {
    const name = options.name ?? 'batcher';
    this.#o = { weight: () => 1, immediateBelow: 0, immediateSpacingMs: 0, ...options, name, concurrency: positiveInteger(options.concurrency ?? 1, `${name}: concurrency`) };
    positiveInteger(options.maxItems, `${name}: maxItems`);
    positiveInteger(options.maxPending, `${name}: maxPending`);
    nonNegative(options.maxDelayMs, `${name}: maxDelayMs`);
    nonNegative(this.#o.immediateBelow, `${name}: immediateBelow`);
    nonNegative(this.#o.immediateSpacingMs, `${name}: immediateSpacingMs`);
    if (options.retry) nonNegative(options.retry.maxRetries, `${name}: maxRetries`);
  }

  /** Weight buffered or being written. */
  get pending(): number {
    return this.#bufferWeight + this.#writingWeight;
  }

  /** Weight waiting for room (not yet accepted). */
  get waiting(): number {
    return this.#waitingWeight;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Resolves once `item` is written; rejects with a FleetError (CLOSED, BACKPRESSURE, or its batch's). */
  add(item: T): Promise<void> {
    if (this.#closed) return Promise.reject(new FleetError('CLOSED', `${this.#o.name} is closed`));
    const held = this.#held(item);
    const done = new Promise<void>((resolve, reject) => { held.resolve = resolve; held.reject = reject; });
    return this.#hold(held) ? done : Promise.reject(new FleetError('BACKPRESSURE', `${this.#o.name} is full`));
  }

  /**
   * add() without a promise per item: `done` is called once, without an argument when `item` is
   * written, with the FleetError (CLOSED, BACKPRESSURE, or its batch's) when not; never synchronously.
   * For callers that add thousands of items per batch (StateBatcher, one append per uplink): a
   * promise, its resolvers and the caller's reactions were kept alive per item until its batch was
   * written, several times what the item itself holds.
   */
  addThen(item: T, done: (error?: FleetError) => void): void {
    if (this.#closed) return refuseLater(done, new FleetError('CLOSED', `${this.#o.name} is closed`));
    if (!this.#hold(this.#held(item, done))) refuseLater(done, new FleetError('BACKPRESSURE', `${this.#o.name} is full`));
  }

  /** add() for callers that do not wait: false when closed or refused; failures reach onFailed only. */
  offer(item: T): boolean {
    return !this.#closed && this.#hold(this.#held(item));
  }

  /**
   * Starts everything held; resolves once every item added so far has settled, never rejects.
   * `retries: false` gives each batch one last try: a waiting retry runs at once, a failure is final.
   */
  async flush(options: { retries?: boolean } = {}): Promise<void> {
    const until = this.#seq;
    const lastTry = options.retries === false ? 1 : 0;
    this.#draining++;
    this.#lastTry += lastTry;
    if (lastTry) for (const retry of [...this.#retries]) { retry.timer.cancel(); retry.run(); }
    this.#schedule();
    try {
      while (this.#oldest() < until) await new Promise<void>((wake) => this.#wakers.push(wake));
    } finally {
      this.#draining--;
      this.#lastTry -= lastTry;
    }
  }

  /** Refuses new items (CLOSED), then flushes. */
  close(options: { retries?: boolean } = {}): Promise<void> {
    this.#closed = true;
    return this.flush(options);
  }

  #held(item: T, done?: (error?: FleetError) => void): Held<T> {
    // Every field set here, so all items share one object shape (the hot path of StateBatcher).
    return { item, weight: this.#o.weight(item), seq: this.#seq++, acceptedAt: 0, resolve: undefined, reject: undefined, done };
  }

  #hold(held: Held<T>): boolean {
    if (this.#waiting.length === 0 && this.#fits(held.weight)) this.#accept(held);
    else if (this.#o.overflow === 'refuse') return false;
    else {
      this.#waiting.push(held);
      this.#waitingWeight += held.weight;
    }
    this.#schedule();
    return true;
  }

  #fits(weight: number): boolean {
    const pending = this.#bufferWeight + this.#writingWeight;
    return pending === 0 || pending + weight <= this.#o.maxPending;
  }

  #accept(held: Held<T>): void {
    held.acceptedAt = this.#o.clock.now();
    this.#buffer.push(held);
    this.#bufferWeight += held.weight;
  }

  /** Seq of the oldest item not settled; Infinity when none. */
  #oldest(): number {
    let oldest = this.#buffer[0]?.seq ?? this.#waiting[0]?.seq ?? Infinity;
    for (const batch of this.#writing) oldest = Math.min(oldest, batch[0].seq);
    return oldest;
  }

  /**
   * Starts the batches that are due, else keeps one timer: the next turn's for a trickle
   * (immediateBelow), or the oldest buffered item's. `soon`: that next turn has come.
   */
  #schedule(soon = false): void {
    while (this.#buffer.length > 0 && this.#writing.length < this.#o.concurrency) {
      const due = this.#draining > 0 || this.#bufferWeight >= this.#o.maxItems;
      const wait = due ? 0 : this.#buffer[0].acceptedAt + this.#o.maxDelayMs - this.#o.clock.now();
      if (wait > 0) {
        const trickle = this.#writing.length === 0 && this.#bufferWeight < this.#o.immediateBelow;
        if (!trickle) {
          this.#arm(wait, false);
          return;
        }
        if (!soon) {
          this.#arm(Math.max(0, this.#lastStart + this.#o.immediateSpacingMs - this.#o.clock.now()), true);
          return;
        }
      }
      this.#timer?.cancel();
      this.#timer = undefined;
      this.#start();
    }
  }

  /** Keeps one timer; the next turn's replaces a later one. */
  #arm(wait: number, soon: boolean): void {
    if (this.#timer !== undefined && (this.#soon || !soon)) return;
    this.#timer?.cancel();
    this.#soon = soon;
    this.#timer = this.#o.clock.setTimeout(() => { this.#timer = undefined; this.#schedule(soon); }, wait);
  }

  #start(): void {
    this.#lastStart = this.#o.clock.now();
    const buffer = this.#buffer;
    let n = 0;
    let weight = 0;
    while (n < buffer.length && (n === 0 || weight + buffer[n].weight <= this.#o.maxItems)) weight += buffer[n++].weight;
    // One splice, not shift() per item (quadratic with thousands of small items per batch).
    const batch = buffer.splice(0, n);
    const items = batch.map((held) => held.item);
    this.#bufferWeight -= weight;
    this.#writing.push(batch);
    this.#writingWeight += weight;
    const attempt = (retry: number): void => {
      let written: Promise<void>;
      try {
        written = this.#o.write(items);
      } catch (error) {
        written = Promise.reject(error);
      }
      written.then(() => this.#settle(batch, items, weight), (cause: unknown) => {
        const error = toFleetError(cause);
        const policy = this.#o.retry;
        if (!error.retriable || policy === undefined || retry >= policy.maxRetries || this.#lastTry > 0) {
          return this.#settle(batch, items, weight, error);
        }
        const pending = {
          timer: this.#o.clock.setTimeout(() => pending.run(), policy.backoff(retry)),
          run: () => { this.#retries.delete(pending); attempt(retry + 1); },
        };
        this.#retries.add(pending);
      });
    };
    attempt(0);
  }

  #settle(batch: Held<T>[], items: T[], weight: number, error?: FleetError): void {
    this.#writing.splice(this.#writing.indexOf(batch), 1);
    this.#writingWeight -= weight;
    let callbacks = false;
    for (const held of batch) {
      if (held.done !== undefined) callbacks = true;
      else if (error) held.reject?.(error);
      else held.resolve?.();
    }
    // Callbacks run after this settlement, in the items' order; like promise reactions, one that
    // throws does not keep the others from running, and its error is not swallowed.
    if (callbacks) {
      queueMicrotask(() => {
        for (const held of batch) {
          try {
            held.done?.(error);
          } catch (thrown) {
            queueMicrotask(() => { throw thrown; });
          }
        }
      });
    }
    if (error) this.#o.onFailed?.(items, error);
    // Admit the waiting prefix with one splice: shift() per item is quadratic when thousands wait.
    let n = 0;
    while (n < this.#waiting.length && this.#fits(this.#waiting[n].weight)) {
      this.#waitingWeight -= this.#waiting[n].weight;
      this.#accept(this.#waiting[n++]);
    }
    if (n > 0) this.#waiting.splice(0, n);
    this.#schedule();
    for (const wake of this.#wakers.splice(0)) wake();
  }
}

/** `done(error)` in a later microtask, as a rejected promise's reactions run: never before the caller has returned. */
export function refuseLater(done: (error?: FleetError) => void, error: FleetError): undefined {
  queueMicrotask(() => done(error));
  return undefined;
}
