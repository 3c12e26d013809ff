/**
 * A consumer of the local log: a member of an in-process consumer group (GroupCoordinator) that runs
 * one PartitionFetcher per assigned partition, starting at the group's committed offset.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { CommitRequest, Consumer, ConsumerOptions, TopicPartition } from '../../engine/ports/log.ts';
import { partitionKey, type GroupCoordinator, type GroupMember } from './GroupCoordinator.ts';
import type { CorruptionReport, ResolvedLocalLogOptions } from './LocalLogOptions.ts';
import { PartitionFetcher } from './PartitionFetcher.ts';
import type { PartitionLog } from './PartitionLog.ts';
import { PartitionReader } from './PartitionReader.ts';

export const DEFAULT_MAX_BATCH_RECORDS = 1000;

/** What a consumer needs from the log that created it. */
export interface ConsumerHost {
  readonly options: ResolvedLocalLogOptions;
  readonly coordinator: GroupCoordinator;
  /** Throws CLOSED once close() began (no new consumers start). */
  assertOpen(): void;
  /** Throws CLOSED once close() stopped the consumers (commits from onRevoke still pass before that). */
  assertWritable(): void;
  hasTopic(topic: string): boolean;
  partitionLog(topic: string, partition: number): PartitionLog;
  committed(group: string, topic: string, partition: number): number | undefined;
  commit(group: string, offsets: CommitRequest[]): Promise<void>;
  reportCorruption(report: CorruptionReport): void;
  consumerStarted(consumer: LocalConsumer): void;
  consumerStopped(consumer: LocalConsumer): void;
}

interface Assigned {
  tp: TopicPartition;
  fetcher: PartitionFetcher;
}

function checkTopicPartition(tp: unknown, what: string): TopicPartition {
  const { topic, partition } = (tp ?? {}) as Record<string, unknown>;
  if (typeof topic !== 'string' || typeof partition !== 'number' || !Number.isSafeInteger(partition) || partition < 0) {
    throw new FleetError('VALIDATION_FAILED', `${what}: expected { topic: string, partition: integer >= 0 }`, { detail: { topic: String(topic), partition: String(partition) } });
  }
  return { topic, partition };
}

export class LocalConsumer implements Consumer, GroupMember {
  readonly group: string;
  readonly topics: readonly string[];
  #host: ConsumerHost;
  #options: ConsumerOptions;
  #maxBatchRecords: number;
  #assigned = new Map<string, Assigned>();
  #paused = new Set<string>();
  #running = false;
  #transition: Promise<void> = Promise.resolve();

  constructor(host: ConsumerHost, options: ConsumerOptions) {
    this.#host = host;
    this.#options = options;
    this.group = options.group;
    this.topics = [...new Set(options.topics)];
    this.#maxBatchRecords = options.maxBatchRecords ?? DEFAULT_MAX_BATCH_RECORDS;
  }

  start(): Promise<void> {
    return this.#serialize(async () => {
      this.#host.assertOpen();
      if (this.#running) return;
      const missing = this.topics.filter((t) => !this.#host.hasTopic(t));
      if (missing.length > 0) throw new FleetError('NOT_FOUND', `unknown topic ${missing.join(', ')}: ensureTopics first`, { detail: { topics: missing } });
      this.#running = true;
      this.#host.consumerStarted(this);
      await this.#host.coordinator.join(this.group, this);
    });
  }

  stop(): Promise<void> {
    return this.#serialize(async () => {
      if (!this.#running) return;
      this.#running = false;
      await this.#host.coordinator.leave(this.group, this);
      this.#host.consumerStopped(this);
    });
  }

  #serialize(step: () => Promise<void>): Promise<void> {
    const run = this.#transition.then(step);
    this.#transition = run.catch(() => undefined);
    return run;
  }

  async commit(offsets: CommitRequest[]): Promise<void> {
    this.#host.assertWritable();
    if (!Array.isArray(offsets)) throw new FleetError('VALIDATION_FAILED', 'commit expects an array of { topic, partition, offset }');
    const checked: CommitRequest[] = [];
    for (const request of offsets) {
      // As Kafka refuses commits from a member that no longer owns the partition: a late commit
      // would otherwise overwrite the progress of the partition's new owner.
      const { topic, partition, offset } = this.#assignedPosition(request, 'commit');
      const end = this.#host.partitionLog(topic, partition).durableOffset;
      if (offset > end) {
        throw new FleetError('VALIDATION_FAILED', `commit of ${topic}/${partition}: offset ${offset} is past the end of the partition (${end})`, { detail: { topic, partition, offset, end } });
      }
      checked.push({ topic, partition, offset });
    }
    if (checked.length > 0) await this.#host.commit(this.group, checked);
  }

  pause(partitions: TopicPartition[]): void {
    for (const tp of this.#checkList(partitions, 'pause')) {
      const key = partitionKey(tp.topic, tp.partition);
      this.#paused.add(key);
      this.#assigned.get(key)?.fetcher.pause();
    }
  }

  resume(partitions: TopicPartition[]): void {
    for (const tp of this.#checkList(partitions, 'resume')) {
      const key = partitionKey(tp.topic, tp.partition);
      this.#paused.delete(key);
      this.#assigned.get(key)?.fetcher.resume();
    }
  }

  seek(positions: CommitRequest[]): void {
    this.#checkList(positions, 'seek'); // a topic this consumer does not subscribe to: VALIDATION_FAILED
    const checked = positions.map((request) => this.#assignedPosition(request, 'seek'));
    for (const { topic, partition, offset } of checked) this.#assigned.get(partitionKey(topic, partition))!.fetcher.seek(offset);
  }

  /** A commit's or seek's position, checked: an offset >= 0, a partition this consumer holds (else CONFLICT). */
  #assignedPosition(request: unknown, what: string): CommitRequest {
    const { topic, partition } = checkTopicPartition(request, what);
    const offset = (request as { offset?: unknown }).offset;
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
      throw new FleetError('VALIDATION_FAILED', `${what} of ${topic}/${partition}: offset must be an integer >= 0`, { detail: { topic, partition, offset: String(offset) } });
    }
    if (!this.#assigned.has(partitionKey(topic, partition))) {
      throw new FleetError('CONFLICT', `${topic}/${partition} is not assigned to this consumer of group ${this.group}`, { detail: { topic, partition } });
    }
    return { topic, partition, offset };
  }

  #checkList(partitions: unknown, what: string): TopicPartition[] {
    if (!Array.isArray(partitions)) throw new FleetError('VALIDATION_FAILED', `${what} expects an array of { topic, partition }`);
    return partitions.map((tp) => {
      const checked = checkTopicPartition(tp, what);
      if (!this.topics.includes(checked.topic)) throw new FleetError('VALIDATION_FAILED', `${what}: this consumer does not subscribe to ${checked.topic}`, { detail: { topic: checked.topic } });
      return checked;
    });
  }

  assignedPartitions(): TopicPartition[] {
    return [...this.#assigned.values()].map((a) => a.tp);
  }

  /** GroupMember: stop delivery, let the owner commit in onRevoke, then let go. */
  async revoke(partitions: TopicPartition[]): Promise<void> {
    await Promise.all(partitions.map((tp) => this.#assigned.get(partitionKey(tp.topic, tp.partition))?.fetcher.stop()));
    try {
      await this.#options.onRevoke?.(partitions.map((tp) => ({ ...tp })));
    } catch (error) {
      this.#host.options.onConsumerError(error, { group: this.group, topic: partitions[0].topic, stage: 'onRevoke' });
    }
    for (const tp of partitions) this.#assigned.delete(partitionKey(tp.topic, tp.partition));
  }

  /** GroupMember: take the partitions over from the committed offsets, onAssign first. */
  async assign(partitions: TopicPartition[]): Promise<void> {
    const host = this.#host;
    const { options } = host;
    const started: PartitionFetcher[] = [];
    for (const tp of partitions) {
      const key = partitionKey(tp.topic, tp.partition);
      const log = host.partitionLog(tp.topic, tp.partition);
      const start = host.committed(this.group, tp.topic, tp.partition) ?? (this.#options.startAt === 'latest' ? log.durableOffset : 0);
      const fetcher = new PartitionFetcher({
        log,
        reader: (offset) => new PartitionReader(log, offset, options.readChunkBytes, (r) => host.reportCorruption(r)),
        start,
        maxBatchRecords: this.#maxBatchRecords,
        clock: options.clock,
        redeliveryBackoffMs: options.redeliveryBackoffMs,
        deliver: (batch) => this.#options.onBatch(batch),
        reportError: (error, stage) => options.onConsumerError(error, { group: this.group, topic: tp.topic, partition: tp.partition, stage }),
      });
      if (this.#paused.has(key)) fetcher.pause();
      this.#assigned.set(key, { tp, fetcher });
      started.push(fetcher);
    }
    try {
      await this.#options.onAssign?.(partitions.map((tp) => ({ ...tp })));
    } catch (error) {
      options.onConsumerError(error, { group: this.group, topic: partitions[0].topic, stage: 'onAssign' });
    }
    for (const fetcher of started) fetcher.start();
  }
}
