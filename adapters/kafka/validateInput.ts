/**
 * Input checks of the Kafka log's calls (its options: KafkaLogOptions.ts): everything a caller hands
 * in is refused with VALIDATION_FAILED before it reaches kafkajs (whose own checks throw untyped
 * errors, or none).
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { CommitRequest, ConsumerOptions, ProducerRecord, TopicPartition } from '../../engine/ports/log.ts';

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
  if (options.prefer !== undefined && options.prefer !== 'latency' && options.prefer !== 'throughput') {
    throw new FleetError('VALIDATION_FAILED', "prefer must be 'latency' or 'throughput'", { detail: { field: 'prefer' } });
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
