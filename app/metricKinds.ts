/** The kinds of metric app/metrics.ts and app/metricsWatch.ts make. */
import { Counter, Gauge, type Registry } from 'prom-client';

/** Counters mirroring a total the engine keeps itself, read at scrape time. */
export function mirroredCounter(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name, help, registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

/** A gauge read at scrape time. */
export function liveGauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({ name, help, registers: [registry], collect() { this.set(read()); } });
}

/** Children of a labelled metric, cached by key: no label hashing per increment. */
export function children<T>(make: (...values: string[]) => T): (...values: string[]) => T {
  const cache = new Map<string, T>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = cache.get(key);
    if (child === undefined) cache.set(key, child = make(...values));
    return child;
  };
}
