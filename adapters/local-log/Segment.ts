/**
 * One segment file of a partition: records from `baseOffset` on, named after that offset so the
 * directory listing alone orders the segments. Only the last segment of a partition is written.
 *
 * The written segment is opened with O_DSYNC where the platform has it: each write returns only
 * once its data (and the file size) is on stable storage, as write + fdatasync would — but in one
 * system call and one trip through libuv's thread pool instead of two, which is most of what a
 * flush of a few records costs the process. Without O_DSYNC (Windows) writes are followed by sync().
 */
import { constants, writevSync } from 'node:fs';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { SEGMENT_HEADER_BYTES } from './recordFrame.ts';

/** Bytes between sparse index entries: a seek scans at most about this much (or one append's chunk). */
export const INDEX_INTERVAL_BYTES = 64 * 1024;

const NAME = /^(\d{20})\.seg$/;

const DSYNC: number | undefined = constants.O_DSYNC;
const WRITE_FLAGS: string | number = DSYNC === undefined ? 'r+' : constants.O_RDWR | DSYNC;
const CREATE_FLAGS: string | number = DSYNC === undefined ? 'wx+' : constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | DSYNC;

export function segmentFileName(baseOffset: number): string {
  return `${String(baseOffset).padStart(20, '0')}.seg`;
}

export function parseSegmentFileName(name: string): number | undefined {
  const match = NAME.exec(name);
  if (!match) return undefined;
  const base = Number(match[1]);
  return Number.isSafeInteger(base) ? base : undefined;
}

export class Segment {
  readonly baseOffset: number;
  readonly file: string;
  /** Bytes known durable (fsynced); readers never look past this. */
  durableSize: number;
  /** Sparse index, ascending: offsets of some records and the byte positions of their frames. */
  readonly indexOffsets: number[] = [];
  readonly indexPositions: number[] = [];
  #handle: Promise<FileHandle> | undefined;
  /** The handle once open: what writeNow() writes through. */
  #opened: FileHandle | undefined;
  #flags: string | number;
  /** Opened with O_DSYNC; false for a log whose rounds make writes durable through their journal (RoundJournal.ts). */
  readonly #dsync: boolean;
  #reads = 0;
  #deleted = false;
  #closeWhenIdle: (() => void) | undefined;

  /** `durableWrites`: a writable segment's writes are durable as they return (O_DSYNC where available); else they go to the page cache and sync() makes them durable. */
  constructor(dir: string, baseOffset: number, durableSize: number, writable: boolean, durableWrites = true) {
    this.baseOffset = baseOffset;
    this.file = join(dir, segmentFileName(baseOffset));
    this.durableSize = durableSize;
    this.#dsync = writable && durableWrites && DSYNC !== undefined;
    this.#flags = !writable ? 'r' : durableWrites ? WRITE_FLAGS : 'r+';
  }

  /** Creates the file of a new segment (failing if it exists: offsets are never reused for a live file). */
  static create(dir: string, baseOffset: number, durableWrites = true): Segment {
    const segment = new Segment(dir, baseOffset, 0, true, durableWrites);
    segment.#handle = segment.#keep(open(segment.file, durableWrites ? CREATE_FLAGS : 'wx+'));
    return segment;
  }

  get deleted(): boolean {
    return this.#deleted;
  }

  #open(): Promise<FileHandle> {
    this.#handle ??= this.#keep(open(this.file, this.#flags));
    return this.#handle;
  }

  #keep(opening: Promise<FileHandle>): Promise<FileHandle> {
    const kept: Promise<FileHandle> = opening.then((handle) => {
      // not when close() came first: that closes this handle
      if (this.#handle !== undefined) this.#opened = handle;
      return handle;
    }, (error: unknown) => {
      // A failed open is not kept: the next read opens again (the error may not last).
      if (this.#handle === kept) this.#handle = undefined;
      throw error;
    });
    return kept;
  }

  /** Reads up to `length` bytes at file `position` into `buf` at `at`; returns the bytes read. */
  async read(buf: Buffer, at: number, length: number, position: number): Promise<number> {
    this.#reads++;
    try {
      const handle = await this.#open();
      let total = 0;
      while (total < length) {
        const { bytesRead } = await handle.read(buf, at + total, length - total, position + total);
        if (bytesRead === 0) break;
        total += bytesRead;
      }
      return total;
    } finally {
      this.#reads--;
      if (this.#reads === 0) this.#closeWhenIdle?.();
    }
  }

  /** Writes are durable once they resolve (O_DSYNC): no sync() needed after them. */
  get writesAreDurable(): boolean {
    return this.#dsync && this.#flags !== 'r';
  }

  /** Writes `buffers` contiguously at `position`. */
  async write(buffers: Buffer[], position: number): Promise<void> {
    const handle = await this.#open();
    let expected = 0;
    for (const b of buffers) expected += b.length;
    const { bytesWritten } = await handle.writev(buffers, position);
    if (bytesWritten !== expected) {
      // writev of a regular file only comes back short on errors such as a full disk
      throw new Error(`short write to ${this.file}: ${bytesWritten} of ${expected} bytes`);
    }
  }

  /**
   * Writes `buffers` at `position` at once, in this thread, when the file is open and its writes go
   * to the page cache (not O_DSYNC): a few µs of copying, where a trip through the thread pool costs
   * the event loop 10–70 µs under load. Returns false, having written nothing, otherwise.
   */
  writeNow(buffers: Buffer[], position: number): boolean {
    const handle = this.#opened;
    if (handle === undefined || this.writesAreDurable || this.#flags === 'r') return false;
    let expected = 0;
    for (const b of buffers) expected += b.length;
    const written = writevSync(handle.fd, buffers, position);
    if (written !== expected) throw new Error(`short write to ${this.file}: ${written} of ${expected} bytes`);
    return true;
  }

  /** fdatasync: the data and the file size are durable once this resolves. */
  async sync(): Promise<void> {
    await (await this.#open()).datasync();
  }

  addIndexEntry(offset: number, position: number): void {
    const n = this.indexPositions.length;
    const last = n === 0 ? SEGMENT_HEADER_BYTES : this.indexPositions[n - 1];
    if (position - last < INDEX_INTERVAL_BYTES) return;
    this.indexOffsets.push(offset);
    this.indexPositions.push(position);
  }

  /** An index entry at or before `offset`: where a scan for that offset may start. */
  lookup(offset: number): { offset: number; position: number } {
    const offsets = this.indexOffsets;
    let lo = 0;
    let hi = offsets.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (offsets[mid] <= offset) { found = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return found < 0 ? { offset: this.baseOffset, position: SEGMENT_HEADER_BYTES } : { offset: offsets[found], position: this.indexPositions[found] };
  }

  /** Closes the descriptor of a sealed segment when no read is in flight (the next read reopens it). */
  release(): void {
    if (this.#reads > 0 || this.#deleted || this.#flags !== 'r') return;
    void this.close().catch(() => undefined);
  }

  /** Marks a formerly written segment as sealed: it is only read from now on. */
  seal(): void {
    this.#flags = 'r';
    this.release();
  }

  /** Removes the file; the descriptor closes once reads in flight are done. */
  async delete(): Promise<void> {
    if (this.#deleted) return;
    this.#deleted = true;
    await unlink(this.file);
    if (this.#reads === 0) await this.close();
    else {
      await new Promise<void>((resolve) => { this.#closeWhenIdle = resolve; });
      await this.close();
    }
  }

  /** Closes the file if it is open; an open that failed (the file deleted under a read) leaves nothing to close. */
  async close(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    this.#opened = undefined;
    const opened = await handle?.catch(() => undefined);
    await opened?.close();
  }
}
