/**
 * The embedded log adapter: partitioned topics in a data dir, durable appends with group commit,
 * in-process consumer groups with durably committed offsets, and retention of consumed segments.
 *
 * Layout of the data dir:
 *   LOCK                              owning pid and host (one process per dir, see DirLock)
 *   topics.json                       topic names and partition counts
 *   topics/<topic>/<partition>/<20-digit base offset>.seg    segment files (recordFrame.ts)
 *   groups/<group>-<hash>.json        committed offsets of one consumer group
 *
 * One process per data dir: groups, offsets being assigned and retention live in that process's
 * memory, so consumers in other processes cannot share it. A second open fails with CONFLICT.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { FleetError, toFleetError } from '../../engine/kernel/errors.ts';
import { partitionFor } from '../../engine/kernel/partition.ts';
import type { CommitRequest, Consumer, ConsumerOptions, Log, ProducerRecord, RecordPosition, TopicSpec } from '../../engine/ports/log.ts';
import { syncDirSync } from '../syncDir.ts';
import { DirLock } from './DirLock.ts';
import { FlushRounds } from './FlushRounds.ts';
import { GroupCoordinator } from './GroupCoordinator.ts';
import { LocalConsumer, type ConsumerHost } from './LocalConsumer.ts';
import { resolveLocalLogOptions, type CorruptionReport, type LocalLogOptions, type ResolvedLocalLogOptions } from './LocalLogOptions.ts';
import { createLocalLogStats, type LocalLogStats } from './LocalLogStats.ts';
import { OffsetStore } from './OffsetStore.ts';
import { PartitionLog } from './PartitionLog.ts';
import { recoverPartition } from './recoverPartition.ts';
import { RoundJournal } from './RoundJournal.ts';
import { TopicCatalog, validateTopicName, validateTopicSpec } from './TopicCatalog.ts';

const PARTITION_CACHE_KEYS = 100_000;

/** Opens (or creates) the log in `options.dir`. Synchronous: recovery of torn tails happens here. */
export function createLocalLog(options: LocalLogOptions): LocalLog {
  return LocalLog.open(options);
}

export class LocalLog implements Log {
  readonly options: ResolvedLocalLogOptions;
  readonly coordinator: GroupCoordinator;
  #stats: LocalLogStats;
  #lock: DirLock;
  #catalog: TopicCatalog;
  #offsets: OffsetStore;
  #partitions = new Map<string, PartitionLog[]>();
  #rounds: FlushRounds;
  #journal: RoundJournal | undefined;
  /**
   * key → partition per partition count: device ids repeat, and a Map hit is much cheaper than
   * UTF-8 encoding plus murmur2. Bounded: cleared when full.
   */
  #partitionCache = new Map<number, Map<string, number>>();
  #consumers = new Set<LocalConsumer>();
  #background = new Set<Promise<void>>();
  /** Per topic, how long its records are kept whether read or not (TopicSpec.retentionMs), as this process's ensureTopics said. */
  readonly #retentionMs = new Map<string, number>();
  #topicChanges: Promise<unknown> = Promise.resolve();
  #closing: Promise<void> | undefined;
  /** Set once the consumers have stopped during close: from then on appends and commits are refused too. */
  #closed = false;
  #host: ConsumerHost;

  private constructor(options: ResolvedLocalLogOptions, lock: DirLock, stats: LocalLogStats) {
    this.options = options;
    this.#lock = lock;
    this.#stats = stats;
    // Before any partition is recovered: the journal writes back what it made durable.
    this.#journal = options.journalBytes > 0 ? RoundJournal.open(options.dir, options.journalBytes, stats, options.inlineWriteMaxMicros) : undefined;
    this.#rounds = new FlushRounds(options.clock, options.groupCommitMs, this.#journal);
    this.#catalog = TopicCatalog.load(options.dir);
    this.#offsets = OffsetStore.load(join(options.dir, 'groups'), stats);
    this.coordinator = new GroupCoordinator((topic) => this.#catalog.partitions(topic) ?? 0);
    for (const name of this.#catalog.names()) this.#openTopic(name, this.#catalog.partitions(name)!, true);
    this.#host = this.#consumerHost();
  }

  static open(options: LocalLogOptions): LocalLog {
    const resolved = resolveLocalLogOptions(options);
    mkdirSync(resolved.dir, { recursive: true });
    const lock = DirLock.acquire(resolved.dir);
    try {
      const log = new LocalLog(resolved, lock, createLocalLogStats());
      for (const [topic, partitions] of log.#partitions) partitions.forEach((_, p) => log.#retain(topic, p));
      return log;
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  #openTopic(topic: string, count: number, recovering: boolean): void {
    const logs: PartitionLog[] = [];
    for (let partition = 0; partition < count; partition++) {
      const dir = join(this.options.dir, 'topics', topic, String(partition));
      const { segments, nextOffset } = recoverPartition(dir, topic, partition, (r) => this.#reportCorruption(r), this.#journal === undefined);
      // a cut tail took records back: commits past the new end would skip the records appended next
      if (recovering) this.#offsets.clampSync(topic, partition, nextOffset);
      logs.push(new PartitionLog({
        dir, topic, partition, segments, nextOffset,
        segmentBytes: this.options.segmentBytes,
        rounds: this.#rounds,
        journaled: this.#journal !== undefined,
        stats: this.#stats,
        onRoll: () => this.#retain(topic, partition),
      }));
    }
    if (!recovering) {
      // new directories must survive a crash too: their entries live in the parents
      syncDirSync(join(this.options.dir, 'topics', topic));
      syncDirSync(join(this.options.dir, 'topics'));
      syncDirSync(this.options.dir);
    }
    this.#partitions.set(topic, logs);
  }

  #reportCorruption(report: CorruptionReport): void {
    this.#stats.corruptions++;
    this.options.onCorruption(report);
  }

  #assertOpen(): void {
    if (this.#closing) throw new FleetError('CLOSED', 'the log is closed');
  }

  /** Appends and commits stay possible while close() stops the consumers: their onRevoke may need them. */
  #assertWritable(): void {
    if (this.#closed) throw new FleetError('CLOSED', 'the log is closed');
  }

  #topic(topic: unknown): PartitionLog[] {
    validateTopicName(topic);
    const logs = this.#partitions.get(topic);
    if (!logs) throw new FleetError('NOT_FOUND', `unknown topic ${topic}: ensureTopics first`, { detail: { topic } });
    return logs;
  }

  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    this.#assertOpen();
    if (!Array.isArray(topics)) throw new FleetError('VALIDATION_FAILED', 'ensureTopics expects an array of { name, partitions }');
    topics.forEach(validateTopicSpec);
    const change = this.#topicChanges.then(async () => {
      this.#assertOpen();
      const added = await this.#catalog.add(topics);
      for (const spec of added) this.#openTopic(spec.name, spec.partitions, false);
      for (const spec of topics) {
        if (spec.retentionMs === undefined) continue;
        this.#retentionMs.set(spec.name, spec.retentionMs);
        this.#partitions.get(spec.name)?.forEach((_, p) => this.#retain(spec.name, p));
      }
    });
    this.#topicChanges = change.catch(() => undefined);
    await change;
  }

  async partitionCount(topic: string): Promise<number> {
    this.#assertOpen();
    return this.#topic(topic).length;
  }

  async append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
    this.#assertWritable();
    const logs = this.#topic(topic);
    if (!Array.isArray(records)) throw new FleetError('VALIDATION_FAILED', 'append expects an array of records');
    const count = logs.length;
    const keyBytes = new Array<number>(records.length);
    const byPartition: number[][] = new Array(count);
    const max = this.options.maxRecordBytes;
    let cache = this.#partitionCache.get(count);
    if (!cache) this.#partitionCache.set(count, cache = new Map());
    for (let i = 0; i < records.length; i++) {
      const record = records[i];
      const bad = (why: string): FleetError => new FleetError('VALIDATION_FAILED', `record ${i}: ${why}`, { detail: { index: i } });
      if (record === null || typeof record !== 'object') throw bad('must be an object { key, value, timestamp? }');
      if (typeof record.key !== 'string') throw bad('key must be a string');
      if (!(record.value instanceof Uint8Array)) throw bad('value must be a Uint8Array');
      const ts = record.timestamp;
      if (ts !== undefined && (typeof ts !== 'number' || !Number.isSafeInteger(ts) || ts < 0)) throw bad('timestamp must be epoch milliseconds (integer >= 0)');
      const bytes = Buffer.byteLength(record.key, 'utf8');
      if (bytes + record.value.length > max) {
        throw new FleetError('PAYLOAD_TOO_LARGE', `record ${i}: key + value is ${bytes + record.value.length} bytes, more than the ${max} allowed`, { detail: { index: i, limit: max } });
      }
      keyBytes[i] = bytes;
      let p = cache.get(record.key);
      if (p === undefined) {
        if (cache.size >= PARTITION_CACHE_KEYS) cache.clear();
        cache.set(record.key, p = partitionFor(record.key, count));
      }
      (byPartition[p] ??= []).push(i);
    }
    if (records.length === 0) return [];
    const out = new Array<RecordPosition>(records.length);
    const timestamp = this.options.clock.now();
    const writes: Promise<void>[] = [];
    for (let p = 0; p < count; p++) {
      const indices = byPartition[p];
      if (indices) writes.push(logs[p].enqueue(records, indices, keyBytes, timestamp, out));
    }
    this.#stats.appendCalls++;
    this.#stats.appendedRecords += records.length;
    await (writes.length === 1 ? writes[0] : Promise.all(writes));
    return out;
  }

  consumer(options: ConsumerOptions): Consumer {
    this.#assertOpen();
    if (options === null || typeof options !== 'object') throw new FleetError('VALIDATION_FAILED', 'consumer options must be an object');
    const { group, topics, onBatch, maxBatchRecords } = options;
    if (typeof group !== 'string' || group.length === 0) throw new FleetError('VALIDATION_FAILED', 'consumer group must be a non-empty string');
    if (!Array.isArray(topics) || topics.length === 0) throw new FleetError('VALIDATION_FAILED', 'consumer topics must be a non-empty array');
    topics.forEach(validateTopicName);
    if (typeof onBatch !== 'function') throw new FleetError('VALIDATION_FAILED', 'consumer onBatch must be a function');
    if (maxBatchRecords !== undefined && (!Number.isSafeInteger(maxBatchRecords) || maxBatchRecords < 1)) {
      throw new FleetError('VALIDATION_FAILED', 'consumer maxBatchRecords must be an integer >= 1', { detail: { maxBatchRecords } });
    }
    return new LocalConsumer(this.#host, options);
  }

  async committed(group: string, topic: string, partition: number): Promise<number> {
    this.#assertOpen();
    if (typeof group !== 'string' || group.length === 0) throw new FleetError('VALIDATION_FAILED', 'group must be a non-empty string', { detail: { field: 'group' } });
    validateTopicName(topic);
    if (!Number.isSafeInteger(partition) || partition < 0) throw new FleetError('VALIDATION_FAILED', 'partition must be an integer >= 0', { detail: { partition } });
    return this.#offsets.committed(group, topic, partition) ?? 0;
  }

  async endOffsets(topic: string): Promise<number[]> {
    this.#assertOpen();
    // Readers see only what is fsynced (PartitionLog.durableOffset), so that is the end a lag counts to.
    return this.#topic(topic).map((log) => log.durableOffset);
  }

  async startOffsets(topic: string): Promise<number[]> {
    this.#assertOpen();
    return this.#topic(topic).map((log) => log.segments[0]?.baseOffset ?? log.durableOffset);
  }

  async deleteGroup(group: string): Promise<void> {
    this.#assertWritable();
    if (typeof group !== 'string' || group.length === 0) throw new FleetError('VALIDATION_FAILED', 'group must be a non-empty string', { detail: { field: 'group' } });
    if (this.coordinator.members(group).length > 0) throw new FleetError('CONFLICT', `group ${group} still has members`, { detail: { group } });
    const topics = [...this.#partitions.keys()].filter((topic) => this.#offsets.groupsOn(topic).includes(group));
    await this.#offsets.remove(group);
    // The segments its commits held back may go now.
    for (const topic of topics) this.#partitions.get(topic)!.forEach((_, p) => this.#retain(topic, p));
  }

  /** Counters since open (a copy). */
  stats(): LocalLogStats {
    return { ...this.#stats };
  }

  /**
   * Stops every consumer (their onRevoke may still append and commit), then refuses appends and
   * commits, writes what is queued, and releases the files and the dir lock. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    await Promise.all([...this.#consumers].map((c) => c.stop().catch(() => undefined)));
    this.#closed = true;
    await this.#topicChanges;
    const partitions = [...this.#partitions.values()].flat();
    await Promise.all(partitions.map((p) => p.drain()));
    // Segments synced, so a clean shutdown leaves nothing for the journal to replay.
    await this.#journal?.close().catch(() => undefined);
    await this.#offsets.flush();
    while (this.#background.size > 0) await Promise.all(this.#background);
    await Promise.all(partitions.map((p) => p.close()));
    this.#lock.release();
  }

  /**
   * Deletes the segments of a partition that every group committed on its topic has consumed.
   * Groups that never committed on the topic hold nothing back (a consumer of such a group that
   * falls behind the oldest segment continues from the oldest record still on disk).
   */
  #retain(topic: string, partition: number): void {
    const log = this.#partitions.get(topic)?.[partition];
    if (!log) return;
    const groups = this.#offsets.groupsOn(topic);
    const retentionMs = this.#retentionMs.get(topic);
    const tasks: Promise<unknown>[] = [];
    // Wall time, not the clock: a segment's age is its file's modification time.
    if (retentionMs !== undefined && log.segments.length > 1) tasks.push(log.deleteOlderThan(Date.now() - retentionMs));
    let floor = Number.POSITIVE_INFINITY;
    for (const group of groups) floor = Math.min(floor, this.#offsets.committed(group, topic, partition) ?? 0);
    const byGroups = !(groups.length === 0 && this.options.retainUncommittedSegments);
    if (byGroups && floor > 0 && log.segments.length >= 2 && log.segments[1].baseOffset <= floor) tasks.push(log.deleteBelow(floor));
    if (tasks.length === 0) return;
    const task = Promise.all(tasks).then(() => undefined, (error) => {
      this.options.onConsumerError(toFleetError(error, 'UNAVAILABLE'), { group: groups.join(','), topic, partition, stage: 'retention' });
    });
    this.#background.add(task);
    void task.finally(() => this.#background.delete(task));
  }

  #consumerHost(): ConsumerHost {
    return {
      options: this.options,
      coordinator: this.coordinator,
      assertOpen: () => this.#assertOpen(),
      assertWritable: () => this.#assertWritable(),
      hasTopic: (topic) => this.#partitions.has(topic),
      partitionLog: (topic, partition) => {
        const log = this.#topic(topic)[partition];
        if (!log) throw new FleetError('NOT_FOUND', `topic ${topic} has no partition ${partition}`, { detail: { topic, partition } });
        return log;
      },
      committed: (group, topic, partition) => this.#offsets.committed(group, topic, partition),
      commit: async (group: string, offsets: CommitRequest[]) => {
        try {
          await this.#offsets.commit(group, offsets);
        } catch (error) {
          throw new FleetError('UNAVAILABLE', `writing the offsets of group ${group} failed`, { cause: error });
        }
        for (const { topic, partition } of offsets) this.#retain(topic, partition);
      },
      reportCorruption: (report) => this.#reportCorruption(report),
      consumerStarted: (consumer) => { this.#consumers.add(consumer); },
      consumerStopped: (consumer) => { this.#consumers.delete(consumer); },
    };
  }
}
