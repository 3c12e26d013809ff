/**
 * The flush rounds' journal: one durable write per round, however many partitions the round writes.
 *
 * Without it every partition in a round needs its own durable write (one file each), and on this
 * kind of disk each costs the process 0.1–0.3 ms of CPU, mostly in the kernel: a fleet's uplinks,
 * spread over every partition by their keys, pay that once per partition per round. With it, a
 * round writes each partition's records to its segment file without waiting for the disk (the page
 * cache), and the same bytes, with where they go, to this file in one O_DSYNC write. The round is
 * durable when that write returns: after a crash, open() writes every journaled entry back into its
 * segment before the segments are verified (recoverPartition.ts), so nothing acknowledged is lost.
 *
 * The journal is bounded: once it holds `limitBytes`, the next round first makes the segments it
 * covers durable themselves (one fdatasync per segment written since) and starts a new epoch,
 * writing from the start of the file again. Entries of an older epoch are never replayed.
 *
 *   file    header: magic "FSJN" | u32 version (1) | u32 epoch | u32 crc32(first 12 bytes)
 *   entry   u32 bodyLength | u32 crc32(body) | body
 *   body    u32 epoch | u32 partition | u32 baseLo | u32 baseHi | u32 positionLo | u32 positionHi
 *           | u32 topicLength | topic (UTF-8) | bytes
 *
 * `bytes` are written at `position` of segment `base` of that topic's partition. Replay stops at the
 * first entry that is incomplete, fails its checksum or belongs to another epoch: everything after
 * it was never acknowledged. A segment that no longer exists was removed by retention (a journaled
 * segment's directory entry was made durable when it was created), so its entries are skipped.
 */
import { closeSync, constants, existsSync, fdatasyncSync, fsyncSync, openSync, readSync, statSync, writeSync, writevSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { FleetError } from '../../engine/kernel/errors.ts';
import { syncDirSync } from '../syncDir.ts';
import type { LocalLogStats } from './LocalLogStats.ts';
import { segmentFileName, type Segment } from './Segment.ts';

export const JOURNAL_FILE = 'journal';
const MAGIC = 0x4e4a5346; // "FSJN" read as u32 LE
const VERSION = 1;
const HEADER_BYTES = 16;
const ENTRY_HEADER_BYTES = 8;
const BODY_FIXED_BYTES = 28;
const TWO_32 = 0x1_0000_0000;
/**
 * The file is grown ahead of the writes, with zeros made durable, this much at a time: a durable write
 * that overwrites allocated blocks does not have to commit the file's new size and blocks with it, and
 * measured here takes ~160 µs where an appending one takes ~250–300 µs.
 */
const GROW_BYTES = 1024 * 1024;
const ZEROS = Buffer.alloc(GROW_BYTES);
/** Once writes in the loop's thread are found slower than allowed, the rounds of this long go through the thread pool. */
const INLINE_BACKOFF_MS = 10_000;
/**
 * Writes in the loop's thread judged together: the fastest of them is the disk's own time. Each one's
 * time alone also holds the time the thread waited for a CPU (on a busy 2-vCPU VM the same write took
 * 0.4–8 ms while its disk answered in ~0.2 ms), which says nothing about the disk.
 */
const INLINE_WINDOW = 8;
/**
 * Largest round written in the loop's thread: a trickle of appends (a command, a lone uplink), and the
 * rounds of a hundred connections with one QoS 1 publish in flight each (7–23 KB). Such a write takes
 * ~0.1–0.2 ms of a disk like this one's; handing it to the pool costs two thread wake-ups, CPU that
 * a busy machine's other threads are waiting for (bench/mqtt.bench.ts QoS 1, 100 clients: 48.9–62.0k
 * against 41.0–55.6k msg/s with a 4 KiB bound, other threads 1.2–1.7 against 3.1–5.5 µs per message;
 * bench/local-log.bench.ts, 64 producers, ~9 KB rounds: 242–249k against 206–227k rec/s). Larger
 * rounds (1000 producers in flight: ~138 KB) go through the thread pool, which also makes the next
 * rounds follow one another (records arrive while one is in flight), so the loop reads and admits
 * while the disk writes.
 */
const INLINE_MAX_BYTES = 32 * 1024;
/** Larger than any round can write (a round carries at most a partition's queue per partition). */
const MAX_BODY_BYTES = 1024 * 1024 * 1024;

const DSYNC: number | undefined = constants.O_DSYNC;
const FLAGS = constants.O_RDWR | constants.O_CREAT | (DSYNC ?? 0);

type JournalStats = Pick<LocalLogStats, 'journalWrites' | 'inlineWrites' | 'checkpoints' | 'fsyncs'>;

interface Entry {
  head: Buffer;
  buffers: Buffer[];
}

function header(epoch: number): Buffer {
  const buf = Buffer.alloc(HEADER_BYTES);
  buf.writeUInt32LE(MAGIC, 0);
  buf.writeUInt32LE(VERSION, 4);
  buf.writeUInt32LE(epoch, 8);
  buf.writeUInt32LE(crc32(buf.subarray(0, 12)), 12);
  return buf;
}

function corrupt(file: string, why: string): FleetError {
  return new FleetError('CORRUPT_LOG', `${file} is not a local log journal (${why}); remove it or restore the data dir`, { detail: { file } });
}

export class RoundJournal {
  readonly #file: string;
  readonly #limitBytes: number;
  readonly #stats: JournalStats;
  /** Opened at the first write: a log that fails to open after the journal was replayed leaves nothing open. */
  #handle: Promise<FileHandle> | undefined;
  #epoch: number;
  #position = HEADER_BYTES;
  /** Bytes of the file known written and durable: writes below this only overwrite. */
  #allocated: number;
  #round: Entry[] = [];
  #roundBytes = 0;
  #roundDone: PromiseWithResolvers<void> | undefined;
  /** A round's write is in flight (in the thread pool, or growing the file first). */
  #writing = false;
  /** Segments written through the journal since the last checkpoint: they hold data only the journal has made durable. */
  readonly #covered = new Set<Segment>();
  #failed: FleetError | undefined;
  /** Longest a write in the loop's thread may take (µs) before writes go back to the thread pool; 0: never in the loop's thread. */
  readonly #inlineMaxMicros: number;
  /** performance.now() before which every write goes through the thread pool (writes in the loop's thread were too slow). */
  #inlineBlockedUntil = 0;
  /** Writes made in the loop's thread in the current window, and the fastest of them (µs). */
  #inlineSamples = 0;
  #inlineFastest = Number.POSITIVE_INFINITY;

  private constructor(file: string, epoch: number, limitBytes: number, stats: JournalStats, allocated: number, inlineMaxMicros: number) {
    this.#file = file;
    this.#inlineMaxMicros = inlineMaxMicros;
    this.#allocated = allocated;
    this.#epoch = epoch;
    this.#limitBytes = limitBytes;
    this.#stats = stats;
  }

  #open(): Promise<FileHandle> {
    this.#handle ??= open(this.#file, FLAGS);
    return this.#handle;
  }

  /**
   * Replays the journal of `dir` (writing every entry of the current epoch back into its segment
   * and syncing those segments), then starts a new epoch. Call before the partitions are recovered.
   */
  static open(dir: string, limitBytes: number, stats: JournalStats, inlineMaxMicros: number): RoundJournal {
    const file = join(dir, JOURNAL_FILE);
    const existed = existsSync(file);
    const epoch = existed ? replay(dir, file) : 0;
    const next = (epoch + 1) % TWO_32;
    // Kept at its size when it exists: rewriting the start of a file of known length is cheaper than
    // extending it, and the new epoch tells the old entries apart.
    const fd = openSync(file, existed ? 'r+' : 'w');
    try {
      writeSync(fd, header(next), 0, HEADER_BYTES, 0);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (!existed) syncDirSync(dir);
    return new RoundJournal(file, next, limitBytes, stats, statSync(file).size, inlineMaxMicros);
  }

  /** A round's write is in flight: records queued now wait for it. */
  get writing(): boolean {
    return this.#writing;
  }

  /** The journal has reached its bound: call checkpoint() before the next round. */
  get full(): boolean {
    return this.#position >= this.#limitBytes;
  }

  /**
   * Adds one partition's write to the current round. `buffers` go to `position` of `segment`; the
   * promise resolves once the round's journal write (commit()) is durable.
   */
  add(topic: string, partition: number, segment: Segment, position: number, buffers: Buffer[], bytes: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    const topicBytes = Buffer.byteLength(topic);
    const head = Buffer.allocUnsafe(ENTRY_HEADER_BYTES + BODY_FIXED_BYTES + topicBytes);
    const base = segment.baseOffset;
    head.writeUInt32LE(BODY_FIXED_BYTES + topicBytes + bytes, 0);
    head.writeUInt32LE(this.#epoch, 8);
    head.writeUInt32LE(partition, 12);
    head.writeUInt32LE(base % TWO_32, 16);
    head.writeUInt32LE(Math.floor(base / TWO_32), 20);
    head.writeUInt32LE(position % TWO_32, 24);
    head.writeUInt32LE(Math.floor(position / TWO_32), 28);
    head.writeUInt32LE(topicBytes, 32);
    head.write(topic, 36, 'utf8');
    let crc = crc32(head.subarray(ENTRY_HEADER_BYTES));
    for (const b of buffers) crc = crc32(b, crc);
    head.writeUInt32LE(crc, 4);
    this.#round.push({ head, buffers });
    this.#roundBytes += head.length + bytes;
    this.#covered.add(segment);
    this.#roundDone ??= Promise.withResolvers<void>();
    return this.#roundDone.promise;
  }

  /**
   * Writes the round's entries in one durable write; resolves (and settles their add()s) when done.
   *
   * `idle`: none of the round's records waited for a journal write in flight. A small round (at most
   * INLINE_MAX_BYTES) is then written in the loop's thread, while the disk answers within the allowed
   * time: handing one write to the thread pool costs two thread wake-ups, a pool thread's and then
   * the loop's (an append to an idle log: p50 0.17–0.32 against 0.22–0.38 ms, bench/local-log.bench.ts;
   * see INLINE_MAX_BYTES for rounds under load). Larger rounds, and rounds queued behind a write in
   * flight, go through the pool: the loop reads and admits the next round's records while the disk
   * writes this one.
   */
  async commit(idle = false): Promise<void> {
    const done = this.#roundDone;
    if (!done) return;
    const entries = this.#round;
    const bytes = this.#roundBytes;
    this.#round = [];
    this.#roundBytes = 0;
    this.#roundDone = undefined;
    const buffers: Buffer[] = [];
    for (const entry of entries) buffers.push(entry.head, ...entry.buffers);
    this.#writing = true;
    try {
      if (this.#failed) throw this.#failed;
      const handle = await this.#open();
      await this.#growFor(handle, this.#position + bytes);
      let bytesWritten: number;
      if (idle && bytes <= INLINE_MAX_BYTES && this.#inlineMaxMicros > 0 && performance.now() >= this.#inlineBlockedUntil) {
        bytesWritten = this.#writeInline(handle.fd, buffers);
      } else {
        ({ bytesWritten } = await handle.writev(buffers, this.#position));
        if (DSYNC === undefined) await handle.datasync();
      }
      if (bytesWritten !== bytes) throw new Error(`short write to ${this.#file}: ${bytesWritten} of ${bytes} bytes`);
      this.#position += bytes;
      this.#stats.journalWrites++;
      this.#stats.fsyncs++;
      this.#writing = false;
      done.resolve();
    } catch (error) {
      // What reached the file is unknown: refuse further rounds; reopening replays what is whole.
      this.#failed ??= new FleetError('UNAVAILABLE', `writing the log journal failed; reopen the log to recover`, { cause: error, retriable: false });
      this.#writing = false;
      done.reject(this.#failed);
    }
  }

  /**
   * The round's durable write in this thread. When even the fastest of INLINE_WINDOW such writes took
   * longer than allowed (a slow disk), the writes of the next INLINE_BACKOFF_MS go to the thread pool,
   * then they are tried again.
   */
  #writeInline(fd: number, buffers: Buffer[]): number {
    const started = performance.now();
    const written = writevSync(fd, buffers, this.#position);
    if (DSYNC === undefined) fdatasyncSync(fd);
    const finished = performance.now();
    this.#stats.inlineWrites++;
    this.#inlineFastest = Math.min(this.#inlineFastest, (finished - started) * 1000);
    if (++this.#inlineSamples === INLINE_WINDOW) {
      if (this.#inlineFastest > this.#inlineMaxMicros) this.#inlineBlockedUntil = finished + INLINE_BACKOFF_MS;
      this.#inlineSamples = 0;
      this.#inlineFastest = Number.POSITIVE_INFINITY;
    }
    return written;
  }

  /** Makes the file at least `end` bytes long (and durable), in GROW_BYTES steps of zeros. */
  async #growFor(handle: FileHandle, end: number): Promise<void> {
    if (end <= this.#allocated) return;
    // Ahead by GROW_BYTES, but not past the bound (a round that crosses it grows the file by itself).
    const target = Math.max(end, Math.min(this.#allocated + GROW_BYTES, this.#limitBytes));
    while (this.#allocated < target) {
      const n = Math.min(GROW_BYTES, target - this.#allocated);
      const { bytesWritten } = await handle.write(ZEROS, 0, n, this.#allocated);
      if (bytesWritten !== n) throw new Error(`short write to ${this.#file}: ${bytesWritten} of ${n} bytes`);
      if (DSYNC === undefined) await handle.datasync();
      this.#allocated += n;
    }
  }

  /** `segment` was made durable by its partition (it is being sealed): a checkpoint need not sync it. */
  synced(segment: Segment): void {
    this.#covered.delete(segment);
  }

  /**
   * Makes every segment written through the journal durable by itself, then starts a new epoch:
   * the entries written so far are never replayed again. Call between rounds.
   */
  async checkpoint(): Promise<void> {
    if (this.#failed) throw this.#failed;
    const segments = [...this.#covered].filter((s) => !s.deleted);
    this.#covered.clear();
    try {
      await Promise.all(segments.map((s) => s.sync()));
      this.#stats.fsyncs += segments.length + 1;
      const epoch = (this.#epoch + 1) % TWO_32;
      const handle = await this.#open();
      const buf = header(epoch);
      await handle.write(buf, 0, HEADER_BYTES, 0);
      if (DSYNC === undefined) await handle.datasync();
      this.#epoch = epoch;
      this.#position = HEADER_BYTES;
      this.#stats.checkpoints++;
    } catch (error) {
      this.#failed ??= new FleetError('UNAVAILABLE', `syncing the log's segments failed; reopen the log to recover`, { cause: error, retriable: false });
      throw this.#failed;
    }
  }

  /** Checkpoints (when nothing failed) and closes the file. */
  async close(): Promise<void> {
    try {
      if (!this.#failed) await this.checkpoint();
    } finally {
      if (this.#handle) await (await this.#handle).close();
    }
  }
}

/** Writes the current epoch's entries back into their segments; returns that epoch. */
function replay(dir: string, file: string): number {
  const fd = openSync(file, 'r');
  const touched = new Map<string, number>();
  try {
    const size = statSync(file).size;
    const head = Buffer.alloc(HEADER_BYTES);
    const n = readSync(fd, head, 0, HEADER_BYTES, 0);
    if (n < HEADER_BYTES) {
      // Created, but its first header never reached the disk: nothing was journaled in it.
      if (head.subarray(0, n).every((b) => b === 0)) return 0;
      throw corrupt(file, 'short header');
    }
    if (head.readUInt32LE(0) !== MAGIC || head.readUInt32LE(4) !== VERSION) throw corrupt(file, 'bad magic');
    if (head.readUInt32LE(12) !== crc32(head.subarray(0, 12))) throw corrupt(file, 'bad header checksum');
    const epoch = head.readUInt32LE(8);
    let position = HEADER_BYTES;
    const entryHead = Buffer.alloc(ENTRY_HEADER_BYTES);
    while (position + ENTRY_HEADER_BYTES <= size) {
      readSync(fd, entryHead, 0, ENTRY_HEADER_BYTES, position);
      const bodyLength = entryHead.readUInt32LE(0);
      if (bodyLength < BODY_FIXED_BYTES || bodyLength > MAX_BODY_BYTES || position + ENTRY_HEADER_BYTES + bodyLength > size) break;
      const body = Buffer.allocUnsafe(bodyLength);
      if (readSync(fd, body, 0, bodyLength, position + ENTRY_HEADER_BYTES) !== bodyLength) break;
      if (crc32(body) !== entryHead.readUInt32LE(4) || body.readUInt32LE(0) !== epoch) break;
      const partition = body.readUInt32LE(4);
      const base = body.readUInt32LE(8) + body.readUInt32LE(12) * TWO_32;
      const at = body.readUInt32LE(16) + body.readUInt32LE(20) * TWO_32;
      const topicLength = body.readUInt32LE(24);
      if (BODY_FIXED_BYTES + topicLength > bodyLength) break;
      const topic = body.toString('utf8', BODY_FIXED_BYTES, BODY_FIXED_BYTES + topicLength);
      const segment = join(dir, 'topics', topic, String(partition), segmentFileName(base));
      let target = touched.get(segment);
      if (target === undefined) {
        try {
          target = openSync(segment, 'r+');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
          target = -1;
        }
        touched.set(segment, target);
      }
      if (target >= 0) {
        const data = body.subarray(BODY_FIXED_BYTES + topicLength);
        if (writeSync(target, data, 0, data.length, at) !== data.length) throw new Error(`short write to ${segment}`);
      }
      position += ENTRY_HEADER_BYTES + bodyLength;
    }
    for (const target of touched.values()) if (target >= 0) fsyncSync(target);
    return epoch;
  } finally {
    for (const target of touched.values()) if (target >= 0) closeSync(target);
    closeSync(fd);
  }
}
