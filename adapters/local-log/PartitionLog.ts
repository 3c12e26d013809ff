/**
 * One partition of a topic: its segments, the group-commit write path and what readers may see.
 *
 * Offsets are assigned when a record is enqueued, so append returns positions in input order and a
 * partition's offsets are consecutive. Enqueued records wait for the partition's next flush: one
 * durable write (O_DSYNC, else write + fdatasync: Segment.ts) for everything queued since the
 * previous flush started (group commit).
 * Readers only see records below `durableOffset`, so a consumer never processes (and commits past)
 * a record that a crash could still take back.
 */
import { stat } from 'node:fs/promises';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { FlushRounds, RoundMember } from './FlushRounds.ts';
import type { ProducerRecord, RecordPosition } from '../../engine/ports/log.ts';
import type { LocalLogStats } from './LocalLogStats.ts';
import { frameBytes, SEGMENT_HEADER_BYTES, segmentHeader, writeFrame } from './recordFrame.ts';
import { RecentWrites } from './RecentWrites.ts';
import type { RoundJournal } from './RoundJournal.ts';
import { Segment } from './Segment.ts';
import { syncDir } from '../syncDir.ts';

/** Bytes of its latest writes a partition keeps for readers at its end (RecentWrites.ts). */
const RECENT_WRITE_BYTES = 256 * 1024;

interface Chunk {
  buf: Buffer;
  firstOffset: number;
  /** One past the chunk's last offset. */
  endOffset: number;
  /** This chunk starts a new segment whose base offset is firstOffset. */
  roll: boolean;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

export interface PartitionLogConfig {
  dir: string;
  topic: string;
  partition: number;
  segments: Segment[];
  nextOffset: number;
  segmentBytes: number;
  /** The log's flush rounds (FlushRounds.ts): when this partition's queued records are written. */
  rounds: FlushRounds;
  /** The rounds write through a journal: new segments are opened without O_DSYNC (Segment.ts). */
  journaled: boolean;
  stats: LocalLogStats;
  /** Called after a new segment became durable (retention may now drop older ones). */
  onRoll(): void;
}

export class PartitionLog implements RoundMember {
  readonly dir: string;
  readonly topic: string;
  readonly partition: number;
  /** Ascending by base offset; the last one is written. Retention removes from the front. */
  readonly segments: Segment[];
  /** Records below this offset are fsynced and visible to readers (the high watermark). */
  durableOffset: number;
  #nextOffset: number;
  #tailBytes: number;
  #tailHasRecords: boolean;
  #config: PartitionLogConfig;
  #pending: Chunk[] = [];
  #next: Deferred | undefined;
  #flushing: Promise<void> | undefined;
  /** Waiting for the next flush round. */
  #queued = false;
  #failed: FleetError | undefined;
  #listeners = new Set<() => void>();
  readonly #recent = new RecentWrites(RECENT_WRITE_BYTES);

  constructor(config: PartitionLogConfig) {
    this.#config = config;
    this.dir = config.dir;
    this.topic = config.topic;
    this.partition = config.partition;
    this.segments = config.segments;
    this.#nextOffset = config.nextOffset;
    this.durableOffset = config.nextOffset;
    const tail = this.segments[this.segments.length - 1];
    this.#tailBytes = tail ? tail.durableSize : 0;
    this.#tailHasRecords = tail ? tail.baseOffset < config.nextOffset : false;
  }

  /** Offset of the oldest record still on disk. */
  get startOffset(): number {
    return this.segments.length > 0 ? this.segments[0].baseOffset : this.durableOffset;
  }

  /**
   * Encodes records[indices[i]] into the partition's queue, writing their positions into `out`.
   * Resolves when they are durable. `keyBytes` holds each record's UTF-8 key length.
   */
  enqueue(records: ProducerRecord[], indices: number[], keyBytes: number[], timestamp: number, out: RecordPosition[]): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    const segmentBytes = this.#config.segmentBytes;
    let start = 0;
    let size = 0;
    let startsSegment = false;
    for (let i = 0; i < indices.length; i++) {
      const bytes = frameBytes(keyBytes[indices[i]], records[indices[i]].value.length);
      // A record bigger than a whole segment still goes in, alone, rather than being refused.
      const roll = this.#tailHasRecords ? this.#tailBytes + bytes > segmentBytes : this.segments.length === 0;
      if (roll) {
        if (i > start) this.#encode(records, indices, keyBytes, timestamp, out, start, i, size, startsSegment);
        start = i;
        size = 0;
        startsSegment = true;
        this.#tailBytes = SEGMENT_HEADER_BYTES;
      }
      size += bytes;
      this.#tailBytes += bytes;
      this.#tailHasRecords = true;
    }
    this.#encode(records, indices, keyBytes, timestamp, out, start, indices.length, size, startsSegment);
    this.#next ??= deferred();
    const done = this.#next.promise;
    this.#schedule();
    return done;
  }

  #encode(records: ProducerRecord[], indices: number[], keyBytes: number[], timestamp: number, out: RecordPosition[], from: number, to: number, size: number, roll: boolean): void {
    const buf = Buffer.allocUnsafe(size);
    const firstOffset = this.#nextOffset;
    let pos = 0;
    for (let i = from; i < to; i++) {
      const index = indices[i];
      const record = records[index];
      const offset = this.#nextOffset++;
      pos = writeFrame(buf, pos, offset, record.timestamp ?? timestamp, record.key, keyBytes[index], record.value);
      out[index] = { partition: this.partition, offset };
    }
    this.#pending.push({ buf, firstOffset, endOffset: this.#nextOffset, roll });
  }

  #schedule(): void {
    if (this.#flushing || this.#queued) return;
    this.#queued = true;
    this.#config.rounds.request(this);
  }

  /**
   * Called by the flush round this partition joined: writes what is queued, through the round's
   * journal when there is one and the records go to the segment being written; a roll (a new
   * segment file) is written and synced here, as without a journal.
   */
  runQueued(journal?: RoundJournal): Promise<void> {
    this.#queued = false;
    this.#startFlush(journal);
    return this.#flushing ?? Promise.resolve();
  }

  #startFlush(journal?: RoundJournal): void {
    if (this.#flushing || this.#pending.length === 0) return;
    const chunks = this.#pending;
    const done = this.#next!;
    this.#pending = [];
    this.#next = undefined;
    const journaled = journal !== undefined && this.segments.length > 0 && !chunks.some((c) => c.roll);
    this.#flushing = (journaled ? this.#flushJournaled(chunks, done, journal) : this.#flush(chunks, done, journal)).finally(() => {
      this.#flushing = undefined;
      // whatever queued up during that write goes into the next round, which starts without a linger
      if (this.#pending.length > 0) this.#schedule();
    });
  }

  /** Writes the chunks to the segment without waiting for the disk; durable once the round's journal write is. */
  async #flushJournaled(chunks: Chunk[], done: Deferred, journal: RoundJournal): Promise<void> {
    const { stats } = this.#config;
    try {
      const segment = this.segments[this.segments.length - 1];
      const position = segment.durableSize;
      const buffers: Buffer[] = [];
      let bytes = 0;
      for (const chunk of chunks) {
        segment.addIndexEntry(chunk.firstOffset, position + bytes);
        buffers.push(chunk.buf);
        bytes += chunk.buf.length;
      }
      const durable = journal.add(this.topic, this.partition, segment, position, buffers, bytes);
      if (segment.writeNow(buffers, position)) await durable;
      else await Promise.all([segment.write(buffers, position), durable]);
      stats.bytesWritten += bytes;
      this.#recent.add(segment, position, buffers);
      segment.durableSize = position + bytes;
      stats.flushes++;
      this.durableOffset = chunks[chunks.length - 1].endOffset;
      done.resolve();
      for (const listener of [...this.#listeners]) listener();
    } catch (error) {
      this.#fail(error, done);
    }
  }

  async #flush(chunks: Chunk[], done: Deferred, journal?: RoundJournal): Promise<void> {
    const { stats } = this.#config;
    try {
      let segment = this.segments[this.segments.length - 1];
      let position = segment ? segment.durableSize : 0;
      let buffers: Buffer[] = [];
      let bytes = 0;
      let rolled = false;
      const writeOut = async (): Promise<void> => {
        if (buffers.length === 0) return;
        await segment.write(buffers, position);
        if (!segment.writesAreDurable) await segment.sync();
        stats.fsyncs++;
        stats.bytesWritten += bytes;
        this.#recent.add(segment, position, buffers);
        position += bytes;
        segment.durableSize = position;
        buffers = [];
        bytes = 0;
      };
      for (const chunk of chunks) {
        if (chunk.roll) {
          await writeOut();
          if (segment && journal) {
            // Its journaled writes must be durable in the file itself before a newer segment exists:
            // recovery verifies only the last segment of a partition.
            await segment.sync();
            stats.fsyncs++;
            journal.synced(segment);
          }
          segment?.seal();
          segment = Segment.create(this.dir, chunk.firstOffset, !this.#config.journaled);
          this.segments.push(segment);
          position = 0;
          const header = segmentHeader();
          buffers.push(header);
          bytes += header.length;
          rolled = true;
          stats.segmentsRolled++;
        }
        segment.addIndexEntry(chunk.firstOffset, position + bytes);
        buffers.push(chunk.buf);
        bytes += chunk.buf.length;
      }
      await writeOut();
      // the new file's directory entry must be durable too, or a crash could lose the whole file
      if (rolled) await syncDir(this.dir);
      stats.flushes++;
      this.durableOffset = chunks[chunks.length - 1].endOffset;
      done.resolve();
      for (const listener of [...this.#listeners]) listener();
      if (rolled) this.#config.onRoll();
    } catch (error) {
      this.#fail(error, done);
    }
  }

  /**
   * After a failed write or fsync the file's content is unknown (the kernel may have dropped the
   * dirty pages): refuse further appends; reopening the log re-verifies the tail and cuts it.
   */
  #fail(error: unknown, done: Deferred): void {
    this.#failed = new FleetError('UNAVAILABLE', `writing ${this.topic}/${this.partition} failed; reopen the log to recover`, { cause: error, retriable: false });
    this.#recent.clear();
    done.reject(this.#failed);
    this.#next?.reject(this.#failed);
    this.#next = undefined;
    this.#pending = [];
  }

  /** Calls `listener` after every flush that made new records visible. Returns the unsubscribe. */
  onDurable(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => { this.#listeners.delete(listener); };
  }

  /**
   * Copies durable bytes of `segment` from `position` on out of memory when this partition wrote them
   * recently; -1 when it did not (read the file). See RecentWrites.read.
   */
  readRecent(segment: Segment, target: Buffer, at: number, length: number, position: number): number {
    const n = this.#recent.read(segment, target, at, length, position);
    if (n >= 0) this.#config.stats.readsFromMemory++;
    else this.#config.stats.readsFromFile++;
    return n;
  }

  /** The segment after `segment`, if one is readable yet. */
  segmentAfter(segment: Segment): Segment | undefined {
    const i = this.segments.indexOf(segment);
    return i >= 0 ? this.segments[i + 1] : this.segments[0];
  }

  /** The segment holding `offset` (or the first one, when the offset was deleted by retention). */
  segmentFor(offset: number): Segment | undefined {
    const segments = this.segments;
    let lo = 0;
    let hi = segments.length - 1;
    let found = 0;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (segments[mid].baseOffset <= offset) { found = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return segments[found];
  }

  /** Deletes sealed segments whose records all lie below `offset`. Returns how many were deleted. */
  async deleteBelow(offset: number): Promise<number> {
    let count = 0;
    while (this.segments.length > 1 && this.segments[1].baseOffset <= offset) {
      const segment = this.segments.shift()!;
      await segment.delete();
      this.#config.stats.segmentsDeleted++;
      count++;
    }
    return count;
  }

  /**
   * Deletes sealed segments last written before `cutoffMs` (epoch ms: the file's modification time,
   * which a sealed segment keeps from its last record). Returns how many were deleted.
   */
  async deleteOlderThan(cutoffMs: number): Promise<number> {
    let count = 0;
    while (this.segments.length > 1) {
      const segment = this.segments[0];
      const written = (await stat(segment.file).catch(() => undefined))?.mtimeMs;
      // Deleted meanwhile (by deleteBelow), or not old enough: the ones after it are younger.
      if (this.segments[0] !== segment || this.segments.length < 2) continue;
      if (written !== undefined && written >= cutoffMs) break;
      this.segments.shift();
      await segment.delete();
      this.#config.stats.segmentsDeleted++;
      count++;
    }
    return count;
  }

  /** Waits for queued records to be written (without waiting for a round). */
  async drain(): Promise<void> {
    while (this.#pending.length > 0 || this.#flushing) {
      if (!this.#flushing) this.#startFlush();
      await this.#flushing?.catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.drain();
    this.#failed ??= new FleetError('CLOSED', 'the log is closed');
    await Promise.all(this.segments.map((s) => s.close()));
  }
}
