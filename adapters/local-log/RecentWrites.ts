/**
 * The bytes a partition wrote last, kept in memory after they became durable, so a consumer that
 * follows the end of the partition reads them from here instead of going back to the file.
 *
 * Why: a tailing consumer (the engine, the command pipeline, live streams) reads almost every record
 * right after its flush. From the file that is one more trip through libuv's thread pool per batch,
 * about as long as the durable write itself on a fast disk, and it sits between an append and the
 * command or state it carries. The buffers are the ones the flush wrote (never changed afterwards),
 * so holding them costs no copy; `limitBytes` bounds what is held per partition.
 */
import type { Segment } from './Segment.ts';

interface Written {
  /** File position of buf[0]. */
  position: number;
  buf: Buffer;
}

export class RecentWrites {
  readonly #limitBytes: number;
  #segment: Segment | undefined;
  #written: Written[] = [];
  /** Index of the oldest entry still held (entries before it were dropped). */
  #head = 0;
  #bytes = 0;

  constructor(limitBytes: number) {
    this.#limitBytes = limitBytes;
  }

  /** `bufs` were written contiguously at `position` of `segment` and are durable. */
  add(segment: Segment, position: number, bufs: readonly Buffer[]): void {
    if (this.#limitBytes === 0) return;
    if (segment !== this.#segment) this.clear(segment);
    let at = position;
    for (const buf of bufs) {
      this.#written.push({ position: at, buf });
      this.#bytes += buf.length;
      at += buf.length;
    }
    while (this.#bytes > this.#limitBytes && this.#head < this.#written.length - 1) {
      this.#bytes -= this.#written[this.#head].buf.length;
      this.#head++;
    }
    if (this.#head > 64 && this.#head * 2 > this.#written.length) {
      this.#written = this.#written.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * Copies the held bytes of `segment` from file position `position` on into target[at…], at most
   * `length` of them. Returns how many were copied, or -1 when that position is not held (read the
   * file instead).
   */
  read(segment: Segment, target: Buffer, at: number, length: number, position: number): number {
    if (segment !== this.#segment) return -1;
    const written = this.#written;
    if (this.#head >= written.length || position < written[this.#head].position) return -1;
    // newest first: a tailing reader asks for what was written last
    let i = written.length - 1;
    while (i > this.#head && written[i].position > position) i--;
    let copied = 0;
    for (; i < written.length && copied < length; i++) {
      const { position: start, buf } = written[i];
      const from = position + copied - start;
      if (from < 0 || from >= buf.length) {
        if (from < 0) break;
        continue;
      }
      copied += buf.copy(target, at + copied, from, Math.min(buf.length, from + length - copied));
    }
    return copied > 0 ? copied : -1;
  }

  /** Forgets everything held (the partition moved on to `segment`, or failed). */
  clear(segment?: Segment): void {
    this.#segment = segment;
    this.#written = [];
    this.#head = 0;
    this.#bytes = 0;
  }
}
