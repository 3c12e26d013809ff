/**
 * What the ClickHouse engine behind an executor can do, detected once at init (DESIGN.md §9:
 * storage per server capability). Column codecs, LowCardinality and TTL arrived in 19.x; 18.16
 * (the Debian server) has none of them. Exact float parsing is probed rather than inferred from
 * the version: 18.16 reads about one decimal in ten one ulp off, current releases read them
 * exactly, and a store that keeps only the Float64 must know which it is talking to.
 */
import type { SqlExecutor } from './SqlExecutor.ts';

export interface ServerCapabilities {
  /** `SELECT version()`, e.g. '18.16.1' or '26.7.1.1'. */
  version: string;
  /** CODEC, LowCardinality and TTL in CREATE TABLE (19.6 and later). */
  compactTypes: boolean;
  /** The text parser returns the nearest double for every shortest decimal JavaScript prints. */
  exactFloatText: boolean;
}

/** Column TTL and the codecs used here (Delta, DoubleDelta, Gorilla, ZSTD) are all in 19.6. */
export function compactTypesIn(version: string): boolean {
  const [major, minor] = version.split('.').map(Number);
  if (!Number.isInteger(major) || !Number.isInteger(minor)) return false;
  return major > 19 || (major === 19 && minor >= 6);
}

/**
 * Doubles chosen to trip an inexact parser: ends of the range, a subnormal, and values spread over
 * every exponent from a fixed xorshift sequence (so a failure is reproducible).
 */
export function floatProbeValues(count = 200): number[] {
  const out = [0.1, 0.3, 2.2250738585072014e-308, 5e-324, 1.7976931348623157e308, 0.30000000000000004, 123456.789];
  const view = new DataView(new ArrayBuffer(8));
  let x = 0x9e3779b97f4a7c15n;
  while (out.length < count) {
    x ^= (x << 13n) & 0xffffffffffffffffn;
    x ^= x >> 7n;
    x ^= (x << 17n) & 0xffffffffffffffffn;
    view.setBigUint64(0, x);
    const value = view.getFloat64(0);
    if (Number.isFinite(value)) out.push(value);
  }
  return out;
}

export function float64Bits(value: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  return view.getBigUint64(0).toString();
}

export async function detectCapabilities(executor: SqlExecutor): Promise<ServerCapabilities> {
  const [{ v }] = await executor.select('SELECT version() AS v');
  const version = String(v);
  const compactTypes = compactTypesIn(version);
  // Only a compact layout can drop the decimal copy of numbers; 18.16 is known inexact.
  let exactFloatText = false;
  if (compactTypes) {
    const values = floatProbeValues();
    const texts = values.map((value) => `'${String(value)}'`).join(', ');
    const [{ b }] = await executor.select(`SELECT arrayMap(x -> toString(reinterpretAsUInt64(toFloat64(x))), [${texts}]) AS b`);
    const bits = b as string[];
    exactFloatText = values.every((value, i) => bits[i] === float64Bits(value));
  }
  return { version, compactTypes, exactFloatText };
}
