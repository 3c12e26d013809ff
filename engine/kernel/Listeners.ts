/**
 * A set of listeners for one kind of event (stored states, say), so a producer built first is not
 * wired to consumers built after it through a late-bound callback. A listener that throws is reported
 * to `onError` and the others still run.
 */
export class Listeners<T> {
  readonly #listeners = new Set<(value: T) => void>();
  readonly #onError: (error: unknown) => void;

  constructor(onError: (error: unknown) => void = () => undefined) {
    this.#onError = onError;
  }

  get size(): number {
    return this.#listeners.size;
  }

  /** Returns the function that removes the listener. */
  add(listener: (value: T) => void): () => void {
    this.#listeners.add(listener);
    return () => { this.#listeners.delete(listener); };
  }

  emit(value: T): void {
    for (const listener of this.#listeners) {
      try {
        listener(value);
      } catch (error) {
        this.#onError(error);
      }
    }
  }
}
