/**
 * One consumer of one topic whose records finish out of order (DESIGN.md §2): the group consumer,
 * a completion watermark per partition (OffsetTracker), a commit tick, and a revoke that waits for
 * what its owner still holds before committing. Offsets are committed only once every earlier
 * record of the partition finished, so a crash or a rebalance replays from there (at least once).
 * The uplink and command pipelines read their topics through it, and so does each edge's live
 * reader, whose records finish as they are read (it starts at the end of the topic).
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError } from '../kernel/errors.ts';
import type { CommitRequest, Consumer, ConsumerOptions, Log, RecordBatch, TopicPartition } from '../ports/log.ts';
import { OffsetTracker } from './OffsetTracker.ts';

export interface TopicConsumerOptions {
  log: Pick<Log, 'consumer'>;
  clock: Clock;
  group: string;
  topic: string;
  /** How often advanced offsets are committed (ms). */
  commitIntervalMs: number;
  maxBatchRecords?: number;
  /** Where a partition the group never committed on starts (ConsumerOptions.startAt): a live feed starts at the end. */
  startAt?: ConsumerOptions['startAt'];
  /** ConsumerOptions.prefer: readers of busy topics take `throughput`. */
  prefer?: ConsumerOptions['prefer'];
  /**
   * A batch of the topic. Each record is started on `tracker` (TopicConsumer.tracker) and finished
   * (TopicConsumer.finish) once its effects are durable; returning does not commit anything.
   */
  onBatch(batch: RecordBatch, tracker: OffsetTracker): Promise<void>;
  /** Before a revoke's commit: resolves once what was handed out is finished (default: nothing waited for). */
  drain?(): Promise<void>;
  /** A commit tick that failed with what a later tick cannot cure. */
  onCommitError?(error: unknown): void;
  /** Partitions of the topic this consumer was given. */
  onAssign?(partitions: number[]): void;
  /** Partitions taken away (after the revoke's commit): what their owner held for them is replayed by the next one. */
  onRevoked?(partitions: number[]): void;
}

export class TopicConsumer {
  readonly #o: TopicConsumerOptions;
  readonly #trackers = new Map<number, OffsetTracker>();
  /** Partitions of the topic this consumer holds (from onAssign until onRevoke). */
  readonly assigned = new Set<number>();
  #consumer: Consumer | undefined;
  #timer: TimerHandle | undefined;
  #stopping = false;
  #halted = false;
  /** Partition commits done since start. */
  committed = 0;

  constructor(options: TopicConsumerOptions) {
    this.#o = options;
  }

  get topic(): string {
    return this.#o.topic;
  }

  /** The tracker of a partition, undefined before its first batch or after it was revoked. */
  tracker(partition: number): OffsetTracker | undefined {
    return this.#trackers.get(partition);
  }

  /** A record's effects are durable (a revoked partition's records are forgotten). */
  finish(partition: number, offset: number): void {
    this.#trackers.get(partition)?.finish(offset);
  }

  /** Stops fetching a partition until resumed: its owner holds more of it than it wants to. */
  pause(partition: number): void {
    this.#consumer?.pause([{ topic: this.#o.topic, partition }]);
  }

  resume(partition: number): void {
    this.#consumer?.resume([{ topic: this.#o.topic, partition }]);
  }

  /** Each partition's next batch starts at its offset (Consumer.seek: pause them first); all or none. */
  seek(positions: readonly { partition: number; offset: number }[]): void {
    this.#consumer?.seek(positions.map(({ partition, offset }) => ({ topic: this.#o.topic, partition, offset })));
  }

  /** Nothing is committed any more: the owner failed, and what is not committed is replayed. */
  halt(): void {
    this.#halted = true;
  }

  async start(): Promise<void> {
    const topic = this.#o.topic;
    this.#consumer = this.#o.log.consumer({
      group: this.#o.group,
      topics: [topic],
      maxBatchRecords: this.#o.maxBatchRecords,
      startAt: this.#o.startAt,
      prefer: this.#o.prefer,
      onBatch: (batch) => this.#o.onBatch(batch, this.#trackerFor(batch)),
      onRevoke: (partitions) => this.#onRevoke(partitions),
      onAssign: (partitions) => {
        const mine = partitions.filter((p) => p.topic === topic).map((p) => p.partition);
        for (const p of mine) this.assigned.add(p);
        if (mine.length > 0) this.#o.onAssign?.(mine);
      },
    });
    await this.#consumer.start();
    this.#schedule();
  }

  /** Stops the tick and the consumer (which revokes its partitions: drained and committed). */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#timer?.cancel();
    await this.#consumer?.stop();
  }

  /**
   * Commits every partition whose watermark moved. A commit the log may take later (a broker
   * restarting, the group coordinator moving: retriable errors) is handed out again on the next
   * tick; a partition the consumer no longer holds (CONFLICT, a rebalance between two ticks) is
   * dropped. Both only delay commits, never lose effects: what is not committed is replayed.
   */
  async commit(): Promise<void> {
    if (this.#halted || this.#consumer === undefined) return;
    const offsets: CommitRequest[] = [];
    const taken: OffsetTracker[] = [];
    for (const [partition, tracker] of this.#trackers) {
      const offset = tracker.takeCommit();
      if (offset === undefined) continue;
      offsets.push({ topic: this.#o.topic, partition, offset });
      taken.push(tracker);
    }
    if (offsets.length === 0) return;
    try {
      await this.#consumer.commit(offsets);
    } catch (error) {
      const failure = toFleetError(error);
      if (!failure.retriable && failure.code !== 'CONFLICT') throw failure;
      for (const tracker of taken) tracker.commitFailed();
      const lost = failure.code === 'CONFLICT' ? (failure.detail as Partial<TopicPartition> | undefined) : undefined;
      if (lost?.topic === this.#o.topic && lost.partition !== undefined) this.#trackers.delete(lost.partition);
      if (this.#stopping) throw failure;
      return;
    }
    this.committed += offsets.length;
  }

  #trackerFor(batch: RecordBatch): OffsetTracker {
    let tracker = this.#trackers.get(batch.partition);
    if (tracker === undefined) this.#trackers.set(batch.partition, (tracker = new OffsetTracker(batch.records[0].offset)));
    return tracker;
  }

  async #onRevoke(partitions: TopicPartition[]): Promise<void> {
    try {
      await this.#o.drain?.();
      await this.commit();
    } finally {
      // Even when the commit failed, the partitions are gone: their next owner replays from the
      // last commit, and effects are idempotent or at least once.
      const revoked: number[] = [];
      for (const { topic, partition } of partitions) {
        if (topic !== this.#o.topic) continue;
        this.#trackers.delete(partition);
        this.assigned.delete(partition);
        revoked.push(partition);
      }
      if (revoked.length > 0) this.#o.onRevoked?.(revoked);
    }
  }

  #schedule(): void {
    if (this.#stopping) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.commit().catch((error: unknown) => this.#o.onCommitError?.(error)).finally(() => this.#schedule());
    }, this.#o.commitIntervalMs);
  }
}
