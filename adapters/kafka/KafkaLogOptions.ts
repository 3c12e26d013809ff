/**
 * Options of createKafkaLog, with units and defaults, and their check: a bad option is refused with
 * VALIDATION_FAILED naming it, before kafkajs sees it (whose own checks throw untyped errors, or none).
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { ConsumerErrorContext } from './KafkaGroupConsumer.ts';
import type { FlushInfo } from './LingerProducer.ts';

export type KafkaLogLevel = 'nothing' | 'error' | 'warn' | 'info' | 'debug';

export interface KafkaLogOptions {
  /** Bootstrap brokers as host:port, e.g. ['127.0.0.1:19092']. Required. */
  brokers: string[];
  /** Client id in broker logs and quotas. Default 'fleetstream'. */
  clientId?: string;
  /**
   * How long the first append to an idle producer waits for others to share its produce request, ms.
   * Default 0: the request leaves one event-loop turn later; appends arriving while a request is in
   * flight leave together once it is acknowledged whatever the linger (LingerProducer.ts).
   */
  lingerMs?: number;
  /** Records per produce request (an append is never split). Default 5000. */
  maxBatchRecords?: number;
  /** Records queued or awaiting acknowledgement; appends beyond it reject BACKPRESSURE. Default 100000. */
  maxPendingRecords?: number;
  /** An append not acknowledged after this many ms rejects with TIMEOUT (retriable). Default 30000. */
  appendTimeoutMs?: number;
  /** Partition count ensureTopics uses for a TopicSpec without `partitions`. Default 4. */
  defaultPartitions?: number;
  /** Replication factor of created topics; -1 takes the broker's default. Default -1. */
  replicationFactor?: number;
  /** kafkajs's own log output (to the console). Default 'error'. */
  logLevel?: KafkaLogLevel;
  /** TCP connect timeout, ms. Default 3000. */
  connectionTimeoutMs?: number;
  /** Request timeout, ms. Default 30000. */
  requestTimeoutMs?: number;
  /** Consumer group session timeout, ms (the broker allows 6000..1800000 by default). Default 30000. */
  sessionTimeoutMs?: number;
  /** Consumer heartbeat interval, ms; also bounds how late a busy consumer notices a rebalance. Default 3000. */
  heartbeatIntervalMs?: number;
  /** How long the group waits for members to rejoin (and onRevoke to finish), ms. Default 60000. */
  rebalanceTimeoutMs?: number;
  /** Fetch long-poll, ms; bounds how late an idle consumer notices a rebalance. Default 500. */
  maxWaitMs?: number;
  /**
   * How long a fetch of a consumer that prefers throughput (ConsumerOptions.prefer) waits for 64 KiB
   * of records, ms: the latency such a reader adds when records trickle in. Default 5 (5, 20 and 50
   * fetched the same throughput in bench/distributed.bench.ts; a state shown live pays it twice).
   */
  throughputWaitMs?: number;
  /** Partitions whose batches a consumer processes at the same time. Default 4. */
  partitionsConsumedConcurrently?: number;
  /** Records per onBatch call when ConsumerOptions.maxBatchRecords is not given. Default 500. */
  consumerMaxBatchRecords?: number;
  /** Delay before a batch whose onBatch rejected is delivered again, ms. Default 1000. */
  redeliveryBackoffMs?: number;
  /** Time for linger, deadlines and back-offs. Default the system clock. */
  clock?: Clock;
  /** Called after every produce request (instrumentation; nothing is computed when absent). */
  onFlush?: (info: FlushInfo) => void;
  /** Errors no caller awaits: rejected consumer callbacks, group failures. Default: printed on stderr. */
  onConsumerError?(error: FleetError, context: ConsumerErrorContext): void;
}

export function validateLogOptions(options: KafkaLogOptions, logLevels: readonly string[]): void {
  if (typeof options !== 'object' || options === null) throw new FleetError('VALIDATION_FAILED', 'Kafka log options must be an object');
  if (!Array.isArray(options.brokers) || options.brokers.length === 0 || !options.brokers.every((b) => typeof b === 'string' && /^[^\s:]+:\d{1,5}$/.test(b))) {
    throw new FleetError('VALIDATION_FAILED', 'brokers must be a non-empty array of host:port', { detail: { option: 'brokers' } });
  }
  const positive = ['maxBatchRecords', 'maxPendingRecords', 'appendTimeoutMs', 'defaultPartitions', 'connectionTimeoutMs', 'requestTimeoutMs', 'sessionTimeoutMs', 'heartbeatIntervalMs', 'rebalanceTimeoutMs', 'partitionsConsumedConcurrently', 'consumerMaxBatchRecords'] as const;
  for (const field of positive) {
    const value = options[field];
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
      throw new FleetError('VALIDATION_FAILED', `${field} must be a positive integer`, { detail: { option: field } });
    }
  }
  if ((options.heartbeatIntervalMs ?? 3000) >= (options.sessionTimeoutMs ?? 30_000)) {
    throw new FleetError('VALIDATION_FAILED', 'heartbeatIntervalMs must be below sessionTimeoutMs', { detail: { option: 'heartbeatIntervalMs' } });
  }
  for (const field of ['lingerMs', 'maxWaitMs', 'throughputWaitMs', 'redeliveryBackoffMs'] as const) {
    const value = options[field];
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0)) {
      throw new FleetError('VALIDATION_FAILED', `${field} must be a non-negative integer`, { detail: { option: field } });
    }
  }
  if (options.replicationFactor !== undefined && !(Number.isSafeInteger(options.replicationFactor) && (options.replicationFactor > 0 || options.replicationFactor === -1))) {
    throw new FleetError('VALIDATION_FAILED', 'replicationFactor must be a positive integer or -1', { detail: { option: 'replicationFactor' } });
  }
  if (options.logLevel !== undefined && !logLevels.includes(options.logLevel)) {
    throw new FleetError('VALIDATION_FAILED', `logLevel must be one of ${logLevels.join(', ')}`, { detail: { option: 'logLevel' } });
  }
}
