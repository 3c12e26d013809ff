/**
 * Duplicate readings of a batch (processUplink.ts): an item whose asset state repeats an earlier
 * item's asset at the same explicit `at` is the same reading sent twice.
 */

/**
 * The readings of a batch with an explicit `at`, by asset and time, and the item that holds each:
 * a later item with the same asset and time repeats it.
 */
export class BatchReadings {
  readonly #ts: number[] = [];
  readonly #assets: string[] = [];
  readonly #items: number[] = [];
  /**
   * By time, the readings at it; made only once a time comes that is not the latest so far. Until
   * then (the usual batch: items in time order) the readings at the latest time are the last ones.
   */
  #byTs: Map<number, number[]> | undefined;
  item = 0;

  /** The earlier item holding this asset at this time, or -1 (the current item holds it from now on). */
  claim(asset: string, ts: number): number {
    const times = this.#ts;
    const n = times.length;
    if (this.#byTs === undefined && (n === 0 || ts >= times[n - 1])) {
      for (let j = n - 1; j >= 0 && times[j] === ts; j--) if (this.#assets[j] === asset) return this.#items[j];
      return this.#add(asset, ts);
    }
    if (this.#byTs === undefined) {
      this.#byTs = new Map();
      for (let j = 0; j < n; j++) this.#index(j);
    }
    const at = this.#byTs.get(ts);
    if (at !== undefined) for (const j of at) if (this.#assets[j] === asset) return this.#items[j];
    return this.#add(asset, ts);
  }

  #add(asset: string, ts: number): -1 {
    this.#ts.push(ts);
    this.#assets.push(asset);
    this.#items.push(this.item);
    if (this.#byTs !== undefined) this.#index(this.#ts.length - 1);
    return -1;
  }

  #index(j: number): void {
    const ts = this.#ts[j];
    const at = this.#byTs!.get(ts);
    if (at === undefined) this.#byTs!.set(ts, [j]);
    else at.push(j);
  }
}
