/** Counters of one open local log, read through LocalLog.stats(). Plain increments: free when unread. */
export interface LocalLogStats {
  /** append() calls that enqueued at least one record. */
  appendCalls: number;
  appendedRecords: number;
  /** Group-commit batches written (one write + fsync round per partition). */
  flushes: number;
  /**
   * Durable writes of log data: a partition's own (O_DSYNC write or fdatasync), a round's journal
   * write, and at a journal checkpoint each segment synced plus the journal's new header (directory
   * fsyncs of new segment files and the zeros the journal grows by ahead of its writes are not counted).
   */
  fsyncs: number;
  /** Rounds made durable by one journal write (RoundJournal.ts). */
  journalWrites: number;
  /** Of those, the ones written in the event loop's thread: small rounds of an idle log (RoundJournal.commit). */
  inlineWrites: number;
  /** Journal checkpoints: the segments it covered synced, a new epoch started. */
  checkpoints: number;
  bytesWritten: number;
  segmentsRolled: number;
  segmentsDeleted: number;
  /** Consumer reads served from a partition's latest writes held in memory (RecentWrites.ts). */
  readsFromMemory: number;
  /** Consumer reads that went to a segment file. */
  readsFromFile: number;
  /** Atomic rewrites of consumer group offset files. */
  offsetWrites: number;
  /** Damaged regions reported through onCorruption. */
  corruptions: number;
}

export function createLocalLogStats(): LocalLogStats {
  return { appendCalls: 0, appendedRecords: 0, flushes: 0, fsyncs: 0, journalWrites: 0, inlineWrites: 0, checkpoints: 0, bytesWritten: 0, segmentsRolled: 0, segmentsDeleted: 0, readsFromMemory: 0, readsFromFile: 0, offsetWrites: 0, corruptions: 0 };
}
