/**
 * Per-partition completion watermark. Records of one partition finish out of order (different
 * devices run concurrently); the committable offset is one past the longest prefix of finished
 * records, so a commit never skips a record whose states are not yet in the store.
 */
export class OffsetTracker {
  /** Offsets handed out and not yet finished, in offset order. */
  #pending: number[] = [];
  #head = 0;
  #done = new Set<number>();
  /** Next offset to read once everything before it is finished. */
  #watermark: number;
  #committed: number;

  constructor(startOffset: number) {
    this.#watermark = startOffset;
    this.#committed = startOffset;
  }

  get inFlight(): number {
    return this.#pending.length - this.#head;
  }

  get watermark(): number {
    return this.#watermark;
  }

  /** Offsets must be started in increasing order. */
  start(offset: number): void {
    if (this.inFlight === 0) this.#watermark = offset;
    this.#pending.push(offset);
  }

  finish(offset: number): void {
    this.#done.add(offset);
    while (this.#head < this.#pending.length && this.#done.has(this.#pending[this.#head])) {
      const finished = this.#pending[this.#head++];
      this.#done.delete(finished);
      this.#watermark = finished + 1;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#head);
      this.#head = 0;
    }
  }

  /** The offset to commit when it moved since the last call, else undefined. */
  takeCommit(): number | undefined {
    if (this.#watermark === this.#committed) return undefined;
    this.#committed = this.#watermark;
    return this.#watermark;
  }

  /** The offset last taken was not committed: the next takeCommit hands out the watermark again. */
  commitFailed(): void {
    this.#committed = -1;
  }
}
