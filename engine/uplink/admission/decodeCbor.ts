/**
 * Strict CBOR (RFC 8949) decoder for device bodies, which come from untrusted devices.
 *
 * Why not cbor-x here (it encodes our dead letters): a device body needs the nesting depth limited
 * while decoding, invalid UTF-8 refused instead of replaced, duplicate map keys refused, a
 * `__proto__` key kept as data (cbor-x renames it), non-text map keys visible (cbor-x turns 1 into
 * "1"), and 64-bit integers that fit a double returned as numbers.
 *
 * Output: plain JSON-like values (objects, arrays, strings, finite and non-finite numbers, booleans,
 * null) plus markers for what JSON cannot hold, which the caller turns into a precise rejection:
 * `undefined` (simple value 23), `bigint` (integers beyond ±(2^53−1)), `Uint8Array` (byte strings,
 * views into the input), CborTag, CborMap (a map with a non-text key), CborSimple.
 *
 * Thrown (CborDecodeError, whole body): not well-formed (truncated, reserved encodings, stray
 * break, trailing bytes), invalid UTF-8, duplicate map keys (code MALFORMED_CBOR), and nesting
 * deeper than `maxDepth` arrays, maps and tags (code TOO_DEEP).
 */
import { notJson } from '../../kernel/checkJsonValue.ts';

export class CborTag {
  readonly tag: number;
  readonly value: unknown;
  constructor(tag: number, value: unknown) {
    this.tag = tag;
    this.value = value;
  }

  get [notJson](): string {
    return this.tag === 2 || this.tag === 3
      ? `bignum (CBOR tag ${this.tag}) is outside ±(2^53−1) and cannot be stored exactly`
      : `CBOR tag ${this.tag} is not supported here`;
  }
}

/** A map with at least one key that is not a text string (JSON objects cannot hold it). */
export class CborMap {
  readonly entries: Array<[unknown, unknown]>;
  constructor(entries: Array<[unknown, unknown]>) {
    this.entries = entries;
  }

  get [notJson](): string {
    return 'a map with keys other than text strings is not a JSON object';
  }
}

/** A simple value other than false, true, null and undefined. */
export class CborSimple {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }

  get [notJson](): string {
    return `CBOR simple value ${this.value} is not a JSON value`;
  }
}

export class CborDecodeError extends Error {
  readonly code: 'MALFORMED_CBOR' | 'TOO_DEEP';
  constructor(code: 'MALFORMED_CBOR' | 'TOO_DEEP', message: string) {
    super(message);
    this.name = 'CborDecodeError';
    this.code = code;
  }
}

/** RFC 8949 §3.4.6 self-described CBOR: a magic number, not data. */
const TAG_SELF_DESCRIBED = 55799;
const BREAK = 0xff;
const EMPTY = new Uint8Array(0);

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const scratch = new DataView(new ArrayBuffer(8));

// Decoder state: one decode runs to completion synchronously, so module state is safe and saves
// a per-call allocation.
let src: Uint8Array = EMPTY;
let pos = 0;
let end = 0;
let depthLimit = 0;

function malformed(message: string): CborDecodeError {
  return new CborDecodeError('MALFORMED_CBOR', `${message} (at byte ${pos})`);
}

function need(n: number): void {
  if (n > end - pos) throw new CborDecodeError('MALFORMED_CBOR', `truncated: needs ${n} more byte(s) at byte ${pos}, ${end - pos} left`);
}

function float(bytes: number): number {
  need(bytes);
  for (let i = 0; i < bytes; i++) scratch.setUint8(i, src[pos + i]);
  pos += bytes;
  return bytes === 4 ? scratch.getFloat32(0) : scratch.getFloat64(0);
}

function half(): number {
  need(2);
  const h = (src[pos] << 8) | src[pos + 1];
  pos += 2;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  const sign = h & 0x8000 ? -1 : 1;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1024 + mant) * 2 ** (exp - 25);
}

function text(length: number): string {
  need(length);
  const start = pos;
  pos += length;
  // Short ASCII (asset names, most values) without a TextDecoder call.
  if (length <= 32) {
    let s = '';
    for (let i = start; i < pos; i++) {
      const c = src[i];
      if (c >= 0x80) return decodeUtf8(start);
      s += String.fromCharCode(c);
    }
    return s;
  }
  return decodeUtf8(start);
}

function decodeUtf8(start: number): string {
  try {
    return utf8.decode(src.subarray(start, pos));
  } catch {
    pos = start;
    throw malformed('text string is not valid UTF-8');
  }
}

function simple(ai: number): unknown {
  switch (ai) {
    case 20: return false;
    case 21: return true;
    case 22: return null;
    case 23: return undefined;
    case 24: {
      need(1);
      const v = src[pos++];
      if (v < 32) throw malformed(`simple value ${v} in two-byte form`);
      return new CborSimple(v);
    }
    case 25: return half();
    case 26: return float(4);
    case 27: return float(8);
    case 31: throw malformed('break outside an indefinite-length item');
    default:
      if (ai < 20) return new CborSimple(ai);
      throw malformed(`reserved additional information ${ai}`);
  }
}

function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (Object.hasOwn(obj, key)) throw malformed(`duplicate map key "${key}"`);
  // A plain assignment of "__proto__" would replace the prototype instead of storing data.
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** Reads `count` pairs (or pairs up to a break when count < 0) into an object, or a CborMap. */
function map(count: number, depth: number): unknown {
  const obj: Record<string, unknown> = {};
  let entries: Array<[unknown, unknown]> | undefined;
  for (let i = 0; count < 0 ? !atBreak() : i < count; i++) {
    const key = item(depth);
    const value = item(depth);
    if (entries === undefined && typeof key === 'string') {
      setKey(obj, key, value);
      continue;
    }
    if (entries === undefined) entries = Object.entries(obj);
    for (const [k] of entries) if (k === key) throw malformed(`duplicate map key ${String(key)}`);
    entries.push([key, value]);
  }
  return entries === undefined ? obj : new CborMap(entries);
}

function atBreak(): boolean {
  need(1);
  if (src[pos] !== BREAK) return false;
  pos++;
  return true;
}

function chunks(major: number): unknown {
  let s = '';
  const parts: Uint8Array[] = [];
  while (!atBreak()) {
    const ib = src[pos];
    if (ib >> 5 !== major || (ib & 31) === 31) throw malformed('indefinite-length string chunk of the wrong type');
    const chunk = item(0);
    if (major === 3) s += chunk as string;
    else parts.push(chunk as Uint8Array);
  }
  if (major === 3) return s;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

function item(depth: number): unknown {
  need(1);
  const ib = src[pos++];
  const major = ib >> 5;
  const ai = ib & 31;
  if (major === 7) return simple(ai);
  let arg: number;
  if (ai < 24) {
    arg = ai;
  } else if (ai === 24) {
    need(1);
    arg = src[pos++];
  } else if (ai === 25) {
    need(2);
    arg = (src[pos] << 8) | src[pos + 1];
    pos += 2;
  } else if (ai === 26) {
    need(4);
    arg = src[pos] * 0x1000000 + ((src[pos + 1] << 16) | (src[pos + 2] << 8) | src[pos + 3]);
    pos += 4;
  } else if (ai === 27) {
    need(8);
    const hi = src[pos] * 0x1000000 + ((src[pos + 1] << 16) | (src[pos + 2] << 8) | src[pos + 3]);
    const lo = src[pos + 4] * 0x1000000 + ((src[pos + 5] << 16) | (src[pos + 6] << 8) | src[pos + 7]);
    pos += 8;
    arg = hi * 0x100000000 + lo;
    if (hi > 0x1fffff) {
      // Beyond 2^53: exact only as a bigint. As a length it cannot fit any input.
      if (major === 0) return (BigInt(hi) << 32n) | BigInt(lo);
      if (major === 1) return -1n - ((BigInt(hi) << 32n) | BigInt(lo));
      if (major !== 6) need(arg);
    }
  } else if (ai === 31) {
    return indefinite(major, depth);
  } else {
    throw malformed(`reserved additional information ${ai}`);
  }
  switch (major) {
    case 0:
      return arg;
    case 1:
      return arg === 0x1fffffffffffff ? -(2n ** 53n) : -1 - arg;
    case 2:
      need(arg);
      return src.subarray(pos, (pos += arg));
    case 3:
      return text(arg);
    case 4: {
      if (depth >= depthLimit) throw tooDeep();
      if (arg > end - pos) need(arg); // every element takes at least one byte
      const a = new Array(arg);
      for (let i = 0; i < arg; i++) a[i] = item(depth + 1);
      return a;
    }
    case 5:
      if (depth >= depthLimit) throw tooDeep();
      if (arg > (end - pos) / 2) need(arg * 2);
      return map(arg, depth + 1);
    default: {
      if (depth >= depthLimit) throw tooDeep();
      const value = item(depth + 1);
      return arg === TAG_SELF_DESCRIBED ? value : new CborTag(arg, value);
    }
  }
}

function indefinite(major: number, depth: number): unknown {
  switch (major) {
    case 2:
    case 3:
      return chunks(major);
    case 4: {
      if (depth >= depthLimit) throw tooDeep();
      const a: unknown[] = [];
      while (!atBreak()) a.push(item(depth + 1));
      return a;
    }
    case 5:
      if (depth >= depthLimit) throw tooDeep();
      return map(-1, depth + 1);
    default:
      throw malformed(`indefinite length is not allowed for major type ${major}`);
  }
}

function tooDeep(): CborDecodeError {
  return new CborDecodeError('TOO_DEEP', `nesting deeper than ${depthLimit} levels (at byte ${pos - 1})`);
}

/**
 * Decodes exactly one CBOR data item filling `bytes`. `maxDepth` bounds nested arrays, maps and
 * tags (a top-level map is level 1). Throws CborDecodeError.
 */
export function decodeCbor(bytes: Uint8Array, maxDepth: number): unknown {
  src = bytes;
  pos = 0;
  end = bytes.length;
  depthLimit = maxDepth;
  try {
    if (end === 0) throw new CborDecodeError('MALFORMED_CBOR', 'empty body');
    const value = item(0);
    if (pos !== end) throw malformed(`${end - pos} trailing byte(s) after the data item`);
    return value;
  } finally {
    src = EMPTY;
  }
}
