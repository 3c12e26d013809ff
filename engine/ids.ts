/**
 * Registry ids: short, URL-safe and unguessable. 22 base62 characters carry ~131 bits drawn from
 * crypto.randomBytes, so an id leaks nothing and cannot be enumerated. Base62 rather than base64url
 * because an id starting with `-` reads as an option on a command line.
 */
import { randomBytes } from 'node:crypto';
import { ID_PATTERN } from '../schemas/registry.ts';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Largest multiple of 62 below 256: bytes at or above it are dropped so every character is uniform. */
const LIMIT = 248;
const ID_RE = new RegExp(ID_PATTERN);

export const ID_LENGTH = 22;

/** `length` uniformly random base62 characters (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = randomBytes(length + 8);
    for (let i = 0; i < bytes.length && out.length < length; i++) {
      const b = bytes[i];
      if (b < LIMIT) out += ALPHABET[b % 62];
    }
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
