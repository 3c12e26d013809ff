/**
 * The log port on Apache Kafka through kafkajs: the distributed adapter of DESIGN §2.
 *
 * - append: idempotent producer, acks=-1, the partition chosen by engine/kernel/partition.ts (so a key
 *   lands on the same partition as with the local log), concurrent appends sharing a produce request
 *   (group commit, LingerProducer); each promise resolves with Kafka's offsets once acknowledged.
 * - consumer: a kafkajs consumer group delivering per-partition batches; see KafkaGroupConsumer
 *   for what is guaranteed around rebalances.
 */
import kafkajs from 'kafkajs';
import type { Admin, Kafka, Producer, RetryOptions } from 'kafkajs';
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import { exponentialBackoff } from '../../engine/kernel/backoff.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { Consumer, ConsumerOptions, Log, ProducerRecord, RecordPosition, TopicSpec } from '../../engine/ports/log.ts';
import { KafkaGroupConsumer, type ConsumerErrorContext } from './KafkaGroupConsumer.ts';
import { kafkaErrorToFleetError } from './kafkaErrors.ts';
import { LingerProducer } from './LingerProducer.ts';
import { validateLogOptions, type KafkaLogLevel, type KafkaLogOptions } from './KafkaLogOptions.ts';
import { validateRecords } from './validateInput.ts';
import { mendRequestQueue } from './requestQueueMend.ts';

const { Kafka: KafkaClient, logLevel: kafkaLogLevel, Partitioners } = kafkajs;

// Before any connection exists: kafkajs's connections would otherwise set a timer of minus the epoch after each answer.
mendRequestQueue();

/** Between looks at the metadata while new topics get their leaders (ensureTopics). */
const LEADER_WAIT = exponentialBackoff({ initialMs: 50, maxMs: 1000 });

const LOG_LEVELS: Record<KafkaLogLevel, number> = {
  nothing: kafkaLogLevel.NOTHING,
  error: kafkaLogLevel.ERROR,
  warn: kafkaLogLevel.WARN,
  info: kafkaLogLevel.INFO,
  debug: kafkaLogLevel.DEBUG,
};

/** Kafka's legal topic names (org.apache.kafka.common.internals.Topic). */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

export function createKafkaLog(options: KafkaLogOptions): Log {
  return new KafkaLog(options);
}

class KafkaLog implements Log {
  readonly #kafka: Kafka;
  readonly #admin: Admin;
  #producer: Producer;
  readonly #appender: LingerProducer;
  readonly #options: Required<Pick<KafkaLogOptions, 'defaultPartitions' | 'replicationFactor'>> & KafkaLogOptions;
  readonly #clock: Clock;
  readonly #retry: RetryOptions;
  #adminReady: Promise<void> | undefined;
  #producerReady: Promise<void> | undefined;
  #partitions = new Map<string, Promise<number>>();
  #consumers = new Set<KafkaGroupConsumer>();
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: KafkaLogOptions) {
    validateLogOptions(options, Object.keys(LOG_LEVELS));
    this.#options = { defaultPartitions: 4, replicationFactor: -1, ...options };
    this.#clock = options.clock ?? systemClock;
    // Bounded retries for admin and consumer calls: a caller hears about an outage in seconds.
    this.#retry = { initialRetryTime: 100, maxRetryTime: 2000, retries: 5 };
    this.#kafka = new KafkaClient({
      brokers: options.brokers,
      clientId: options.clientId ?? 'fleetstream',
      connectionTimeout: options.connectionTimeoutMs ?? 3000,
      requestTimeout: options.requestTimeoutMs ?? 30000,
      retry: this.#retry,
      logLevel: LOG_LEVELS[options.logLevel ?? 'error'],
    });
    this.#admin = this.#kafka.admin({ retry: this.#retry });
    this.#producer = this.#newProducer();
    this.#appender = new LingerProducer({
      producer: () => this.#producer,
      connect: () => this.#connectProducer(),
      renewProducer: () => this.#renewProducer(),
      partitionCount: (topic) => this.partitionCount(topic),
      clock: this.#clock,
      lingerMs: options.lingerMs ?? 0,
      maxBatchRecords: options.maxBatchRecords ?? 5000,
      maxPendingRecords: options.maxPendingRecords ?? 100_000,
      appendTimeoutMs: options.appendTimeoutMs ?? 30_000,
      ackTimeoutMs: options.requestTimeoutMs ?? 30_000,
      onFlush: options.onFlush,
    });
  }

  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    this.#assertOpen();
    if (!Array.isArray(topics)) throw new FleetError('VALIDATION_FAILED', 'topics must be an array of {name, partitions}');
    const specs = topics.map((spec) => this.#validTopicSpec(spec));
    if (specs.length === 0) return;
    await this.#connectAdmin();
    let missing: typeof specs = [];
    try {
      const existing = new Set(await this.#admin.listTopics());
      missing = specs.filter((s) => !existing.has(s.name));
      if (missing.length > 0) {
        // false means they all exist already (created meanwhile by another process): fine
        await this.#admin.createTopics({
          // kafkajs's own wait retries only LEADER_NOT_AVAILABLE; a broker whose metadata does not
          // have the new topic yet answers UNKNOWN_TOPIC_OR_PARTITION, so the wait is ours (below).
          waitForLeaders: false,
          topics: missing.map((s) => ({
            topic: s.name, numPartitions: s.partitions, replicationFactor: this.#options.replicationFactor,
            ...(s.retentionMs === undefined ? {} : { configEntries: [{ name: 'retention.ms', value: String(s.retentionMs) }] }),
          })),
        });
      }
    } catch (error) {
      if (!isAlreadyExists(error)) throw kafkaErrorToFleetError(error, 'ensureTopics');
    }
    if (missing.length > 0) await this.#waitForLeaders(missing.map((s) => s.name));
    for (const s of specs) this.#partitions.delete(s.name); // existing ones keep their count: re-read it
  }

  /** Until the broker's metadata lists every partition of `topics` with a leader; UNAVAILABLE (retriable) past requestTimeoutMs. */
  async #waitForLeaders(topics: string[]): Promise<void> {
    const deadline = this.#clock.now() + (this.#options.requestTimeoutMs ?? 30_000);
    for (let attempt = 0; ; attempt++) {
      let known: { name: string; partitions: { leader: number }[] }[];
      try {
        // All topics in one request, as in #fetchPartitionCount: a topic the broker does not know yet is just absent.
        ({ topics: known } = await this.#admin.fetchTopicMetadata());
      } catch (error) {
        throw kafkaErrorToFleetError(error, 'ensureTopics');
      }
      const led = (name: string) => known.some((t) => t.name === name && t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
      const waiting = topics.filter((name) => !led(name));
      if (waiting.length === 0) return;
      if (this.#clock.now() >= deadline) {
        throw new FleetError('UNAVAILABLE', `ensureTopics: no leader yet for ${waiting.join(', ')}`, { retriable: true, detail: { topics: waiting } });
      }
      await new Promise<void>((resolve) => this.#clock.setTimeout(resolve, LEADER_WAIT(attempt)));
    }
  }

  partitionCount(topic: string): Promise<number> {
    if (this.#closed) return Promise.reject(new FleetError('CLOSED', 'the Kafka log is closed'));
    if (typeof topic !== 'string' || !TOPIC_NAME.test(topic)) {
      return Promise.reject(new FleetError('VALIDATION_FAILED', `invalid topic name ${JSON.stringify(topic)}`, { detail: { field: 'topic' } }));
    }
    let count = this.#partitions.get(topic);
    if (!count) {
      count = this.#fetchPartitionCount(topic);
      this.#partitions.set(topic, count);
      // failures are not cached: the topic may be created, the broker may come back
      count.catch(() => {
        if (this.#partitions.get(topic) === count) this.#partitions.delete(topic);
      });
    }
    return count;
  }

  async append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
    this.#assertOpen();
    validateRecords(records);
    return this.#appender.append(topic, records);
  }

  consumer(options: ConsumerOptions): Consumer {
    this.#assertOpen();
    const consumer = new KafkaGroupConsumer({
      kafka: this.#kafka,
      clock: this.#clock,
      partitionCount: (topic) => this.partitionCount(topic),
      sessionTimeoutMs: this.#options.sessionTimeoutMs ?? 30_000,
      heartbeatIntervalMs: this.#options.heartbeatIntervalMs ?? 3000,
      rebalanceTimeoutMs: this.#options.rebalanceTimeoutMs ?? 60_000,
      maxWaitMs: this.#options.maxWaitMs ?? 500,
      throughputWaitMs: this.#options.throughputWaitMs ?? 5,
      fullFetchBytes: 64 * 1024,
      partitionsConsumedConcurrently: this.#options.partitionsConsumedConcurrently ?? 4,
      defaultMaxBatchRecords: this.#options.consumerMaxBatchRecords ?? 500,
      redeliveryBackoffMs: this.#options.redeliveryBackoffMs ?? 1000,
      retry: this.#retry,
      reopenBackoffMs: { initial: 1000, max: 30_000 },
      onError: this.#options.onConsumerError ?? defaultOnConsumerError,
      onClosed: (c) => this.#consumers.delete(c),
    }, options);
    this.#consumers.add(consumer);
    return consumer;
  }

  async committed(group: string, topic: string, partition: number): Promise<number> {
    this.#assertOpen();
    if (typeof group !== 'string' || group.length === 0) throw new FleetError('VALIDATION_FAILED', 'group must be a non-empty string', { detail: { field: 'group' } });
    if (!Number.isSafeInteger(partition) || partition < 0) {
      throw new FleetError('VALIDATION_FAILED', 'partition must be a non-negative integer', { detail: { field: 'partition' } });
    }
    const partitions = await this.partitionCount(topic);
    if (partition >= partitions) {
      throw new FleetError('VALIDATION_FAILED', `topic ${topic} has ${partitions} partitions`, { detail: { field: 'partition' } });
    }
    await this.#connectAdmin();
    // kafkajs's admin does not retry OffsetFetch; a coordinator that is moving or still loading
    // (the first group of a fresh cluster creates __consumer_offsets) answers again shortly.
    return this.#retrying('committed', async () => {
      const offsets = await this.#admin.fetchOffsets({ groupId: group, topics: [topic] });
      const found = offsets.find((t) => t.topic === topic)?.partitions.find((p) => p.partition === partition);
      const offset = found ? Number(found.offset) : -1;
      return offset >= 0 ? offset : 0; // -1: the group never committed this partition
    });
  }

  /** Retriable failures (see kafkaErrors.ts) are tried again after 100 · 2^attempt ms, five times. */
  async #retrying<T>(what: string, call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        const mapped = kafkaErrorToFleetError(error, what);
        if (!mapped.retriable || attempt >= 5 || this.#closed) throw mapped;
        await new Promise<void>((resolve) => this.#clock.setTimeout(resolve, 100 * 2 ** attempt));
      }
    }
  }

  async endOffsets(topic: string): Promise<number[]> {
    this.#assertOpen();
    await this.partitionCount(topic); // NOT_FOUND for an unknown topic, as the other calls
    await this.#connectAdmin();
    // A partition whose leader is still being elected (a topic just created, a broker restarting) answers shortly.
    const offsets: { partition: number; high: string }[] = await this.#retrying(`endOffsets ${topic}`, () => this.#admin.fetchTopicOffsets(topic));
    const out: number[] = [];
    for (const { partition, high } of offsets) out[partition] = Number(high);
    return Array.from(out, (offset) => offset ?? 0);
  }

  async startOffsets(topic: string): Promise<number[]> {
    this.#assertOpen();
    await this.partitionCount(topic);
    await this.#connectAdmin();
    const offsets: { partition: number; low: string }[] = await this.#retrying(`startOffsets ${topic}`, () => this.#admin.fetchTopicOffsets(topic));
    const out: number[] = [];
    for (const { partition, low } of offsets) out[partition] = Number(low);
    return Array.from(out, (offset) => offset ?? 0);
  }

  async deleteGroup(group: string): Promise<void> {
    this.#assertOpen();
    if (typeof group !== 'string' || group.length === 0) throw new FleetError('VALIDATION_FAILED', 'group must be a non-empty string', { detail: { field: 'group' } });
    await this.#connectAdmin();
    await this.#retrying(`deleteGroup ${group}`, async () => {
      try {
        await this.#admin.deleteGroups([group]);
      } catch (error) {
        // The broker's answer per group: gone already is done; members still in it is a conflict.
        const codes = ((error as { groups?: { error?: { type?: string } }[] }).groups ?? []).map((g) => g.error?.type);
        if (codes.includes('GROUP_ID_NOT_FOUND')) return;
        if (codes.includes('NON_EMPTY_GROUP')) throw new FleetError('CONFLICT', `group ${group} still has members`, { detail: { group } });
        throw error;
      }
    });
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= (async () => {
      await Promise.allSettled([...this.#consumers].map((c) => c.stop()));
      await this.#appender.close();
      await Promise.allSettled([this.#producer.disconnect(), this.#admin.disconnect()]);
    })();
    return this.#closing;
  }

  #assertOpen(): void {
    if (this.#closed) throw new FleetError('CLOSED', 'the Kafka log is closed');
  }

  #validTopicSpec(spec: TopicSpec): TopicSpec {
    if (typeof spec !== 'object' || spec === null) throw new FleetError('VALIDATION_FAILED', 'a topic spec must be {name, partitions}');
    if (typeof spec.name !== 'string' || !TOPIC_NAME.test(spec.name) || spec.name === '.' || spec.name === '..') {
      throw new FleetError('VALIDATION_FAILED', `invalid topic name ${JSON.stringify(spec.name)}`, { detail: { field: 'name' } });
    }
    const partitions = spec.partitions ?? this.#options.defaultPartitions;
    if (!Number.isSafeInteger(partitions) || partitions < 1) {
      throw new FleetError('VALIDATION_FAILED', `topic ${spec.name}: partitions must be a positive integer`, { detail: { field: 'partitions' } });
    }
    const { retentionMs } = spec;
    if (retentionMs !== undefined && (!Number.isSafeInteger(retentionMs) || retentionMs < 1)) {
      throw new FleetError('VALIDATION_FAILED', `topic ${spec.name}: retentionMs must be a positive integer`, { detail: { field: 'retentionMs' } });
    }
    return retentionMs === undefined ? { name: spec.name, partitions } : { name: spec.name, partitions, retentionMs };
  }

  async #fetchPartitionCount(topic: string): Promise<number> {
    await this.#connectAdmin();
    let topics: { name: string; partitions: unknown[] }[];
    try {
      // All topics in one metadata request: asking for a missing topic by name makes kafkajs
      // retry UNKNOWN_TOPIC_OR_PARTITION for seconds before giving up.
      ({ topics } = await this.#admin.fetchTopicMetadata());
    } catch (error) {
      throw kafkaErrorToFleetError(error, `partitionCount ${topic}`);
    }
    const found = topics.find((t) => t.name === topic);
    if (!found) throw new FleetError('NOT_FOUND', `topic ${topic} does not exist`, { detail: { topic } });
    return found.partitions.length;
  }

  #connectAdmin(): Promise<void> {
    this.#adminReady ??= this.#admin.connect().catch((error: unknown) => {
      this.#adminReady = undefined;
      throw kafkaErrorToFleetError(error, 'connect');
    });
    return this.#adminReady;
  }

  #newProducer(): Producer {
    return this.#kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      // Every message carries its partition; the partitioner is never consulted (and naming one
      // silences kafkajs's partitioner-change warning).
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      // The idempotent producer retries without limit (kafkajs's EoS requirement: a sequence number
      // given up on could be reused for other records). appendTimeoutMs bounds what callers wait.
      retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: Number.MAX_SAFE_INTEGER },
    });
  }

  /** A new producer (a new producer id) for the next request; the old one is let go. */
  #renewProducer(): void {
    const old = this.#producer;
    this.#producer = this.#newProducer();
    this.#producerReady = undefined;
    old.disconnect().catch(() => undefined);
  }

  #connectProducer(): Promise<void> {
    this.#producerReady ??= this.#producer.connect().catch((error: unknown) => {
      this.#producerReady = undefined;
      throw kafkaErrorToFleetError(error, 'connect');
    });
    return this.#producerReady;
  }
}

function defaultOnConsumerError(error: FleetError, context: ConsumerErrorContext): void {
  console.error(`kafka-log: consumer group ${context.group} ${context.stage} failed` +
    (context.topic === undefined ? '' : ` on ${context.topic}/${context.partition}`), error);
}

function isAlreadyExists(error: unknown): boolean {
  const e = error as { type?: unknown; errors?: unknown } | null;
  if (typeof e !== 'object' || e === null) return false;
  if (e.type === 'TOPIC_ALREADY_EXISTS') return true;
  return Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((inner) => (inner as { type?: unknown } | null)?.type === 'TOPIC_ALREADY_EXISTS');
}
