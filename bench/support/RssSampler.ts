/**
 * Peak resident set size of this process, sampled on a timer and kept per named phase. RSS (not
 * heap) because chDB's memory lives outside the V8 heap.
 */
export class RssSampler {
  readonly peaks = new Map<string, number>();
  #phase = 'start';
  #timer: NodeJS.Timeout | undefined;

  constructor(intervalMs = 50) {
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), intervalMs);
    this.#timer.unref();
  }

  /** Samples are credited to `name` from now on. */
  phase(name: string): void {
    this.#sample();
    this.#phase = name;
    this.#sample();
  }

  get peak(): number {
    this.#sample();
    return Math.max(...this.peaks.values());
  }

  stop(): void {
    if (this.#timer === undefined) return;
    this.#sample();
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  report(format: (bytes: number) => string): string {
    return [...this.peaks].map(([name, bytes]) => `${name} ${format(bytes)}`).join(', ');
  }

  #sample(): void {
    const rss = process.memoryUsage.rss();
    if (rss > (this.peaks.get(this.#phase) ?? 0)) this.peaks.set(this.#phase, rss);
  }
}
