/** Counters of one open local log, read through LocalLog.stats(). Plain increments: free when unread. */
export interface LocalLogStats {
  /** append() calls that enqueued at least one record. */
  appendCalls: number;
  appendedRecords: number;
  /** Group-commit batches written (one write + fsync round per partition). */
  flushes: number;
  /** fsyncs of segment data (directory fsyncs of new segment files are not counted). */
  fsyncs: number;
  bytesWritten: number;
  segmentsRolled: number;
  segmentsDeleted: number;
  /** Atomic rewrites of consumer group offset files. */
  offsetWrites: number;
  /** Damaged regions reported through onCorruption. */
  corruptions: number;
}

export function createLocalLogStats(): LocalLogStats {
  return { appendCalls: 0, appendedRecords: 0, flushes: 0, fsyncs: 0, bytesWritten: 0, segmentsRolled: 0, segmentsDeleted: 0, offsetWrites: 0, corruptions: 0 };
}
