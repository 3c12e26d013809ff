/**
 * Golden conversion fixtures (test/fixtures/conversion/*.json): a script with recorded uplink bytes
 * and the states they decode to, and commands with the downlink bytes they encode to.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConversionScript } from '../../schemas/conversion.ts';

export interface UplinkCase {
  hex: string;
  fPort?: number;
  expect?: Record<string, unknown>;
  /** Absolute tolerance for numbers (float32 vectors). */
  tolerance?: number;
  error?: 'DECODE_FAILED';
  /** Expected error message, exactly. */
  reason?: string;
}

export interface DownlinkCase {
  command: Record<string, unknown>;
  hex?: string;
  error?: 'VALIDATION_FAILED';
  reason?: string;
}

export interface ConversionFixture {
  file: string;
  name: string;
  description: string;
  script: ConversionScript;
  /** Assets the script both senses and actuates: decode(encode(x)) must give x back. */
  roundTrip?: string[];
  uplinks: UplinkCase[];
  downlinks?: DownlinkCase[];
}

const dir = new URL('../fixtures/conversion/', import.meta.url).pathname;

export function loadConversionFixtures(): ConversionFixture[] {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
    .map((file) => ({ file, ...JSON.parse(readFileSync(join(dir, file), 'utf8')) }) as ConversionFixture);
}

export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new Error(`bad hex ${hex}`);
  return Uint8Array.from({ length: hex.length / 2 }, (_, i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16));
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Deep equality where numbers may differ by `tolerance`; returns the first difference, or undefined. */
export function difference(actual: unknown, expected: unknown, tolerance = 0, path = '$'): string | undefined {
  if (typeof expected === 'number' && typeof actual === 'number') {
    return Math.abs(actual - expected) <= tolerance || Object.is(actual, expected) ? undefined : `${path}: ${actual} ≠ ${expected}`;
  }
  if (typeof expected !== 'object' || expected === null || typeof actual !== 'object' || actual === null) {
    return Object.is(actual, expected) ? undefined : `${path}: ${JSON.stringify(actual)} ≠ ${JSON.stringify(expected)}`;
  }
  if (Array.isArray(expected) !== Array.isArray(actual)) return `${path}: array vs object`;
  const a = actual as Record<string, unknown>;
  const e = expected as Record<string, unknown>;
  const keys = new Set([...Object.keys(a), ...Object.keys(e)]);
  for (const key of keys) {
    if (!Object.hasOwn(a, key)) return `${path}.${key}: missing`;
    if (!Object.hasOwn(e, key)) return `${path}.${key}: unexpected ${JSON.stringify(a[key])}`;
    const d = difference(a[key], e[key], tolerance, `${path}.${key}`);
    if (d) return d;
  }
  return undefined;
}
