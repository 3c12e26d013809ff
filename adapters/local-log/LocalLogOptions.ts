/**
 * Options of createLocalLog, with units and defaults, and the reports it makes about damaged data.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import { MAX_RECORD_BYTES_LIMIT } from './recordFrame.ts';

/** A damaged region found in a segment file. */
export interface CorruptionReport {
  topic: string;
  partition: number;
  /** Absolute path of the segment file. */
  file: string;
  /** Byte position in the file where the damage starts. */
  position: number;
  /** Offset of the first record that could not be read (everything from here on is gone or unreadable). */
  offset: number;
  /**
   * truncated: the file ends inside a record (crash mid-write); length: a record length field is
   * impossible; checksum: a record's crc32 does not match; sequence: a record carries the wrong offset;
   * header: the segment header was never completely written.
   */
  reason: 'truncated' | 'length' | 'checksum' | 'sequence' | 'header';
  /**
   * cut: found while opening the last segment of a partition, which was truncated at `position`
   * (records from `offset` on are dropped and their offsets will be reused by new appends).
   * halted: found while reading an older segment; nothing is changed on disk and delivery of that
   * partition stops until an operator repairs or removes the segment.
   */
  action: 'cut' | 'halted';
  /** Bytes removed from the file (cut only). */
  bytesCut: number;
}

export interface ConsumerErrorContext {
  group: string;
  topic: string;
  partition?: number;
  /**
   * onBatch: the handler rejected (the batch is redelivered after redeliveryBackoffMs); onAssign,
   * onRevoke: the callback threw (the rebalance goes on); read: the partition could not be read
   * (damaged data stops its delivery; other I/O errors are retried after redeliveryBackoffMs);
   * retention: deleting consumed segments failed (retried after the next commit).
   */
  stage: 'onBatch' | 'onAssign' | 'onRevoke' | 'read' | 'retention';
}

export interface LocalLogOptions {
  /** Data directory; created when missing. One process at a time (a LOCK file enforces it). */
  dir: string;
  /** Time source for record timestamps, the group-commit linger and redelivery backoff. Default: system clock. */
  clock?: Clock;
  /** A partition rolls to a new segment file once the current one would exceed this many bytes. Default 16 MiB, minimum 1 KiB. */
  segmentBytes?: number;
  /**
   * Milliseconds an idle log waits before writing, to gather more appends into one durable write per
   * partition. Default 0: write at the next event-loop turn; appends arriving while a flush round is
   * in flight are batched into the next round anyway (group commit, FlushRounds.ts), so the linger
   * only helps producers that trickle in.
   */
  groupCommitMs?: number;
  /**
   * Bytes the flush rounds' journal (RoundJournal.ts) grows to before the segments it covers are
   * synced and it starts over. With a journal a round is one durable write, whatever number of
   * partitions it writes; 0 turns it off (one durable write per partition per round). Default 32 MiB.
   */
  journalBytes?: number;
  /**
   * A round of at most 32 KiB of an idle log writes its journal entry in the event loop's thread,
   * as long as the disk answers such writes within this many microseconds (the fastest of every 8);
   * beyond it (a slow disk) they go to the thread pool for the next 10 s. Larger rounds, and rounds
   * queued behind a write in flight (under load), always go through the thread pool, so the loop goes
   * on reading while the disk writes. 0: always the thread pool. Default 2000.
   */
  inlineWriteMaxMicros?: number;
  /** Largest key + value of one record, in bytes. Default 1 MiB, at most 64 MiB. */
  maxRecordBytes?: number;
  /** Bytes read from a segment per read syscall when consuming. Default 1 MiB, minimum 4 KiB. */
  readChunkBytes?: number;
  /**
   * When no consumer group has committed on a topic, keep all its segments (true, default) or delete
   * every segment but the one being written (false: the topic holds only recent data).
   */
  retainUncommittedSegments?: boolean;
  /** Delay before a batch whose onBatch rejected is delivered again, in ms. Default 1000. */
  redeliveryBackoffMs?: number;
  /** Damaged data found on open or read. Default: a warning on stderr. */
  onCorruption?(report: CorruptionReport): void;
  /** Errors raised by consumer callbacks or reads. Default: printed on stderr. */
  onConsumerError?(error: unknown, context: ConsumerErrorContext): void;
}

export type ResolvedLocalLogOptions = Required<LocalLogOptions>;

export const LOCAL_LOG_DEFAULTS = {
  segmentBytes: 16 * 1024 * 1024,
  groupCommitMs: 0,
  journalBytes: 32 * 1024 * 1024,
  inlineWriteMaxMicros: 2000,
  maxRecordBytes: 1024 * 1024,
  readChunkBytes: 1024 * 1024,
  retainUncommittedSegments: true,
  redeliveryBackoffMs: 1000,
} as const;

function defaultOnCorruption(report: CorruptionReport): void {
  console.warn(`local-log: ${report.reason} damage in ${report.file} at byte ${report.position} (offset ${report.offset}), ${report.action}` +
    (report.action === 'cut' ? `: ${report.bytesCut} bytes removed` : ': delivery of this partition stopped'));
}

function defaultOnConsumerError(error: unknown, context: ConsumerErrorContext): void {
  console.error(`local-log: consumer group ${context.group} ${context.stage} failed on ${context.topic}` +
    (context.partition === undefined ? '' : `/${context.partition}`), error);
}

function integerOption(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new FleetError('VALIDATION_FAILED', `local log option ${name} must be an integer from ${min} to ${max}`, { detail: { option: name, value } });
  }
  return value;
}

export function resolveLocalLogOptions(options: LocalLogOptions): ResolvedLocalLogOptions {
  if (options === null || typeof options !== 'object') throw new FleetError('VALIDATION_FAILED', 'local log options must be an object');
  if (typeof options.dir !== 'string' || options.dir.length === 0) {
    throw new FleetError('VALIDATION_FAILED', 'local log option dir must be a non-empty path', { detail: { option: 'dir' } });
  }
  if (options.retainUncommittedSegments !== undefined && typeof options.retainUncommittedSegments !== 'boolean') {
    throw new FleetError('VALIDATION_FAILED', 'local log option retainUncommittedSegments must be a boolean', { detail: { option: 'retainUncommittedSegments' } });
  }
  const d = LOCAL_LOG_DEFAULTS;
  return {
    dir: options.dir,
    clock: options.clock ?? systemClock,
    segmentBytes: integerOption('segmentBytes', options.segmentBytes, d.segmentBytes, 1024, 2 ** 40),
    groupCommitMs: integerOption('groupCommitMs', options.groupCommitMs, d.groupCommitMs, 0, 60_000),
    journalBytes: integerOption('journalBytes', options.journalBytes, d.journalBytes, 0, 2 ** 40),
    inlineWriteMaxMicros: integerOption('inlineWriteMaxMicros', options.inlineWriteMaxMicros, d.inlineWriteMaxMicros, 0, 1_000_000),
    maxRecordBytes: integerOption('maxRecordBytes', options.maxRecordBytes, d.maxRecordBytes, 1, MAX_RECORD_BYTES_LIMIT),
    readChunkBytes: integerOption('readChunkBytes', options.readChunkBytes, d.readChunkBytes, 4096, 256 * 1024 * 1024),
    retainUncommittedSegments: options.retainUncommittedSegments ?? d.retainUncommittedSegments,
    redeliveryBackoffMs: integerOption('redeliveryBackoffMs', options.redeliveryBackoffMs, d.redeliveryBackoffMs, 0, 3_600_000),
    onCorruption: options.onCorruption ?? defaultOnCorruption,
    onConsumerError: options.onConsumerError ?? defaultOnConsumerError,
  };
}
