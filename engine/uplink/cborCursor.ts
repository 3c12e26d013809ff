/**
 * A cursor over one CBOR item (RFC 8949) for envelopeReader.ts: heads, text, numbers, map keys,
 * storable JSON values, and skipping what the reader does not read. What cbor-x (native string
 * extraction, int64AsNumber, mapsAsObjects) reads, it reads the same way; the rest throws
 * FleetError('MALFORMED_PAYLOAD'):
 *
 * - any head length (a small integer or length written with a 2-, 4- or 8-byte argument), definite
 *   and indefinite-length arrays and maps; indefinite-length strings are refused, as cbor-x does;
 * - integers beyond 2^53 as the nearest float, as int64AsNumber does; float16, float32 and float64;
 * - text decoded as the WHATWG decoder does (invalid UTF-8 becomes U+FFFD, a leading BOM is kept),
 *   as cbor-x's native extractor does (which refuses a text head of 8 bytes after other text);
 * - map keys of text, numbers, true, false, null and undefined (JavaScript property names, a key
 *   `__proto__` renamed `__proto_`, as cbor-x does); any other key is refused, as cbor-x does;
 * - tags: only 55799 (self-described CBOR) and 64 on a byte string (as cbor-x's default encoder
 *   writes a Uint8Array) are read through; cbor-x reads others as its own extensions (records,
 *   packed and shared values, decimal fractions), which no envelope writer uses: refused;
 * - refused too, where cbor-x reads them: a map naming a key twice (cbor-x keeps the last; RFC 8949
 *   §5.6 leaves it to the reader, and readers of the log must not disagree on an envelope), 0xf8
 *   simple values (not well-formed below 32), and nesting deeper than MAX_JSON_DEPTH, in values the
 *   reader skips too. Counts are checked against the bytes left before anything is allocated.
 */
import { FleetError } from '../kernel/errors.ts';
import { MAX_JSON_DEPTH } from '../kernel/checkJsonValue.ts';

const EMPTY = Buffer.alloc(0);
let src: Buffer = EMPTY;
let pos = 0;
let end = 0;

const TWO_32 = 0x1_0000_0000;
const SELF_DESCRIBED = 55799;
const UINT8_ARRAY = 64;
/** The WHATWG decoder, as cbor-x's native extractor decodes text: U+FFFD for invalid bytes, BOM kept. */
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
const f32 = new Float32Array(1);
const f32Bytes = new Uint8Array(f32.buffer);
/** Typed arrays store in the platform's order; CBOR is big-endian. */
const littleEndian = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

export function fail(reason: string): never {
  throw new FleetError('MALFORMED_PAYLOAD', `uplink envelope: ${reason}`);
}

function truncated(): never {
  fail(`ends before its last item (at byte ${pos} of ${end})`);
}

/** Reads `bytes` from their start; release() drops them. */
export function begin(bytes: Uint8Array): void {
  src = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  pos = 0;
  end = bytes.length;
}

/** Refuses bytes after the item. */
export function finish(): void {
  if (pos !== end) fail(`${end - pos} bytes follow the envelope`);
}

export function release(): void {
  src = EMPTY;
}

function uint32At(p: number): number {
  return src[p] * 0x100_0000 + ((src[p + 1] << 16) | (src[p + 2] << 8) | src[p + 3]);
}

/** The argument of a head whose additional information is `info` (< 31), its bytes consumed. */
function argument(info: number): number {
  if (info < 24) return info;
  if (info > 27) fail(`additional information ${info} at byte ${pos - 1} is reserved or out of place`);
  const size = 1 << (info - 24);
  if (pos + size > end) truncated();
  let n = 0;
  // 64 bits as cbor-x's int64AsNumber rounds them: once, from the two halves.
  if (size === 8) n = uint32At(pos) * TWO_32 + uint32At(pos + 4);
  else for (let i = 0; i < size; i++) n = n * 256 + src[pos + i];
  pos += size;
  return n;
}

/**
 * Reads through tags 55799 (and 64 when `bytes`): 0 when there was none, 1 when there were (a tagged
 * undefined is no undefined to cbor-x but a Tag object), 2 when one was 64.
 */
function untag(bytes: boolean): number {
  let tagged = 0;
  for (let n = 0; pos < end && src[pos] >> 5 === 6; n++) {
    // cbor-x reads each tag a call deeper: a long run of them is nesting as deep.
    if (n >= MAX_JSON_DEPTH) fail(`nesting deeper than ${MAX_JSON_DEPTH} levels (of tags)`);
    const info = src[pos++] & 0x1f;
    const tag = info === 31 ? fail('a tag of indefinite length') : argument(info);
    if (tag === UINT8_ARRAY && bytes) tagged = 2;
    else if (tag === SELF_DESCRIBED) tagged ||= 1;
    else fail(`tag ${tag} is not read`);
  }
  if (pos >= end) truncated();
  return tagged;
}

/** Consumes an undefined (cbor-x reads an optional key given undefined as absent). */
export function isUndefined(): boolean {
  if (pos < end && src[pos] === 0xf7) {
    pos++;
    return true;
  }
  if (src[pos] === 0xf8) notWellFormed();
  return false;
}

/** RFC 8949 §3.3: not well-formed below 32 (cbor-x reads 0xf8 0x14 as false); above, no envelope value. */
function notWellFormed(): never {
  fail(`simple value 0xf8 at byte ${pos}`);
}

/** The count of a map (or array when `major` is 4), -1 when of indefinite length. */
export function open(major: 4 | 5, what: string): number {
  if (pos >= end || src[pos] >> 5 !== major) {
    untag(false);
    if (src[pos] >> 5 !== major) fail(`${what} must be ${major === 5 ? 'a map' : 'an array'}`);
  }
  const info = src[pos++] & 0x1f;
  if (info === 31) return -1;
  const n = argument(info);
  // An element takes a byte at least (a map entry two): checked before anything is allocated.
  if (n * (major === 5 ? 2 : 1) > end - pos) fail(`${what} declares ${n} elements, more than its ${end - pos} bytes can hold`);
  return n;
}

/** Whether a container opened with `n` (open) has no element after the first `i`; consumes a break. */
export function done(n: number, i: number): boolean {
  if (n >= 0) return i >= n;
  if (pos >= end) truncated();
  if (src[pos] !== 0xff) return false;
  pos++;
  return true;
}

function chars(n: number): string {
  if (n > end - pos) truncated();
  const start = pos;
  pos += n;
  for (let i = start; i < pos; i++) if (src[i] >= 0x80) return utf8.decode(src.subarray(start, pos));
  return src.toString('latin1', start, pos);
}

export function text(what: string): string {
  if (pos >= end) truncated();
  const b = src[pos];
  if (b >= 0x60 && b < 0x78) {
    pos++;
    return chars(b - 0x60);
  }
  untag(false);
  const info = src[pos] & 0x1f;
  if (src[pos] >> 5 !== 3) fail(`${what} must be a text string`);
  pos++;
  if (info === 31) fail(`${what}: a text string of indefinite length`);
  return chars(argument(info));
}

/** The length of a byte string (its bytes are next), read through tags 55799 and 64. */
export function byteString(what: string): number {
  const tagged = pos >= end || src[pos] >> 5 !== 2 ? untag(true) : 0;
  const info = src[pos] & 0x1f;
  // cbor-x reads tag 64 on anything else as an empty Uint8Array.
  if (src[pos] >> 5 !== 2) fail(tagged === 2 ? `${what}: tag 64 is not read on anything but a byte string` : `${what} must be a byte string`);
  pos++;
  if (info === 31) fail(`${what}: a byte string of indefinite length`);
  const n = argument(info);
  if (n > end - pos) truncated();
  return n;
}

/** Copies `n` bytes at the cursor into `into` and steps over them. */
export function copyBytes(into: Uint8Array, n: number): void {
  src.copy(into, 0, pos, pos + n);
  pos += n;
}

/** A float32 or float64 (the head consumed). */
function float(size: 4 | 8): number {
  if (pos + size > end) truncated();
  const bytes = size === 8 ? f64Bytes : f32Bytes;
  if (littleEndian) for (let i = 0; i < size; i++) bytes[size - 1 - i] = src[pos + i];
  else for (let i = 0; i < size; i++) bytes[i] = src[pos + i];
  pos += size;
  return size === 8 ? f64[0] : f32[0];
}

function float16(): number {
  if (pos + 2 > end) truncated();
  const half = (src[pos] << 8) | src[pos + 1];
  pos += 2;
  const exponent = (half >> 10) & 0x1f;
  const mantissa = half & 0x3ff;
  const abs = exponent === 0 ? mantissa / 0x100_0000 : exponent === 31 ? (mantissa === 0 ? Infinity : NaN) : (mantissa + 1024) * 2 ** (exponent - 25);
  return half & 0x8000 ? -abs : abs;
}

/** An integer (any head) or a float, or undefined when the item is of another kind (not consumed). */
function numeric(): number | undefined {
  const b = src[pos];
  if (b < 24) {
    pos++;
    return b;
  }
  const major = b >> 5;
  if (major <= 1) {
    pos++;
    const n = argument(b & 0x1f);
    return major === 0 ? n : -1 - n;
  }
  if (b === 0xf8) notWellFormed();
  if (b === 0xfb) return pos++, float(8);
  if (b === 0xfa) return pos++, float(4);
  if (b === 0xf9) return pos++, float16();
  return undefined;
}

export function number(what: string): number {
  if (pos >= end) truncated();
  const b = src[pos];
  // What writers write most: 64-bit times (numeric reads small integers first).
  if (b === 0x1b && pos + 9 <= end) {
    const n = uint32At(pos + 1) * TWO_32 + uint32At(pos + 5);
    pos += 9;
    return n;
  }
  if (b >> 5 === 6) untag(false);
  const n = numeric();
  if (n === undefined) fail(`${what} must be a number`);
  return n;
}

/** A map key as cbor-x names the property: text, or a number, true, false, null or undefined as text. */
export function key(): string {
  if (pos >= end) truncated();
  const tagged = src[pos] >> 5 === 6 && untag(false) !== 0;
  const b = src[pos];
  let name: string;
  if (b >> 5 === 3) name = text('a map key');
  else if (b >= 0xf4 && b <= 0xf7 && !(tagged && b === 0xf7)) {
    pos++;
    name = b === 0xf4 ? 'false' : b === 0xf5 ? 'true' : b === 0xf6 ? 'null' : 'undefined';
  } else {
    const n = numeric();
    if (n === undefined) fail(`a map key at byte ${pos} is not text, a number or a simple value`);
    name = String(n);
  }
  return name === '__proto__' ? '__proto_' : name;
}

/** Steps over a text string shorter than 24 bytes, if that is next, without building it. */
export function skipShortText(): boolean {
  if (pos >= end || src[pos] < 0x60 || src[pos] >= 0x78) return false;
  const n = src[pos++] - 0x60;
  if (n > end - pos) truncated();
  pos += n;
  return true;
}

/** Steps over a map key (see key). */
function skipKey(): void {
  if (!skipShortText()) key();
}

function deeper(depth: number): void {
  if (depth >= MAX_JSON_DEPTH) fail(`nesting deeper than ${MAX_JSON_DEPTH} levels`);
}

/**
 * Steps over one item that cbor-x would read (a value under a key the envelope does not have),
 * `depth` containers deep; nothing is built, nothing is allocated.
 */
export function skip(depth: number): void {
  if (pos >= end) truncated();
  const b = src[pos];
  const major = b >> 5;
  const info = b & 0x1f;
  if (major === 4 || major === 5) {
    deeper(depth);
    const n = open(major, 'a container');
    for (let i = 0; !done(n, i); i++) {
      if (major === 5) skipKey();
      skip(depth + 1);
    }
    return;
  }
  if (major === 6) {
    // Tags are read through here, so the item after them is no tag: one call deeper at most.
    if (untag(true) !== 2) return skip(depth);
    if (src[pos] >> 5 !== 2) fail(`at byte ${pos}: tag 64 is not read on anything but a byte string`);
    const n = byteString('a value tagged 64');
    pos += n;
    return;
  }
  pos++;
  if (major === 7) {
    if (info >= 20 && info <= 23) return;
    if (info >= 25 && info <= 27) {
      if (pos + (1 << (info - 24)) > end) truncated();
      pos += 1 << (info - 24);
      return;
    }
    pos--;
    if (b === 0xf8) notWellFormed();
    fail(b === 0xff ? `a break outside an indefinite-length item at byte ${pos}` : `simple value 0x${b.toString(16)} at byte ${pos}`);
  }
  if (info === 31) fail(`major type ${major} of indefinite length at byte ${pos - 1}`);
  const n = argument(info);
  if (major <= 1) return;
  if (n > end - pos) truncated();
  pos += n;
}

function jsonObject(depth: number): Record<string, unknown> {
  deeper(depth);
  const n = open(5, 'a map');
  const out: Record<string, unknown> = {};
  for (let i = 0; !done(n, i); i++) {
    const name = key();
    if (Object.hasOwn(out, name)) fail(`a map names ${JSON.stringify(name)} twice`);
    out[name] = json(depth + 1);
  }
  return out;
}

function jsonArray(depth: number): unknown[] {
  deeper(depth);
  const n = open(4, 'an array');
  if (n >= 0) {
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = json(depth + 1);
    return out;
  }
  const out: unknown[] = [];
  while (!done(-1, 0)) out.push(json(depth + 1));
  return out;
}

/** A storable JSON value (engine/kernel/checkJsonValue.ts), `depth` containers deep. */
export function json(depth: number): unknown {
  if (pos >= end) truncated();
  const b = src[pos];
  if (b === 0xfb) {
    pos++;
    const n = float(8);
    return Number.isFinite(n) ? n : nonFinite(n);
  }
  switch (b >> 5) {
    case 0:
      if (b < 24) {
        pos++;
        return b;
      }
      break;
    case 3:
      return text('a text string');
    case 4:
      return jsonArray(depth);
    case 5:
      return jsonObject(depth);
    case 6:
      untag(false);
      return json(depth);
    case 7:
      if (b === 0xf5 || b === 0xf4 || b === 0xf6) {
        pos++;
        return b === 0xf5 ? true : b === 0xf4 ? false : null;
      }
      break;
    default:
      break;
  }
  const n = numeric();
  if (n === undefined) fail(`the item at byte ${pos} is not a JSON value`);
  return Number.isFinite(n) ? n : nonFinite(n);
}

function nonFinite(n: number): never {
  fail(`number ${n} is not finite (NaN and ±Infinity cannot be stored)`);
}

/** Consumes `k` when the next bytes are exactly it (a key or literal as writers write it). */
export function matches(k: Uint8Array): boolean {
  const n = k.length;
  if (pos + n > end) return false;
  for (let i = 0; i < n; i++) if (src[pos + i] !== k[i]) return false;
  pos += n;
  return true;
}
