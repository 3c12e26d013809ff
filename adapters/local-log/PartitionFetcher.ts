/**
 * Delivery loop of one assigned partition: read a batch, hand it to onBatch, wait for it to settle,
 * repeat. Idle partitions sleep until a flush makes new records durable (an in-process wake-up, no
 * polling). A batch whose handler rejected is delivered again after a backoff; a batch read while
 * the partition was being paused is held and delivered after resume.
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import { isFleetError } from '../../engine/kernel/errors.ts';
import type { LogRecord, RecordBatch } from '../../engine/ports/log.ts';
import type { PartitionLog } from './PartitionLog.ts';
import type { PartitionReader } from './PartitionReader.ts';

export interface PartitionFetcherConfig {
  log: PartitionLog;
  /** A reader of the partition from `offset` (the start, and each seek). */
  reader(offset: number): PartitionReader;
  start: number;
  maxBatchRecords: number;
  clock: Clock;
  redeliveryBackoffMs: number;
  deliver(batch: RecordBatch): Promise<void>;
  reportError(error: unknown, stage: 'onBatch' | 'read'): void;
}

export class PartitionFetcher {
  #config: PartitionFetcherConfig;
  #paused = false;
  #stopped = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #held: LogRecord[] | undefined;
  #reader: PartitionReader;

  constructor(config: PartitionFetcherConfig) {
    this.#config = config;
    this.#reader = config.reader(config.start);
  }

  /** The next batch starts at `offset`: what was read and not handed over yet is dropped, and a read under way is not handed over. */
  seek(offset: number): void {
    this.#reader = this.#config.reader(offset);
    this.#held = undefined;
    this.#signal();
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#signal();
  }

  /** Resolves once no batch of this partition is in flight and none will start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#signal();
    await this.#loop;
  }

  #signal(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #sleep(): Promise<void> {
    return new Promise((resolve) => { this.#wake = resolve; });
  }

  async #run(): Promise<void> {
    const { log, maxBatchRecords } = this.#config;
    while (!this.#stopped) {
      if (this.#paused) { await this.#sleep(); continue; }
      let records = this.#held;
      if (records === undefined) {
        const reader = this.#reader;
        if (!reader.hasMore) { await this.#waitForData(); continue; }
        try {
          records = await reader.read(maxBatchRecords);
        } catch (error) {
          this.#config.reportError(error, 'read');
          if (isFleetError(error) && error.code === 'CORRUPT_LOG') {
            // damaged data: stop this partition rather than skip records or spin on the error
            while (!this.#stopped) await this.#sleep();
            return;
          }
          await this.#backoff(); // an I/O error (descriptors exhausted, ...) may pass
          continue;
        }
        if (reader !== this.#reader) continue; // sought meanwhile: read from the new position
        if (records.length === 0) { await this.#waitForData(); continue; }
        this.#held = records;
        if (this.#stopped || this.#paused) continue;
      }
      try {
        await this.#config.deliver({ topic: log.topic, partition: log.partition, records });
        this.#held = undefined;
      } catch (error) {
        this.#config.reportError(error, 'onBatch');
        await this.#backoff();
      }
    }
  }

  async #waitForData(): Promise<void> {
    const unsubscribe = this.#config.log.onDurable(() => this.#signal());
    try {
      if (!this.#reader.hasMore && !this.#stopped && !this.#paused) await this.#sleep();
    } finally {
      unsubscribe();
    }
  }

  async #backoff(): Promise<void> {
    if (this.#stopped) return;
    const timer = this.#config.clock.setTimeout(() => this.#signal(), this.#config.redeliveryBackoffMs);
    try {
      await this.#sleep();
    } finally {
      timer.cancel();
    }
  }
}
