/**
 * Registry ids: short, URL-safe and unguessable. 22 base62 characters carry ~131 bits drawn from
 * crypto.randomBytes, so an id leaks nothing and cannot be enumerated. Base62 rather than base64url
 * because an id starting with `-` reads as an option on a command line.
 */
import { randomFillSync } from 'node:crypto';
import { ID_PATTERN } from '../../schemas/registry.ts';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Largest multiple of 62 below 256: bytes at or above it are dropped so every character is uniform. */
const LIMIT = 248;
const ID_RE = new RegExp(ID_PATTERN);

export const ID_LENGTH = 22;

/**
 * Random bytes are drawn from a pool refilled 4 KiB at a time: one call into the CSPRNG serves ~180
 * ids, where a call per id was a measurable share of an uplink's cost at the edge. Bytes are used
 * once and never reused.
 */
const pool = new Uint8Array(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++];
}

/** `length` uniformly random base62 characters (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < LIMIT) out += ALPHABET[b % 62];
  }
  return out;
}

export function newId(): string {
  return randomBase62(ID_LENGTH);
}

/** Whether a string from outside has the shape of a registry id (checked before any query). */
export function isId(value: unknown): value is string {
  return typeof value === 'string' && ID_RE.test(value);
}
