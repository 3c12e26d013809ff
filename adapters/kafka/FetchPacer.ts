/**
 * Spaces the fetches of a Kafka reader that prefers throughput (ConsumerOptions.prefer). kafkajs
 * fetches again once every batch of a fetch is handled; a fetch that waited for 64 KiB (minBytes)
 * made every record of a trickle wait up to the fetch wait. Instead each fetch returns on its first
 * record and, when it brought less than `fullBytes`, the next leaves `waitMs` after it: a record
 * after a quiet spell is delivered at once, records streaming in are read in fetches that far apart
 * (no more fetches than with the wait), and full fetches follow each other without a pause.
 */
import type { Batch } from 'kafkajs';
import type { Clock } from '../../engine/kernel/clock.ts';

export class FetchPacer {
  readonly #clock: Pick<Clock, 'now' | 'setTimeout'>;
  readonly #waitMs: number;
  readonly #fullBytes: number;
  /** When the next fetch may leave; the batches of one fetch share it. */
  #until = 0;
  /** Batches being handled. */
  #handling = 0;

  constructor(clock: Pick<Clock, 'now' | 'setTimeout'>, waitMs: number, fullBytes: number) {
    this.#clock = clock;
    this.#waitMs = waitMs;
    this.#fullBytes = fullBytes;
  }

  /**
   * Runs `deliver` (kafkajs's eachBatch for `batch`), then holds the fetch's wait while `running()`:
   * kafkajs fetches again once every batch of a fetch is handled.
   */
  async handle(batch: Pick<Batch, 'messages'>, deliver: () => Promise<void>, running: () => boolean): Promise<void> {
    const delay = this.delayAfter(batch, this.#handling > 0);
    this.#handling++;
    try {
      await deliver();
      if (delay > 0 && running()) await new Promise<void>((resolve) => this.#clock.setTimeout(resolve, delay));
    } finally {
      this.#handling--;
    }
  }

  /**
   * How long to hold back the next fetch once `batch` is handled, ms; asked when it is handed out.
   * `sameFetch`: other batches are being handled (kafkajs fetches again only once all of a fetch's
   * are), so this one came with them, after the wait when they were more than run at once.
   */
  delayAfter(batch: Pick<Batch, 'messages'>, sameFetch = false): number {
    let bytes = 0;
    for (const message of batch.messages) bytes += (message.value?.length ?? 0) + (message.key?.length ?? 0);
    if (bytes >= this.#fullBytes) return 0;
    const now = this.#clock.now();
    // The first batch of a fetch starts the wait; the fetch's other batches end with it.
    if (now >= this.#until) {
      if (sameFetch) return 0;
      this.#until = now + this.#waitMs;
    }
    return this.#until - now;
  }
}
