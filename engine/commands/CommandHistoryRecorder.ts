/**
 * Feeds the command history port from the command actors' onChange hook: transitions are copied
 * (the actors reuse one view object per command), gathered for up to `maxDelayMs` or `maxBatch`
 * rows and appended in one insert, one append at a time. ClickHouse wants few large inserts; a
 * command's lifecycle usually changes three times within a millisecond.
 *
 * The history is a record, not the delivery path: a store outage never holds commands back. A
 * retriable failure keeps the batch and retries with a Clock-driven backoff; past `maxPending`
 * transitions held, new ones are dropped and counted (onDropped), as are batches the store refuses
 * for good.
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import type { CommandHistory } from '../ports/commandHistory.ts';
import type { CommandView } from '../../schemas/commands.ts';

export interface CommandHistoryRecorderOptions {
  history: Pick<CommandHistory, 'append'>;
  clock: Clock;
  /** Longest a transition waits before its batch is appended, ms. Default 200. */
  maxDelayMs?: number;
  /** Transitions per append. Default 500. */
  maxBatch?: number;
  /** Transitions held (waiting or retried) before new ones are dropped. Default 10 000. */
  maxPending?: number;
  /** First retry delay after a retriable failure, ms; doubles up to retryMaxMs. Default 500. */
  retryBaseMs?: number;
  /** Default 30 000. */
  retryMaxMs?: number;
  /** Transitions given up: `count` of them, with the error (a refused batch) or without (overflow). */
  onDropped?(count: number, error?: FleetError): void;
}

export class CommandHistoryRecorder {
  readonly #o: Required<Omit<CommandHistoryRecorderOptions, 'onDropped'>> & Pick<CommandHistoryRecorderOptions, 'onDropped'>;
  #waiting: CommandView[] = [];
  #writing: Promise<void> | undefined;
  #timer: TimerHandle | undefined;
  #backoffMs: number;
  #closed = false;
  #dropped = 0;

  constructor(options: CommandHistoryRecorderOptions) {
    this.#o = { maxDelayMs: 200, maxBatch: 500, maxPending: 10_000, retryBaseMs: 500, retryMaxMs: 30_000, ...options };
    this.#backoffMs = this.#o.retryBaseMs;
  }

  /** Transitions given up so far. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Transitions not yet appended. */
  get pending(): number {
    return this.#waiting.length;
  }

  /** The actors' onChange hook. */
  record(view: Readonly<CommandView>): void {
    if (this.#closed) return;
    if (this.#waiting.length >= this.#o.maxPending) {
      this.#drop(1);
      return;
    }
    this.#waiting.push({ ...view });
    if (this.#writing !== undefined) return;
    if (this.#waiting.length >= this.#o.maxBatch) this.#start();
    else this.#timer ??= this.#o.clock.setTimeout(() => this.#start(), this.#o.maxDelayMs);
  }

  /** Appends everything waiting now (one try per batch); resolves once done. */
  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
    this.#timer?.cancel();
    this.#timer = undefined;
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.#o.maxBatch);
      try {
        await this.#o.history.append(batch);
      } catch (error) {
        this.#drop(batch.length, toFleetError(error, 'UNAVAILABLE'));
      }
    }
  }

  /** Flushes, then records nothing more. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }

  #start(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    if (this.#writing !== undefined || this.#waiting.length === 0) return;
    const batch = this.#waiting.slice(0, this.#o.maxBatch);
    this.#writing = this.#o.history.append(batch).then(() => {
      this.#waiting.splice(0, batch.length);
      this.#backoffMs = this.#o.retryBaseMs;
      this.#writing = undefined;
      if (this.#waiting.length >= this.#o.maxBatch) this.#start();
      else if (this.#waiting.length > 0) this.#timer = this.#o.clock.setTimeout(() => this.#start(), this.#o.maxDelayMs);
    }, (error: unknown) => {
      const failure = toFleetError(error, 'UNAVAILABLE');
      this.#writing = undefined;
      if (!failure.retriable) {
        this.#waiting.splice(0, batch.length);
        this.#drop(batch.length, failure);
        if (this.#waiting.length > 0) this.#timer = this.#o.clock.setTimeout(() => this.#start(), this.#o.maxDelayMs);
        return;
      }
      if (this.#closed) return;
      const delay = this.#backoffMs;
      this.#backoffMs = Math.min(this.#backoffMs * 2, this.#o.retryMaxMs);
      this.#timer = this.#o.clock.setTimeout(() => this.#start(), delay);
    });
  }

  #drop(count: number, error?: FleetError): void {
    this.#dropped += count;
    this.#o.onDropped?.(count, error);
  }
}
