/**
 * Sequential reader of one partition for one consumer: reads big chunks (readChunkBytes per read
 * syscall) and cuts them into records, keeping the unread rest for the next call, so consuming
 * costs one syscall per chunk, not per record. Values are views of the chunk, not copies.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { LogRecord } from '../../engine/ports/log.ts';
import type { CorruptionReport } from './LocalLogOptions.ts';
import type { PartitionLog } from './PartitionLog.ts';
import { checkFrame, FRAME_BAD_CRC, FRAME_HEADER_BYTES, FRAME_INCOMPLETE, frameKey, frameOffset, frameSizeAt, frameTimestamp, frameValue, SEGMENT_HEADER_BYTES } from './recordFrame.ts';
import type { Segment } from './Segment.ts';

const EMPTY = Buffer.alloc(0);

export class PartitionReader {
  #log: PartitionLog;
  #offset: number;
  #segment: Segment | undefined;
  /** Unread bytes are #buf[#bufPos, #bufEnd); #buf[#bufPos] sits at file position #pos. */
  #buf: Buffer = EMPTY;
  #bufPos = 0;
  #bufEnd = 0;
  #pos = 0;
  #chunkBytes: number;
  #report: (report: CorruptionReport) => void;
  /** Damage met after some good records: those are returned first, the error on the next read. */
  #damage: FleetError | undefined;

  constructor(log: PartitionLog, offset: number, chunkBytes: number, report: (report: CorruptionReport) => void) {
    this.#log = log;
    this.#offset = offset;
    this.#chunkBytes = chunkBytes;
    this.#report = report;
  }

  /** Offset of the next record read() returns. */
  get offset(): number {
    return this.#offset;
  }

  /** True when durable records wait beyond the reader's offset. */
  get hasMore(): boolean {
    return this.#offset < this.#log.durableOffset;
  }

  /** Up to `max` records from the reader's offset on; empty when none is durable yet. */
  async read(max: number): Promise<LogRecord[]> {
    if (this.#damage) throw this.#damage;
    const out: LogRecord[] = [];
    try {
      await this.#fill(out, max);
    } catch (error) {
      if (out.length === 0) throw error;
      this.#damage = error as FleetError;
    }
    return out;
  }

  async #fill(out: LogRecord[], max: number): Promise<void> {
    const log = this.#log;
    while (out.length < max && this.#offset < log.durableOffset) {
      let segment = this.#segment;
      if (segment === undefined || segment.deleted) {
        this.#seek();
        if (this.#segment === undefined) break;
        continue;
      }
      this.#parse(segment, out, max);
      if (out.length >= max) break;
      const leftover = this.#bufEnd - this.#bufPos;
      const readFrom = this.#pos + leftover;
      if (readFrom >= segment.durableSize) {
        // durable data always ends on a frame boundary: a partial frame there is damage
        if (leftover > 0) throw this.#corrupt(segment, this.#pos, leftover >= FRAME_HEADER_BYTES ? 'length' : 'truncated');
        const next = log.segmentAfter(segment);
        if (next === undefined) break;
        segment.release(); // sealed and read through: no need to hold its descriptor
        segment = this.#segment = next;
        this.#pos = SEGMENT_HEADER_BYTES;
        this.#buf = EMPTY;
        this.#bufPos = this.#bufEnd = 0;
        continue;
      }
      const need = leftover >= FRAME_HEADER_BYTES ? frameSizeAt(this.#buf, this.#bufPos) : 0;
      const size = Math.min(segment.durableSize - this.#pos, Math.max(this.#chunkBytes, need));
      const buf = Buffer.allocUnsafe(size);
      this.#buf.copy(buf, 0, this.#bufPos, this.#bufEnd);
      let n = log.readRecent(segment, buf, leftover, size - leftover, readFrom);
      if (n >= 0) {
        this.#buf = buf;
        this.#bufPos = 0;
        this.#bufEnd = leftover + n;
        continue;
      }
      try {
        n = await segment.read(buf, leftover, size - leftover, readFrom);
      } catch (error) {
        // retention may delete the file between the check above and the read: find the new start
        if (segment.deleted) { this.#segment = undefined; continue; }
        throw error;
      }
      if (n === 0) {
        if (segment.deleted) { this.#segment = undefined; continue; }
        throw this.#corrupt(segment, readFrom, 'truncated');
      }
      this.#buf = buf;
      this.#bufPos = 0;
      this.#bufEnd = leftover + n;
    }
  }

  #parse(segment: Segment, out: LogRecord[], max: number): void {
    const { topic, partition } = this.#log;
    const buf = this.#buf;
    const end = this.#bufEnd;
    const start = this.#bufPos;
    let p = start;
    while (out.length < max && p < end) {
      const size = checkFrame(buf, p, end);
      if (size === FRAME_INCOMPLETE) break;
      const position = this.#pos + (p - start);
      if (size < 0) throw this.#corrupt(segment, position, size === FRAME_BAD_CRC ? 'checksum' : 'length');
      const offset = frameOffset(buf, p);
      if (offset >= this.#offset) {
        if (offset !== this.#offset) throw this.#corrupt(segment, position, 'sequence');
        segment.addIndexEntry(offset, position);
        out.push({ topic, partition, offset, key: frameKey(buf, p), value: frameValue(buf, p, size), timestamp: frameTimestamp(buf, p) });
        this.#offset++;
      }
      p += size;
    }
    this.#pos += p - start;
    this.#bufPos = p;
  }

  /** Positions the reader at its offset (or at the oldest record, if retention removed that offset). */
  #seek(): void {
    const log = this.#log;
    if (this.#offset < log.startOffset) this.#offset = log.startOffset;
    const segment = log.segmentFor(this.#offset);
    this.#segment = segment;
    this.#pos = segment ? segment.lookup(this.#offset).position : SEGMENT_HEADER_BYTES;
    this.#buf = EMPTY;
    this.#bufPos = this.#bufEnd = 0;
  }

  #corrupt(segment: Segment, position: number, reason: CorruptionReport['reason']): FleetError {
    const { topic, partition } = this.#log;
    this.#report({ topic, partition, file: segment.file, position, offset: this.#offset, reason, action: 'halted', bytesCut: 0 });
    return new FleetError('CORRUPT_LOG', `${segment.file}: ${reason} damage at byte ${position} (offset ${this.#offset})`, { detail: { file: segment.file, position, offset: this.#offset } });
  }
}
