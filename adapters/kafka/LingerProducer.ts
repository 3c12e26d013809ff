/**
 * Appends to Kafka with producer-side batching (group commit, as the local log's FlushRounds): each
 * append's promise settles only when Kafka acknowledged its records (acks=-1: all in-sync replicas).
 *
 * One produce request is in flight at a time. kafkajs's idempotent producer holds a lock per broker
 * for a request's whole round trip anyway (eosManager.acquireBrokerLock); keeping the one request
 * here also keeps the records of a partition in append-call order, and under load it batches by
 * itself: what arrives during a round trip leaves with the next request.
 *
 * A request starts one event-loop turn after the first append reaches an idle producer (appends made
 * in the same turn share it), or `lingerMs` after it. The next one starts in the turn the previous
 * one is acknowledged, without a linger, in that turn's check phase (setImmediate): the appends of
 * the requests read in its I/O phase join it. A linger by default cost a closed loop of clients (each
 * awaiting its 202 before its next uplink) a whole linger per round trip: the producer is idle at
 * every acknowledgement, since every client waited on that request (docs/scaling.md).
 */
import type { Producer, RecordMetadata, TopicMessages } from 'kafkajs';
import type { Clock, TimerHandle } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { ProducerRecord, RecordPosition } from '../../engine/ports/log.ts';
import { partitionFor } from '../../engine/kernel/partition.ts';
import { kafkaErrorToFleetError, lostProducerState } from './kafkaErrors.ts';

export interface FlushInfo {
  /** Records in the produce request. */
  records: number;
  /** Append calls the request carried. */
  appends: number;
  /** From sending the request to Kafka's acknowledgement (or failure), ms. */
  durationMs: number;
  error?: FleetError;
}

export interface LingerProducerOptions {
  /** The current kafkajs producer (idempotent, acks=-1 requests are sent by this class). */
  producer(): Producer;
  /** Connects the current producer; called before each request, must be cheap once connected. */
  connect(): Promise<void>;
  /**
   * The broker answered that the producer's sequence state is gone (kafkaErrors.ts
   * lostProducerState): the idempotent producer can send nothing more under its id, so the next
   * request must go out from a new one.
   */
  renewProducer(): void;
  /** Partition count of a topic (cached by the caller); rejects NOT_FOUND for unknown topics. */
  partitionCount(topic: string): Promise<number>;
  clock: Clock;
  /**
   * ms the first append to an idle producer waits for company before its request leaves; 0: it leaves
   * one event-loop turn later. Requests that follow an acknowledgement never wait for it.
   */
  lingerMs: number;
  /** Records per produce request; a request leaves early when it is full. An append is never split. */
  maxBatchRecords: number;
  /**
   * Bytes of keys and values per produce request, as for maxBatchRecords. The broker refuses a
   * record batch over its `message.max.bytes` (1 MiB by default), and with it every append that
   * shared the request: several topics' appends (states' events, live events, dead letters) must
   * not add up past it. Default 512 KiB.
   */
  maxBatchBytes?: number;
  /** Records queued or in flight; appends beyond it reject with BACKPRESSURE. */
  maxPendingRecords: number;
  /** ms after which an unacknowledged append rejects with TIMEOUT (retriable); its records may still land. */
  appendTimeoutMs: number;
  /** ms the broker waits for in-sync replicas before answering a produce request. */
  ackTimeoutMs: number;
  onFlush?: (info: FlushInfo) => void;
}

interface PendingAppend {
  topic: string;
  records: ProducerRecord[];
  partitions: number[];
  timestamps: number[];
  bytes: number;
  resolve(positions: RecordPosition[]): void;
  reject(error: FleetError): void;
  settled: boolean;
  timer: TimerHandle;
}

export class LingerProducer {
  readonly #options: LingerProducerOptions;
  readonly #maxBatchBytes: number;
  #queue: PendingAppend[] = [];
  #queuedRecords = 0;
  #queuedBytes = 0;
  #inFlightRecords = 0;
  #sending = false;
  /** The linger's timer, or the immediate that starts the next request. */
  #start: TimerHandle | undefined;
  #closed = false;
  #idle: (() => void)[] = [];
  #unsettled = 0;
  #keepAlive: ReturnType<typeof setInterval> | undefined;

  constructor(options: LingerProducerOptions) {
    this.#options = options;
    this.#maxBatchBytes = options.maxBatchBytes ?? 512 * 1024;
  }

  async append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
    if (this.#closed) throw new FleetError('CLOSED', 'the Kafka log is closed');
    if (records.length === 0) return [];
    const partitions = await this.#options.partitionCount(topic);
    if (this.#closed) throw new FleetError('CLOSED', 'the Kafka log is closed');
    const pending = this.#queuedRecords + this.#inFlightRecords;
    if (pending + records.length > this.#options.maxPendingRecords) {
      throw new FleetError('BACKPRESSURE', `${pending} records are waiting for Kafka; limit ${this.#options.maxPendingRecords}`);
    }
    const now = this.#options.clock.now();
    return new Promise<RecordPosition[]>((resolve, reject) => {
      const entry: PendingAppend = {
        topic,
        records,
        partitions: records.map((r) => partitionFor(r.key, partitions)),
        timestamps: records.map((r) => r.timestamp ?? now),
        bytes: recordBytes(records),
        resolve,
        reject,
        settled: false,
        timer: this.#options.clock.setTimeout(() => this.#expire(entry), this.#options.appendTimeoutMs),
      };
      this.#queue.push(entry);
      this.#queuedRecords += records.length;
      this.#queuedBytes += entry.bytes;
      this.#retain();
      this.#schedule();
    });
  }

  /** Sends what is queued and waits until nothing is queued or in flight; later appends reject CLOSED. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#start?.cancel();
    this.#start = undefined;
    if (!this.#sending) void this.#flush();
    if (this.#queue.length === 0 && !this.#sending) return;
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #schedule(): void {
    if (this.#sending) return; // the acknowledgement of the current request starts the next
    if (this.#queuedRecords >= this.#options.maxBatchRecords || this.#queuedBytes >= this.#maxBatchBytes || this.#closed) {
      this.#start?.cancel();
      this.#start = undefined;
      void this.#flush();
      return;
    }
    if (this.#start !== undefined) return;
    if (this.#options.lingerMs > 0) {
      this.#start = this.#options.clock.setTimeout(() => {
        this.#start = undefined;
        void this.#flush();
      }, this.#options.lingerMs);
    } else {
      this.#startSoon();
    }
  }

  /** Starts a request in this event-loop turn's check phase, once the turn's I/O callbacks have made their appends. */
  #startSoon(): void {
    const immediate = setImmediate(() => {
      this.#start = undefined;
      void this.#flush();
    });
    this.#start = { cancel: () => clearImmediate(immediate) };
  }

  #expire(entry: PendingAppend): void {
    if (entry.settled) return;
    const queuedAt = this.#queue.indexOf(entry);
    if (queuedAt >= 0) {
      // never sent: drop it so it cannot land after the caller was told it failed
      this.#queue.splice(queuedAt, 1);
      this.#queuedRecords -= entry.records.length;
      this.#queuedBytes -= entry.bytes;
    }
    this.#settle(entry, new FleetError('TIMEOUT', `Kafka did not acknowledge the append within ${this.#options.appendTimeoutMs} ms`, {
      retriable: true,
      detail: { topic: entry.topic, sent: queuedAt < 0 },
    }));
  }

  /**
   * The system clock's timers do not keep the process alive (engine/kernel/clock.ts), yet a caller awaiting
   * an append must not see the process exit under it while the linger or a reconnect is pending:
   * hold one ref'd handle while any append is unsettled.
   */
  #retain(): void {
    if (this.#unsettled++ === 0) this.#keepAlive = setInterval(() => {}, 2 ** 30);
  }

  #release(): void {
    if (--this.#unsettled === 0 && this.#keepAlive !== undefined) {
      clearInterval(this.#keepAlive);
      this.#keepAlive = undefined;
    }
  }

  #settle(entry: PendingAppend, result: RecordPosition[] | FleetError): void {
    if (entry.settled) return;
    entry.settled = true;
    this.#release();
    entry.timer.cancel();
    if (result instanceof FleetError) entry.reject(result);
    else entry.resolve(result);
  }

  async #flush(): Promise<void> {
    if (this.#sending) return;
    const batch: PendingAppend[] = [];
    let count = 0;
    let bytes = 0;
    while (this.#queue.length > 0) {
      const next = this.#queue[0];
      if (batch.length > 0 && (count + next.records.length > this.#options.maxBatchRecords || bytes + next.bytes > this.#maxBatchBytes)) break;
      this.#queue.shift();
      batch.push(next);
      count += next.records.length;
      bytes += next.bytes;
    }
    this.#queuedRecords -= count;
    this.#queuedBytes -= bytes;
    if (batch.length === 0) {
      this.#notifyIdle();
      return;
    }
    this.#sending = true;
    this.#inFlightRecords = count;
    const started = this.#options.clock.now();
    let error: FleetError | undefined;
    try {
      await this.#options.connect();
      const metadata = await this.#options.producer().sendBatch({
        topicMessages: toTopicMessages(batch),
        acks: -1,
        timeout: this.#options.ackTimeoutMs,
      });
      assignPositions(batch, metadata, (entry, positions) => this.#settle(entry, positions));
    } catch (cause) {
      error = kafkaErrorToFleetError(cause, 'append');
      // The broker refused these records; a retried append goes out under a new producer id.
      if (lostProducerState(cause)) this.#options.renewProducer();
      for (const entry of batch) this.#settle(entry, error);
    } finally {
      this.#sending = false;
      this.#inFlightRecords = 0;
    }
    this.#options.onFlush?.({ records: count, appends: batch.length, durationMs: this.#options.clock.now() - started, error });
    if (this.#queue.length > 0) {
      // what queued up during the round trip has waited long enough: no linger
      if (this.#start === undefined) this.#startSoon();
    } else {
      this.#notifyIdle();
    }
  }

  #notifyIdle(): void {
    if (this.#queue.length > 0 || this.#sending) return;
    const waiters = this.#idle;
    this.#idle = [];
    for (const resolve of waiters) resolve();
  }
}

function recordBytes(records: readonly ProducerRecord[]): number {
  let bytes = 0;
  for (const record of records) bytes += record.key.length + record.value.byteLength;
  return bytes;
}

function toTopicMessages(batch: PendingAppend[]): TopicMessages[] {
  const byTopic = new Map<string, TopicMessages>();
  for (const entry of batch) {
    let topicMessages = byTopic.get(entry.topic);
    if (!topicMessages) {
      topicMessages = { topic: entry.topic, messages: [] };
      byTopic.set(entry.topic, topicMessages);
    }
    for (let i = 0; i < entry.records.length; i++) {
      const record = entry.records[i];
      topicMessages.messages.push({
        key: Buffer.from(record.key, 'utf8'),
        value: Buffer.from(record.value.buffer, record.value.byteOffset, record.value.byteLength),
        // explicit partition: the engine's murmur2 mapping, identical to the local log's
        partition: entry.partitions[i],
        timestamp: String(entry.timestamps[i]),
      });
    }
  }
  return [...byTopic.values()];
}

/**
 * kafkajs returns one RecordMetadata per topic-partition with the base offset of the records it
 * wrote there, in the order they were given; the n-th record of a partition has baseOffset + n.
 */
function assignPositions(
  batch: PendingAppend[],
  metadata: RecordMetadata[],
  settle: (entry: PendingAppend, positions: RecordPosition[] | FleetError) => void,
): void {
  const next = new Map<string, number>();
  for (const m of metadata) {
    if (m.baseOffset === undefined) continue;
    next.set(`${m.topicName}\u0000${m.partition}`, Number(m.baseOffset));
  }
  for (const entry of batch) {
    const positions: RecordPosition[] = [];
    let missing = false;
    for (const partition of entry.partitions) {
      const key = `${entry.topic}\u0000${partition}`;
      const offset = next.get(key);
      if (offset === undefined) {
        missing = true;
        break;
      }
      positions.push({ partition, offset });
      next.set(key, offset + 1);
    }
    settle(entry, missing
      ? new FleetError('INTERNAL', 'Kafka acknowledged the request without the offsets of every partition', { detail: { topic: entry.topic } })
      : positions);
  }
}
