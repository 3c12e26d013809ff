/**
 * Input checks of the Kafka log: everything a caller hands in is refused with VALIDATION_FAILED
 * before it reaches kafkajs (whose own checks throw untyped errors, or none).
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { CommitRequest, ConsumerOptions, ProducerRecord, TopicPartition } from '../../engine/ports/log.ts';
import type { KafkaLogOptions } from './createKafkaLog.ts';

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
  for (const field of ['lingerMs', 'maxWaitMs', 'redeliveryBackoffMs'] as const) {
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

export function validateRecords(records: ProducerRecord[]): void {
  if (!Array.isArray(records)) throw new FleetError('VALIDATION_FAILED', 'records must be an array');
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    if (typeof r !== 'object' || r === null) throw new FleetError('VALIDATION_FAILED', `record ${i} must be an object`, { detail: { index: i } });
    if (typeof r.key !== 'string') throw new FleetError('VALIDATION_FAILED', `record ${i}: key must be a string`, { detail: { index: i, field: 'key' } });
    if (!(r.value instanceof Uint8Array)) throw new FleetError('VALIDATION_FAILED', `record ${i}: value must be a Uint8Array`, { detail: { index: i, field: 'value' } });
    if (r.timestamp !== undefined && !(Number.isSafeInteger(r.timestamp) && r.timestamp >= 0)) {
      throw new FleetError('VALIDATION_FAILED', `record ${i}: timestamp must be epoch milliseconds`, { detail: { index: i, field: 'timestamp' } });
    }
  }
}

function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function isIndex(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

export function validateConsumerOptions(options: ConsumerOptions): void {
  if (typeof options !== 'object' || options === null) throw new FleetError('VALIDATION_FAILED', 'consumer options must be an object');
  if (!isName(options.group)) throw new FleetError('VALIDATION_FAILED', 'consumer group must be a non-empty string', { detail: { field: 'group' } });
  if (!Array.isArray(options.topics) || options.topics.length === 0 || !options.topics.every(isName)) {
    throw new FleetError('VALIDATION_FAILED', 'consumer topics must be a non-empty array of topic names', { detail: { field: 'topics' } });
  }
  if (typeof options.onBatch !== 'function') throw new FleetError('VALIDATION_FAILED', 'onBatch must be a function', { detail: { field: 'onBatch' } });
  if (options.maxBatchRecords !== undefined && !(isIndex(options.maxBatchRecords) && options.maxBatchRecords > 0)) {
    throw new FleetError('VALIDATION_FAILED', 'maxBatchRecords must be a positive integer', { detail: { field: 'maxBatchRecords' } });
  }
}

export function validatePartitions(partitions: TopicPartition[]): void {
  if (!Array.isArray(partitions) || !partitions.every((p) => typeof p === 'object' && p !== null && isName(p.topic) && isIndex(p.partition))) {
    throw new FleetError('VALIDATION_FAILED', 'partitions must be {topic, partition} with a non-negative integer partition');
  }
}

export function validateCommits(offsets: CommitRequest[]): void {
  validatePartitions(offsets);
  if (!offsets.every((o) => isIndex(o.offset))) {
    throw new FleetError('VALIDATION_FAILED', 'commit offsets must be non-negative integers');
  }
}
