/**
 * The uplink envelope read back by hand: every record the engine consumes is decoded once, and
 * cbor-x building a generic map that a compiled schema then walks cost several times what the
 * fixed shape envelopeWriter.ts writes needs.
 *
 * Reads exactly that shape: a definite-length map with text keys in the schema's order, integers,
 * float64s, byte and text strings with definite lengths. Anything else (another key order, an
 * unknown key, a tag, a float16/32, indefinite lengths, invalid UTF-8, a value the schema or
 * envelope.ts's checks refuse, trailing or missing bytes) returns undefined, and the caller decodes
 * with cbor-x, which then decides what the input becomes, error messages included. So this reader
 * only ever returns what the cbor-x path would have returned for the same bytes (test/engine/uplink/envelope.test.ts
 * compares the two on random and on hostile input).
 */
import type { AdmittedUplink, NetworkMeta, UplinkEnvelope } from '../../schemas/messages.ts';
import { MAX_JSON_DEPTH } from '../kernel/checkJsonValue.ts';

/** Thrown (and caught below) when the input leaves the envelope's shape. */
const NOT_PLAIN = Symbol('not plain');

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const float = new Float64Array(1);
const floatBytes = new Uint8Array(float.buffer);
/** Float64Array stores in the platform's order; CBOR is big-endian. */
const littleEndian = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

const EMPTY = Buffer.alloc(0);
let src: Buffer = EMPTY;
let pos = 0;
let end = 0;

/**
 * Bodies are copied (the input is a view into what the log may reuse) into slices of a shared
 * block, as Buffer.allocUnsafe does for small buffers: a Uint8Array of its own costs an
 * allocation outside the heap per uplink, several times the rest of the decoding.
 */
const POOL_SIZE = 16 * 1024;
const POOLED_MAX = 1024;
let pool = new ArrayBuffer(POOL_SIZE);
let poolUsed = 0;

function copyBody(n: number): Uint8Array {
  if (n > POOLED_MAX) return new Uint8Array(n);
  if (poolUsed + n > POOL_SIZE) {
    pool = new ArrayBuffer(POOL_SIZE);
    poolUsed = 0;
  }
  const body = new Uint8Array(pool, poolUsed, n);
  // Keep slices 8-byte aligned, as Buffer's pool does.
  poolUsed += (n + 7) & ~7;
  return body;
}

/** The CBOR text string of an ASCII `key` shorter than 24 bytes. */
function keyBytes(key: string): Uint8Array {
  return Uint8Array.of(0x60 | key.length, ...Buffer.from(key, 'latin1'));
}

const K = {
  id: keyBytes('id'),
  channel: keyBytes('channel'),
  contentType: keyBytes('contentType'),
  deviceId: keyBytes('deviceId'),
  asset: keyBytes('asset'),
  network: keyBytes('network'),
  networkId: keyBytes('networkId'),
  devEui: keyBytes('devEui'),
  fPort: keyBytes('fPort'),
  receivedAt: keyBytes('receivedAt'),
  format: keyBytes('format'),
  body: keyBytes('body'),
  admitted: keyBytes('admitted'),
  states: keyBytes('states'),
  dropped: keyBytes('dropped'),
};

/** Consumes `key` when the next bytes are exactly its encoding. */
function hasKey(key: Uint8Array): boolean {
  const n = key.length;
  if (pos + n > end) return false;
  for (let i = 0; i < n; i++) if (src[pos + i] !== key[i]) return false;
  pos += n;
  return true;
}

function expectKey(key: Uint8Array): void {
  if (!hasKey(key)) throw NOT_PLAIN;
}

function uint32At(p: number): number {
  return src[p] * 0x100_0000 + ((src[p + 1] << 16) | (src[p + 2] << 8) | src[p + 3]);
}

/** The argument of a head of major type `major` up to 32 bits (lengths, counts). */
function length(major: number): number {
  if (pos >= end) throw NOT_PLAIN;
  const b = src[pos++];
  if (b >> 5 !== major) throw NOT_PLAIN;
  const info = b & 0x1f;
  let n: number;
  if (info < 24) return info;
  if (info === 24) {
    if (pos + 1 > end) throw NOT_PLAIN;
    n = src[pos];
    pos += 1;
  } else if (info === 25) {
    if (pos + 2 > end) throw NOT_PLAIN;
    n = (src[pos] << 8) | src[pos + 1];
    pos += 2;
  } else if (info === 26) {
    if (pos + 4 > end) throw NOT_PLAIN;
    n = uint32At(pos);
    pos += 4;
  } else throw NOT_PLAIN;
  // Every element takes at least a byte: a count beyond what is left is a lie, left to cbor-x.
  if (n > end - pos) throw NOT_PLAIN;
  return n;
}

function text(): string {
  const n = length(3);
  const start = pos;
  pos += n;
  for (let i = start; i < pos; i++) {
    // Non-ASCII: only valid UTF-8 without a leading BOM is read here; cbor-x's decoders (native,
    // TextDecoder, JS) differ on invalid sequences and on whether a leading BOM is kept.
    if (src[i] >= 0x80) {
      if (src[start] === 0xef && src[start + 1] === 0xbb && src[start + 2] === 0xbf) throw NOT_PLAIN;
      try {
        return utf8.decode(src.subarray(start, pos));
      } catch {
        throw NOT_PLAIN;
      }
    }
  }
  return src.toString('latin1', start, pos);
}

/** A CBOR integer or float64 as cbor-x decodes it with int64AsNumber, or undefined. */
function number(): number | undefined {
  if (pos >= end) throw NOT_PLAIN;
  const b = src[pos];
  const major = b >> 5;
  if (major === 0 || major === 1) {
    const info = b & 0x1f;
    let n: number;
    if (info < 24) {
      n = info;
      pos += 1;
    } else if (info === 24) {
      if (pos + 2 > end) throw NOT_PLAIN;
      n = src[pos + 1];
      pos += 2;
    } else if (info === 25) {
      if (pos + 3 > end) throw NOT_PLAIN;
      n = (src[pos + 1] << 8) | src[pos + 2];
      pos += 3;
    } else if (info === 26) {
      if (pos + 5 > end) throw NOT_PLAIN;
      n = uint32At(pos + 1);
      pos += 5;
    } else if (info === 27) {
      if (pos + 9 > end) throw NOT_PLAIN;
      n = uint32At(pos + 1) * 0x1_0000_0000 + uint32At(pos + 5);
      pos += 9;
    } else throw NOT_PLAIN;
    return major === 0 ? n : -1 - n;
  }
  if (b === 0xfb) {
    if (pos + 9 > end) throw NOT_PLAIN;
    if (littleEndian) for (let i = 0; i < 8; i++) floatBytes[7 - i] = src[pos + 1 + i];
    else for (let i = 0; i < 8; i++) floatBytes[i] = src[pos + 1 + i];
    pos += 9;
    return float[0];
  }
  return undefined;
}

function integer(): number {
  const n = number();
  if (n === undefined || !Number.isInteger(n)) throw NOT_PLAIN;
  return n;
}

/** Epoch ms, as envelope.ts requires of the envelope's times. */
function time(): number {
  const n = number();
  if (!Number.isSafeInteger(n)) throw NOT_PLAIN;
  return n as number;
}

/** A storable JSON value (what checkJsonValue accepts at `depth`), or NOT_PLAIN. */
function json(depth: number): unknown {
  if (pos >= end) throw NOT_PLAIN;
  const b = src[pos];
  switch (b >> 5) {
    case 3:
      return text();
    case 4: {
      if (depth >= MAX_JSON_DEPTH) throw NOT_PLAIN;
      const n = length(4);
      const out = new Array(n);
      for (let i = 0; i < n; i++) out[i] = json(depth + 1);
      return out;
    }
    case 5: {
      if (depth >= MAX_JSON_DEPTH) throw NOT_PLAIN;
      const n = length(5);
      const out: Record<string, unknown> = {};
      for (let i = 0; i < n; i++) {
        const key = text();
        // cbor-x renames this key; leave that to it.
        if (key === '__proto__') throw NOT_PLAIN;
        out[key] = json(depth + 1);
      }
      return out;
    }
    case 7:
      pos++;
      if (b === 0xf5) return true;
      if (b === 0xf4) return false;
      if (b === 0xf6) return null;
      pos--;
      break;
    default:
      break;
  }
  const n = number();
  if (n === undefined || !Number.isFinite(n)) throw NOT_PLAIN;
  return n;
}

function network(): NetworkMeta {
  const count = length(5);
  expectKey(K.networkId);
  const out: NetworkMeta = { networkId: text() };
  // The count bounds the optional keys: the envelope's own `receivedAt` may follow the map.
  let seen = 1;
  if (seen < count && hasKey(K.devEui)) {
    out.devEui = text();
    seen++;
  }
  if (seen < count && hasKey(K.fPort)) {
    out.fPort = integer();
    seen++;
  }
  if (seen < count && hasKey(K.receivedAt)) {
    out.receivedAt = integer();
    seen++;
  }
  if (seen < count && hasKey(K.format)) {
    out.format = text();
    seen++;
  }
  if (seen !== count) throw NOT_PLAIN;
  return out;
}

function admitted(): AdmittedUplink {
  if (length(5) !== 2) throw NOT_PLAIN;
  expectKey(K.states);
  const stateCount = length(4);
  const states: AdmittedUplink['states'] = new Array(stateCount);
  for (let i = 0; i < stateCount; i++) {
    if (length(4) !== 3) throw NOT_PLAIN;
    const asset = text();
    const ts = time();
    states[i] = [asset, ts, json(0)];
  }
  expectKey(K.dropped);
  const droppedCount = length(4);
  const dropped: AdmittedUplink['dropped'] = new Array(droppedCount);
  for (let i = 0; i < droppedCount; i++) {
    const n = length(4);
    if (n === 3) dropped[i] = [text(), text(), text()];
    else if (n === 4) {
      const entry: [string, string, string, number] = [text(), text(), text(), integer()];
      if (entry[3] < 0) throw NOT_PLAIN;
      dropped[i] = entry;
    } else throw NOT_PLAIN;
  }
  return { states, dropped };
}

const CHANNELS = ['http', 'mqtt', 'lpwan'] as const;
const CONTENT_TYPES = ['json', 'cbor', 'binary'] as const;
const CHANNEL_BYTES = CHANNELS.map(keyBytes);
const CONTENT_TYPE_BYTES = CONTENT_TYPES.map(keyBytes);

/** One of `values`, matched on its encoding (no string is built), or NOT_PLAIN. */
function literal<T extends string>(values: readonly T[], encoded: readonly Uint8Array[]): T {
  for (let i = 0; i < values.length; i++) if (hasKey(encoded[i])) return values[i];
  throw NOT_PLAIN;
}

function envelope(): UplinkEnvelope {
  const count = length(5);
  expectKey(K.id);
  const id = text();
  expectKey(K.channel);
  const ch = literal(CHANNELS, CHANNEL_BYTES);
  expectKey(K.contentType);
  const type = literal(CONTENT_TYPES, CONTENT_TYPE_BYTES);
  expectKey(K.deviceId);
  const deviceId = text();
  let seen = 6;
  let asset: string | undefined;
  if (hasKey(K.asset)) {
    asset = text();
    seen++;
  }
  let net: NetworkMeta | undefined;
  if (hasKey(K.network)) {
    net = network();
    seen++;
  }
  expectKey(K.receivedAt);
  const receivedAt = time();
  expectKey(K.body);
  const n = length(2);
  const body = copyBody(n);
  src.copy(body, 0, pos, pos + n);
  pos += n;
  // Built in the order envelope.ts builds it, so both paths give objects of one shape.
  const out: UplinkEnvelope = { id, channel: ch, contentType: type, deviceId, receivedAt, body };
  if (asset !== undefined) out.asset = asset;
  if (net !== undefined) out.network = net;
  if (hasKey(K.admitted)) {
    out.admitted = admitted();
    seen++;
  }
  if (seen !== count || pos !== end) throw NOT_PLAIN;
  return out;
}

/**
 * The envelope in `bytes` when they are of the shape envelopeWriter.ts writes and a valid
 * envelope; undefined for anything else (decode that with cbor-x).
 */
export function readEnvelope(bytes: Uint8Array): UplinkEnvelope | undefined {
  src = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  pos = 0;
  end = bytes.length;
  try {
    return envelope();
  } catch (error) {
    if (error === NOT_PLAIN) return undefined;
    throw error;
  } finally {
    // Do not keep the caller's block alive.
    src = EMPTY;
  }
}
