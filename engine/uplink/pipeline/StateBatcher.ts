/**
 * Groups state appends from many callers (device actors) into few store inserts: ClickHouse wants
 * thousands of rows per insert, actors produce a handful per uplink. Each caller's promise resolves
 * when its own rows are durable, which is what lets the pipeline commit log offsets (DESIGN.md §4).
 * It is the kernel Batcher weighted in rows: one batch in flight, in arrival order; appends past
 * `maxPendingRows` wait (overflow "wait", not "drop": an awaiting caller is slowed to the store's
 * pace; `waitingRows` shows how much is held back, for sources that pause on it); retriable store
 * errors retried with backoff, then that batch's promises reject. Rows are checked on append, so
 * one bad row fails its own call, not a batch.
 */
import { exponentialBackoff } from '../../kernel/backoff.ts';
import { Batcher } from '../../kernel/Batcher.ts';
import { nonNegative, positiveInteger } from '../../kernel/checkOption.ts';
import type { Clock } from '../../kernel/clock.ts';
import type { FleetError } from '../../kernel/errors.ts';
import type { StateStore } from '../../ports/store.ts';
import type { StateRow } from '../../../schemas/messages.ts';

export interface StateBatcherOptions {
  store: Pick<StateStore, 'append'>;
  clock: Clock;
  /** Rows that trigger a flush at once; a batch holds at most this many unless one append is larger. Default 1000. */
  maxRows?: number;
  /** Longest a row waits in the buffer before a flush, ms. Default 100. */
  maxDelayMs?: number;
  /**
   * With no insert in flight, fewer rows than this are inserted in the next turn instead of after
   * maxDelayMs (Batcher immediateBelow: group commit at low load, so a state is stored, and shown
   * live, without waiting for the delay). Default 0: never.
   */
  immediateRows?: number;
  /** Least time between the starts of two such inserts, ms (Batcher immediateSpacingMs). Default 0. */
  immediateSpacingMs?: number;
  /** Rows buffered plus in flight before appends wait. Default 10 × maxRows. */
  maxPendingRows?: number;
  /**
   * Batches written at once. Default 1. Two let the next batch be encoded while one is in the
   * store; store.append must then be safe to call concurrently (rows of one uplink have one key, so
   * the order two inserts land in does not change what a read folds them to; the SQL store's
   * rollups are refreshed apart from appends). The service uses 1; the benches measure 2.
   */
  concurrency?: number;
  /** First retry delay after a retriable store error, ms; doubles per attempt. Default 100. */
  retryInitialMs?: number;
  /** Ceiling of the retry delay, ms. Default 5000. */
  retryMaxMs?: number;
  /** Retries of one batch before its promises reject. Default 10 (about 30 s with the defaults). */
  maxRetries?: number;
}

export class StateBatcher {
  readonly #batcher: Batcher<readonly StateRow[]>;

  constructor(options: StateBatcherOptions) {
    const { store } = options;
    const maxRows = positiveInteger(options.maxRows ?? 1000, 'StateBatcher: maxRows');
    this.#batcher = new Batcher({
      name: 'state batcher',
      clock: options.clock,
      write: (appends) => store.append(appends.length === 1 ? appends[0] : concat(appends)),
      weight: (rows) => rows.length,
      maxItems: maxRows,
      maxDelayMs: nonNegative(options.maxDelayMs ?? 100, 'StateBatcher: maxDelayMs'),
      immediateBelow: nonNegative(options.immediateRows ?? 0, 'StateBatcher: immediateRows'),
      immediateSpacingMs: nonNegative(options.immediateSpacingMs ?? 0, 'StateBatcher: immediateSpacingMs'),
      maxPending: positiveInteger(options.maxPendingRows ?? 10 * maxRows, 'StateBatcher: maxPendingRows'),
      overflow: 'wait',
      concurrency: options.concurrency,
      retry: {
        backoff: exponentialBackoff({ initialMs: options.retryInitialMs ?? 100, maxMs: options.retryMaxMs ?? 5000 }),
        maxRetries: nonNegative(options.maxRetries ?? 10, 'StateBatcher: maxRetries'),
      },
    });
  }

  /** Rows buffered or being written. */
  get pendingRows(): number {
    return this.#batcher.pending;
  }

  /** Rows of appends waiting for room (not yet accepted). */
  get waitingRows(): number {
    return this.#batcher.waiting;
  }

  /**
   * Resolves when `rows` are durable in the store; rejects with a FleetError. The rows are not
   * checked again here: they come from admission (engine/uplink/admission), which checked every
   * value, or from an admitted record whose carried states the envelope reader validated at the log
   * boundary (envelope.ts), so no row a store would refuse reaches a shared batch.
   */
  append(rows: readonly StateRow[]): Promise<void> {
    if (this.#batcher.closed) return this.#batcher.add(rows);
    return rows.length === 0 ? Promise.resolve() : this.#batcher.add(rows);
  }

  /**
   * append() without a promise: `done` is called without an argument once `rows` are durable, or
   * with the FleetError; never synchronously. The pipeline's path (one call per uplink).
   */
  appendThen(rows: readonly StateRow[], done: (error?: FleetError) => void): void {
    if (rows.length === 0 && !this.#batcher.closed) queueMicrotask(() => done());
    else this.#batcher.addThen(rows, done);
  }

  /** Writes everything appended so far without waiting for maxRows/maxDelayMs; never rejects. */
  flush(): Promise<void> {
    return this.#batcher.flush();
  }

  /** Refuses new appends (CLOSED), writes what was accepted, then resolves. */
  close(): Promise<void> {
    return this.#batcher.close();
  }
}

/** A push loop: Array.prototype.flat is several times slower on thousands of small appends. */
function concat(appends: readonly (readonly StateRow[])[]): StateRow[] {
  const rows: StateRow[] = [];
  for (const append of appends) for (const row of append) rows.push(row);
  return rows;
}
