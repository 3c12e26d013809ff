/**
 * Feeds the command history port from the command actors' onChange hook: transitions are copied
 * (the actors reuse one view object per command), gathered for up to `maxDelayMs` or `maxBatch`
 * rows and appended in one insert, one append at a time (engine/kernel/Batcher.ts). ClickHouse
 * wants few large inserts; a command's lifecycle usually changes three times within a millisecond.
 *
 * The history is a record, not the delivery path: a store outage never holds commands back. A
 * retriable failure keeps the batch and retries with a Clock-driven backoff; past `maxPending`
 * transitions held, new ones are dropped and counted (onDropped), as are batches the store refuses
 * for good. flush() and close() give each batch one last try, so shutdown never waits out an outage.
 */
import { exponentialBackoff } from '../kernel/backoff.ts';
import { Batcher } from '../kernel/Batcher.ts';
import type { Clock } from '../kernel/clock.ts';
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
  readonly #batcher: Batcher<CommandView>;
  readonly #onDropped: CommandHistoryRecorderOptions['onDropped'];
  #closed = false;
  #dropped = 0;

  constructor(options: CommandHistoryRecorderOptions) {
    const { history } = options;
    this.#onDropped = options.onDropped;
    this.#batcher = new Batcher({
      name: 'command history recorder',
      clock: options.clock,
      write: (views) => history.append(views).catch((error: unknown) => { throw toFleetError(error, 'UNAVAILABLE'); }),
      maxItems: options.maxBatch ?? 500,
      maxDelayMs: options.maxDelayMs ?? 200,
      maxPending: options.maxPending ?? 10_000,
      overflow: 'refuse',
      retry: { backoff: exponentialBackoff({ initialMs: options.retryBaseMs ?? 500, maxMs: options.retryMaxMs ?? 30_000 }), maxRetries: Infinity },
      onFailed: (views, error) => this.#drop(views.length, error),
    });
  }

  /** Transitions given up so far. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Transitions not yet appended. */
  get pending(): number {
    return this.#batcher.pending;
  }

  /** The actors' onChange hook. */
  record(view: Readonly<CommandView>): void {
    if (!this.#closed && !this.#batcher.offer({ ...view })) this.#drop(1);
  }

  /** Appends everything waiting now (one try per batch); resolves once done. */
  flush(): Promise<void> {
    return this.#batcher.flush({ retries: false });
  }

  /** Flushes, then records nothing more. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#batcher.close({ retries: false });
  }

  #drop(count: number, error?: FleetError): void {
    this.#dropped += count;
    this.#onDropped?.(count, error);
  }
}
