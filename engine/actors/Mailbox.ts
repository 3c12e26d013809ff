/**
 * Bounded FIFO of one actor. Overflow policy: `offer` refuses (returns false) and the caller awaits
 * `space()`, which pushes the wait back to the source (the log consumer stops fetching that partition).
 */
export class Mailbox<T> {
  readonly capacity: number;
  #items: (T | undefined)[];
  #head = 0;
  #size = 0;
  #spaceWaiters: (() => void)[] = [];

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('mailbox capacity must be a positive integer');
    this.capacity = capacity;
    this.#items = new Array(Math.min(capacity, 16));
  }

  get size(): number {
    return this.#size;
  }

  offer(item: T): boolean {
    if (this.#size >= this.capacity) return false;
    if (this.#size === this.#items.length) this.#grow();
    this.#items[(this.#head + this.#size) % this.#items.length] = item;
    this.#size++;
    return true;
  }

  take(): T | undefined {
    if (this.#size === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) % this.#items.length;
    this.#size--;
    if (this.#spaceWaiters.length > 0) this.#wakeOne();
    return item;
  }

  /** Resolves once at least one slot is free. */
  space(): Promise<void> {
    if (this.#size < this.capacity) return Promise.resolve();
    return new Promise((resolve) => this.#spaceWaiters.push(resolve));
  }

  #wakeOne(): void {
    const waiter = this.#spaceWaiters.shift();
    waiter?.();
  }

  #grow(): void {
    const next = new Array<T | undefined>(Math.min(this.capacity, this.#items.length * 2));
    for (let i = 0; i < this.#size; i++) next[i] = this.#items[(this.#head + i) % this.#items.length];
    this.#items = next;
    this.#head = 0;
  }
}
