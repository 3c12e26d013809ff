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

/**
 * Uplink ids: 16 upper-case hex digits of a 64-bit number, the receive time in ms (top 44 bits,
 * good until year 2527) then a 12-bit process tag drawn at start and an 8-bit count within the
 * millisecond. Time-ordered and mostly constant below the time, so a store can keep the id as the
 * receive time it already holds plus a few bits that compress to nothing, where 22 random
 * characters cost ~11 bytes on every state row. The id is unique per device where it must be (the
 * idempotency key of the states of one device): two edges tagging the same device's uplinks in the
 * same millisecond collide with odds 1 in 4096.
 */
const UPLINK_TAG = (randomByte() << 4) | (randomByte() & 0xf);
let uplinkMs = -1;
let uplinkCount = 0;

/** The high half's hex digits (character codes) for the 4.096 s it stays the same. */
let uplinkHi = -1;
let h0 = 0, h1 = 0, h2 = 0, h3 = 0, h4 = 0, h5 = 0, h6 = 0, h7 = 0;
const HEX = Array.from('0123456789ABCDEF', (c) => c.charCodeAt(0));

export function newUplinkId(receivedAt: number): string {
  if (!Number.isSafeInteger(receivedAt) || receivedAt < 2 ** 36 || receivedAt >= 2 ** 44) return newId();
  uplinkCount = receivedAt === uplinkMs ? (uplinkCount + 1) & 0xff : 0;
  uplinkMs = receivedAt;
  const low = (UPLINK_TAG << 8) | uplinkCount;
  // Two exact 32-bit halves: the 64-bit value does not fit a double.
  const hi = Math.floor(receivedAt / 2 ** 12);
  const lo = ((receivedAt % 2 ** 12) * 2 ** 20 + low) >>> 0;
  if (hi !== uplinkHi) {
    uplinkHi = hi;
    h0 = HEX[hi >>> 28]; h1 = HEX[(hi >>> 24) & 15]; h2 = HEX[(hi >>> 20) & 15]; h3 = HEX[(hi >>> 16) & 15];
    h4 = HEX[(hi >>> 12) & 15]; h5 = HEX[(hi >>> 8) & 15]; h6 = HEX[(hi >>> 4) & 15]; h7 = HEX[hi & 15];
  }
  // One flat string from the 16 codes: joining the digits with + made a rope of several pieces
  // per uplink, flattened again when the id was written.
  return String.fromCharCode(h0, h1, h2, h3, h4, h5, h6, h7,
    HEX[lo >>> 28], HEX[(lo >>> 24) & 15], HEX[(lo >>> 20) & 15], HEX[(lo >>> 16) & 15],
    HEX[(lo >>> 12) & 15], HEX[(lo >>> 8) & 15], HEX[(lo >>> 4) & 15], HEX[lo & 15]);
}
