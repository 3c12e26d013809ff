/**
 * Log port: partitioned topics, keyed records, consumer groups with committed offsets.
 * Implemented by adapters/local-log (embedded default) and adapters/kafka.
 * Every adapter passes test/contracts/log.contract.ts.
 *
 * Delivery is at least once: after a restart or a rebalance, records past the last committed offset
 * come again. A partition is never delivered to two members of a group at the same time.
 * Errors are FleetErrors: NOT_FOUND (unknown topic), VALIDATION_FAILED (malformed argument; nothing
 * was done), PAYLOAD_TOO_LARGE (record over the adapter's limit), CLOSED (after close()).
 */

export interface ProducerRecord {
  /** Routing key (a device id): the same key always lands on the same partition. */
  key: string;
  value: Uint8Array;
  /** Epoch ms; defaults to the append time. */
  timestamp?: number;
}

export interface RecordPosition {
  partition: number;
  /** Offset of the record within its partition. */
  offset: number;
}

export interface LogRecord {
  topic: string;
  partition: number;
  offset: number;
  key: string;
  value: Uint8Array;
  timestamp: number;
}

export interface RecordBatch {
  topic: string;
  partition: number;
  /** In offset order, never empty. */
  records: LogRecord[];
}

export interface TopicPartition {
  topic: string;
  partition: number;
}

export interface CommitRequest extends TopicPartition {
  /** The next offset to read (one past the last processed record), as Kafka commits it. */
  offset: number;
}

export interface ConsumerOptions {
  group: string;
  topics: string[];
  /**
   * Called for each batch of one partition, batches of a partition strictly in order. The consumer
   * does not fetch the next batch of that partition until the returned promise settles. Offsets are
   * NOT committed by returning: the caller commits explicitly once the records' effects are durable.
   */
  onBatch(batch: RecordBatch): Promise<void>;
  /** Called before partitions are taken away (rebalance, stop): flush and commit them now. */
  onRevoke?(partitions: TopicPartition[]): Promise<void>;
  /** Called when partitions are assigned to this consumer. */
  onAssign?(partitions: TopicPartition[]): void;
  /** Upper bound of records handed to one onBatch call. */
  maxBatchRecords?: number;
  /**
   * Where a partition the group never committed on starts: `earliest` (default, the oldest record
   * kept) or `latest` (the end of the partition when it is assigned: a reader of live data that
   * wants only what comes next, as Kafka's `fromBeginning: false`). Committed offsets always win.
   */
  startAt?: 'earliest' | 'latest';
  /**
   * What this reader favours when records trickle in: `latency` (default) hands over each record as
   * soon as it is there; `throughput` lets a read wait a little (the adapter's setting, a few tens of
   * ms) for a fuller batch. Readers of busy topics take `throughput`: fewer, larger reads cost the
   * broker and this process less per record. An adapter whose reads cost nothing extra ignores it.
   */
  prefer?: 'latency' | 'throughput';
}

export interface Consumer {
  /** Joins the group and starts delivering from the committed offsets (or the start of the topic). */
  start(): Promise<void>;
  /**
   * Durably stores the group's offsets. Only partitions currently assigned to this consumer (until
   * its onRevoke returns) may be committed; an adapter may refuse others (local: CONFLICT).
   */
  commit(offsets: CommitRequest[]): Promise<void>;
  /** Stops fetching from these partitions until resumed (backpressure). */
  pause(partitions: TopicPartition[]): void;
  resume(partitions: TopicPartition[]): void;
  /**
   * The next batch of each partition starts at `offset`: forward (the records before it are never
   * handed over) or back (they are handed over again). For a reader that stopped following a
   * partition for a while and takes it up again where it chooses (the end, say): seek a paused
   * partition, then resume it, and no batch from before the seek comes after it. Only partitions
   * assigned now (else CONFLICT), to an offset at most the partition's end (endOffsets).
   */
  seek(positions: CommitRequest[]): void;
  /** Stops delivery after in-flight batches settle, calls onRevoke, leaves the group. */
  stop(): Promise<void>;
}

export interface TopicSpec {
  /** Kafka's rule: 1 to 249 characters of a-z, A-Z, 0-9, ".", "_" and "-". */
  name: string;
  partitions: number;
  /**
   * Records older than this (ms) may be deleted, whole segments at a time, whether every reader has
   * read them or not: a group whose committed offset they were past goes on from the oldest record
   * left (startOffsets() tells how many it missed). Absent: the local log keeps a record until every
   * group that committed on the topic has read it; Kafka applies the broker's default. Kafka sets it
   * when it creates the topic; the local log applies it from the ensureTopics call that names it.
   */
  retentionMs?: number;
}

export interface Log {
  /** Creates the topics that do not exist yet; existing ones keep their partition count. */
  ensureTopics(topics: TopicSpec[]): Promise<void>;
  partitionCount(topic: string): Promise<number>;
  /**
   * Appends records. Resolves only when every record is durable (local: fsynced; Kafka: acked by all
   * in-sync replicas), with the position of each record in input order.
   */
  append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]>;
  consumer(options: ConsumerOptions): Consumer;
  /** Committed offset (next to read) of a group for a partition, or 0 when none. */
  committed(group: string, topic: string, partition: number): Promise<number>;
  /**
   * Per partition (index = partition), the offset the next durable record gets: what a consumer
   * can read up to (Kafka's high watermark). Minus a group's position, that is its lag.
   */
  endOffsets(topic: string): Promise<number[]>;
  /**
   * Per partition (index = partition), the offset of the oldest record still kept (Kafka's low
   * watermark; equal to the end when none is). A group whose committed offset is below it lost the
   * records between them to retention before it read them.
   */
  startOffsets(topic: string): Promise<number[]>;
  /**
   * Forgets a group's committed offsets (its consumers must have stopped: CONFLICT while one is
   * still a member). An unknown group is nothing to do. On the local log, a group's commits hold
   * back the deletion of old segments until then.
   */
  deleteGroup(group: string): Promise<void>;
  close(): Promise<void>;
}

/** The stable key → partition mapping every adapter uses (murmur2, as Kafka's default partitioner). */
export { partitionFor } from '../kernel/partition.ts';
