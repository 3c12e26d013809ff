/**
 * Groups state appends from many callers (device actors) into few store inserts: ClickHouse wants
 * thousands of rows per insert, actors produce a handful per uplink. Each caller's promise resolves
 * when its own rows are durable, which is what lets the pipeline commit log offsets (DESIGN.md §4).
 *
 * - A batch is flushed when `maxRows` rows are buffered, or `maxDelayMs` after the oldest buffered
 *   row arrived, whichever comes first; one batch is in flight at a time, in arrival order.
 * - Bounded: at most `maxPendingRows` rows are buffered or in flight. An append that does not fit
 *   waits, unaccepted, until earlier batches land; its promise simply resolves later, so a caller
 *   that awaits append() is slowed to the store's pace (the overflow policy is "wait", not "drop").
 *   `waitingRows` shows how much is held back, for sources that pause on it.
 * - A store error with `retriable` set is retried with exponential backoff on the injected Clock,
 *   up to `maxRetries` times; any other error, or the last retriable one, rejects the promises of
 *   that batch only. Rows are checked on append, so one bad row fails its own call, not a batch.
 */
import { checkStateRows } from './checkStateRows.ts';
import type { Clock, TimerHandle } from '../../kernel/clock.ts';
import { FleetError, toFleetError } from '../../kernel/errors.ts';
import type { StateStore } from '../../ports/store.ts';
import type { StateRow } from '../../../schemas/messages.ts';

export interface StateBatcherOptions {
  store: Pick<StateStore, 'append'>;
  clock: Clock;
  /** Rows that trigger a flush at once; a batch holds at most this many unless one append is larger. Default 1000. */
  maxRows?: number;
  /** Longest a row waits in the buffer before a flush, ms. Default 100. */
  maxDelayMs?: number;
  /** Rows buffered plus in flight before appends wait. Default 10 × maxRows. */
  maxPendingRows?: number;
  /** First retry delay after a retriable store error, ms; doubles per attempt. Default 100. */
  retryInitialMs?: number;
  /** Ceiling of the retry delay, ms. Default 5000. */
  retryMaxMs?: number;
  /** Retries of one batch before its promises reject. Default 10 (about 30 s with the defaults). */
  maxRetries?: number;
}

interface Entry {
  rows: readonly StateRow[];
  resolve(): void;
  reject(error: FleetError): void;
  done: Promise<void>;
  acceptedAt: number;
}

export class StateBatcher {
  readonly #store: Pick<StateStore, 'append'>;
  readonly #clock: Clock;
  readonly #maxRows: number;
  readonly #maxDelayMs: number;
  readonly #maxPendingRows: number;
  readonly #retryInitialMs: number;
  readonly #retryMaxMs: number;
  readonly #maxRetries: number;

  #buffer: Entry[] = [];
  #bufferedRows = 0;
  #waiting: Entry[] = [];
  #waitingRows = 0;
  #inFlightRows = 0;
  #flushing = false;
  /** Settles when the batch in flight has landed or failed for good. */
  #inFlight: Promise<void> = Promise.resolve();
  #timer: TimerHandle | undefined;
  #draining = 0;
  #closed = false;

  constructor(options: StateBatcherOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#maxRows = positive(options.maxRows ?? 1000, 'maxRows');
    this.#maxDelayMs = nonNegative(options.maxDelayMs ?? 100, 'maxDelayMs');
    this.#maxPendingRows = positive(options.maxPendingRows ?? 10 * this.#maxRows, 'maxPendingRows');
    this.#retryInitialMs = nonNegative(options.retryInitialMs ?? 100, 'retryInitialMs');
    this.#retryMaxMs = nonNegative(options.retryMaxMs ?? 5000, 'retryMaxMs');
    this.#maxRetries = nonNegative(options.maxRetries ?? 10, 'maxRetries');
  }

  /** Rows buffered or being written. */
  get pendingRows(): number {
    return this.#bufferedRows + this.#inFlightRows;
  }

  /** Rows of appends waiting for room (not yet accepted). */
  get waitingRows(): number {
    return this.#waitingRows;
  }

  /** Resolves when `rows` are durable in the store; rejects with a FleetError. */
  append(rows: readonly StateRow[]): Promise<void> {
    if (this.#closed) return Promise.reject(new FleetError('CLOSED', 'state batcher is closed'));
    try {
      checkStateRows(rows);
    } catch (error) {
      return Promise.reject(error);
    }
    if (rows.length === 0) return Promise.resolve();
    let resolve!: () => void;
    let reject!: (error: FleetError) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const entry: Entry = { rows, resolve, reject, done, acceptedAt: 0 };
    if (this.#waiting.length === 0 && this.#fits(rows.length)) this.#accept(entry);
    else {
      this.#waiting.push(entry);
      this.#waitingRows += rows.length;
    }
    this.#schedule();
    return done;
  }

  /** Writes everything appended so far without waiting for maxRows/maxDelayMs; never rejects. */
  async flush(): Promise<void> {
    const outstanding = [...this.#buffer, ...this.#waiting].map((e) => e.done);
    if (this.#flushing) outstanding.push(this.#inFlight);
    this.#draining++;
    this.#schedule();
    try {
      await Promise.allSettled(outstanding);
    } finally {
      this.#draining--;
    }
  }

  /** Refuses new appends (CLOSED), writes what was accepted, then resolves. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #fits(rows: number): boolean {
    const pending = this.pendingRows;
    return pending === 0 || pending + rows <= this.#maxPendingRows;
  }

  #accept(entry: Entry): void {
    entry.acceptedAt = this.#clock.now();
    this.#buffer.push(entry);
    this.#bufferedRows += entry.rows.length;
  }

  #admitWaiting(): void {
    // One splice for the admitted prefix: shift() per entry is O(queue) each, quadratic overall
    // when thousands of small appends wait.
    const waiting = this.#waiting;
    let n = 0;
    while (n < waiting.length && this.#fits(waiting[n].rows.length)) {
      const entry = waiting[n++];
      this.#waitingRows -= entry.rows.length;
      this.#accept(entry);
    }
    if (n > 0) waiting.splice(0, n);
  }

  /** Starts a flush when one is due, else keeps one timer for the oldest buffered row. */
  #schedule(): void {
    if (this.#buffer.length === 0) {
      this.#timer?.cancel();
      this.#timer = undefined;
      return;
    }
    if (this.#flushing) return; // the batch in flight calls back when it lands
    const age = this.#clock.now() - this.#buffer[0].acceptedAt;
    if (this.#bufferedRows >= this.#maxRows || age >= this.#maxDelayMs || this.#draining > 0) {
      this.#timer?.cancel();
      this.#timer = undefined;
      this.#flushBatch();
    } else {
      this.#timer ??= this.#clock.setTimeout(() => {
        this.#timer = undefined;
        this.#schedule();
      }, this.#maxDelayMs - age);
    }
  }

  #flushBatch(): void {
    const buffer = this.#buffer;
    let n = 0;
    let count = 0;
    while (n < buffer.length && (n === 0 || count + buffer[n].rows.length <= this.#maxRows)) count += buffer[n++].rows.length;
    // One splice, not shift() per entry (quadratic with thousands of small appends per batch).
    const batch = buffer.splice(0, n);
    let rows: readonly StateRow[] = batch[0].rows;
    if (batch.length > 1) {
      const all: StateRow[] = [];
      for (const entry of batch) for (const row of entry.rows) all.push(row);
      rows = all;
    }
    this.#bufferedRows -= count;
    this.#inFlightRows += count;
    this.#flushing = true;
    this.#inFlight = new Promise<void>((landed) => {
      const finish = (error?: FleetError) => {
        this.#inFlightRows -= count;
        this.#flushing = false;
        for (const entry of batch) {
          if (error) entry.reject(error);
          else entry.resolve();
        }
        landed();
        this.#admitWaiting();
        this.#schedule();
      };
      const attempt = (retry: number) => {
        let written: Promise<void>;
        try {
          written = this.#store.append(rows);
        } catch (error) {
          written = Promise.reject(error);
        }
        written.then(
          () => finish(),
          (cause: unknown) => {
            const error = toFleetError(cause);
            if (!error.retriable || retry >= this.#maxRetries) return finish(error);
            const delay = Math.min(this.#retryMaxMs, this.#retryInitialMs * 2 ** retry);
            this.#clock.setTimeout(() => attempt(retry + 1), delay);
          },
        );
      };
      attempt(0);
    });
  }
}

function positive(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`StateBatcher: ${name} must be a positive integer`);
  return value;
}

function nonNegative(value: number, name: string): number {
  if (!(value >= 0)) throw new TypeError(`StateBatcher: ${name} must be >= 0`);
  return value;
}
