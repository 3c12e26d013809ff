/**
 * Feeds of one kind of live item (stored states, alarm changes) that the MQTT edge follows: each
 * feed says whether it wants items now, and items are built and handed on only while one does.
 */
import { Listeners } from '../kernel/Listeners.ts';

export class LiveFeeds<T> {
  readonly #listeners: Listeners<readonly T[]>;
  readonly #wanted = new Set<() => boolean>();
  readonly #onChange: () => void;

  /** `onChange`: a feed came or went (the demand for live events may have changed). */
  constructor(onError: (error: unknown) => void, onChange: () => void) {
    this.#listeners = new Listeners<readonly T[]>(onError);
    this.#onChange = onChange;
  }

  /** Calls `listener` with the items of every batch read while `wanted()` is true. Returns the function that removes it. */
  follow(listener: (items: readonly T[]) => void, wanted: () => boolean): () => void {
    const feed = () => wanted();
    this.#wanted.add(feed);
    this.#onChange();
    const remove = this.#listeners.add((items) => { if (wanted()) listener(items); });
    return () => {
      this.#wanted.delete(feed);
      remove();
    };
  }

  /** Whether a feed wants items now. */
  wantedNow(): boolean {
    for (const wanted of this.#wanted) if (wanted()) return true;
    return false;
  }

  emit(items: readonly T[]): void {
    if (items.length > 0) this.#listeners.emit(items);
  }
}
