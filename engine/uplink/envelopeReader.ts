/**
 * The uplink envelope read by hand, the one reader of topic `uplinks`: every record the engine
 * consumes is decoded once, and cbor-x building a generic map that a compiled schema then walks cost
 * several times what this needs.
 *
 * Reads any RFC 8949 encoding of an envelope that schemas/messages.ts UplinkEnvelope describes (the
 * CBOR itself as cborCursor.ts says): keys in any order, a key the envelope does not have skipped
 * with its value, an optional key given undefined read as absent, as cbor-x and the schema read
 * them; times and state timestamps epoch ms (safe integers); each carried state a storable JSON
 * value (engine/kernel/checkJsonValue.ts). Anything else throws FleetError('MALFORMED_PAYLOAD').
 * The bytes envelopeWriter.ts writes (keys in the schema's order, shortest heads) take the fast path.
 * test/engine/uplink/envelope.test.ts holds it to the cbor-x decoder and the schema
 * (test/support/reference/envelopeCborX.ts) on random, mutated and hostile input.
 */
import type { AdmittedUplink, NetworkMeta, UplinkEnvelope } from '../../schemas/messages.ts';
import { FleetError } from '../kernel/errors.ts';
import { begin, byteString, copyBytes, done, fail, finish, isUndefined, json, key, matches, number, open, release, skip, skipShortText, text } from './cborCursor.ts';

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

/** A map's known keys by index, each with its shortest CBOR encoding (what writers write). */
interface KeySet {
  readonly names: readonly string[];
  readonly encoded: readonly Uint8Array[];
}

/** Names shorter than 24 ASCII characters. */
function keySet(names: readonly string[]): KeySet {
  return { names, encoded: names.map((name) => Uint8Array.of(0x60 | name.length, ...Buffer.from(name, 'latin1'))) };
}

/** The index in `keys` of the next map key (consumed), -1 for any other key; `hint` is tried first. */
function keyIndex(keys: KeySet, hint: number): number {
  const encoded = keys.encoded;
  // Keys come in the writer's order, some left out: the next is likely at or after the hint.
  for (let i = hint; i < encoded.length; i++) if (matches(encoded[i])) return i;
  for (let i = 0; i < hint && i < encoded.length; i++) if (matches(encoded[i])) return i;
  // Short text that is none of them by its bytes is none of them decoded (U+FFFD is no ASCII).
  if (skipShortText()) return -1;
  return keys.names.indexOf(key());
}

/** In the order envelopeWriter.ts writes them; the last is never written (absent means 1). */
const ENVELOPE = keySet(['id', 'channel', 'contentType', 'deviceId', 'asset', 'network', 'receivedAt', 'body', 'admitted', 'version']);
/** id, channel, contentType, deviceId, receivedAt, body. */
const REQUIRED = 0b0011001111;
/** asset, network, admitted, version. */
const OPTIONAL = 0b1100110000;
const NETWORK = keySet(['networkId', 'devEui', 'fPort', 'receivedAt', 'format']);
const ADMITTED = keySet(['states', 'dropped']);

const CHANNELS = ['http', 'mqtt', 'lpwan'] as const;
const CONTENT_TYPES = ['json', 'cbor', 'binary'] as const;
const CHANNEL_BYTES = keySet(CHANNELS).encoded;
const CONTENT_TYPE_BYTES = keySet(CONTENT_TYPES).encoded;

/** One of `values`, matched on its encoding where it is the shortest (no string is built). */
function literal<T extends string>(values: readonly T[], encoded: readonly Uint8Array[], what: string): T {
  for (let i = 0; i < values.length; i++) if (matches(encoded[i])) return values[i];
  const i = values.indexOf(text(what) as T);
  if (i < 0) fail(`${what} must be one of ${values.join(', ')}`);
  return values[i];
}

function integer(what: string): number {
  const n = number(what);
  if (!Number.isInteger(n)) fail(`${what} must be an integer`);
  return n;
}

/** Epoch ms. */
function time(what: string): number {
  const n = number(what);
  if (!Number.isSafeInteger(n)) fail(`${what} must be epoch ms (a safe integer)`);
  return n;
}

/** Marks key `f` of `keys` seen; a map naming a key twice is refused (cborCursor.ts). */
function once(seen: number, f: number, keys: KeySet, what: string): number {
  if (seen & (1 << f)) fail(`${what} names ${keys.names[f]} twice`);
  return seen | (1 << f);
}

function network(): NetworkMeta {
  const n = open(5, '/network');
  let networkId: string | undefined;
  let devEui: string | undefined;
  let fPort: number | undefined;
  let receivedAt: number | undefined;
  let format: string | undefined;
  let seen = 0;
  for (let i = 0, f = -1; !done(n, i); i++) {
    f = keyIndex(NETWORK, f + 1);
    if (f < 0) {
      skip(0);
      continue;
    }
    seen = once(seen, f, NETWORK, '/network');
    if (f > 0 && isUndefined()) continue;
    if (f === 0) networkId = text('/network/networkId');
    else if (f === 1) devEui = text('/network/devEui');
    else if (f === 2) fPort = integer('/network/fPort');
    else if (f === 3) receivedAt = integer('/network/receivedAt');
    else format = text('/network/format');
  }
  if (networkId === undefined) fail('/network has no networkId');
  const out: NetworkMeta = { networkId };
  if (devEui !== undefined) out.devEui = devEui;
  if (fPort !== undefined) out.fPort = fPort;
  if (receivedAt !== undefined) out.receivedAt = receivedAt;
  if (format !== undefined) out.format = format;
  return out;
}

function states(): AdmittedUplink['states'] {
  const n = open(4, '/admitted/states');
  const out: AdmittedUplink['states'] = n >= 0 ? new Array(n) : [];
  for (let i = 0; !done(n, i); i++) {
    const m = open(4, '/admitted/states item');
    if (m >= 0 && m !== 3) fail(`/admitted/states/${i} must be [asset, ts, value]`);
    const asset = text('/admitted/states asset');
    const ts = time('/admitted/states ts');
    const value = json(0);
    if (!done(m, 3)) fail(`/admitted/states/${i} must be [asset, ts, value]`);
    out[i] = [asset, ts, value];
  }
  return out;
}

function droppedEntry(i: number): AdmittedUplink['dropped'][number] {
  const m = open(4, '/admitted/dropped item');
  if (m >= 0 && m !== 3 && m !== 4) fail(`/admitted/dropped/${i} must be [asset, code, reason] or [asset, code, reason, item]`);
  const asset = text('/admitted/dropped asset');
  const code = text('/admitted/dropped code');
  const reason = text('/admitted/dropped reason');
  if (done(m, 3)) return [asset, code, reason];
  const item = integer('/admitted/dropped item');
  if (item < 0) fail(`/admitted/dropped/${i} item must be at least 0`);
  if (!done(m, 4)) fail(`/admitted/dropped/${i} has more than 4 elements`);
  return [asset, code, reason, item];
}

function admitted(): AdmittedUplink {
  const n = open(5, '/admitted');
  let out: AdmittedUplink['states'] | undefined;
  let dropped: AdmittedUplink['dropped'] | undefined;
  let seen = 0;
  for (let i = 0, f = -1; !done(n, i); i++) {
    f = keyIndex(ADMITTED, f + 1);
    if (f < 0) {
      skip(0);
      continue;
    }
    seen = once(seen, f, ADMITTED, '/admitted');
    if (f === 0) out = states();
    else {
      const d = open(4, '/admitted/dropped');
      dropped = d >= 0 ? new Array(d) : [];
      for (let j = 0; !done(d, j); j++) dropped[j] = droppedEntry(j);
    }
  }
  if (out === undefined || dropped === undefined) fail('/admitted must have states and dropped');
  return { states: out, dropped };
}

function body(): Uint8Array {
  const n = byteString('/body');
  const copy = copyBody(n);
  copyBytes(copy, n);
  return copy;
}

function envelope(): UplinkEnvelope {
  const n = open(5, 'the envelope');
  let id: string | undefined;
  let channel: UplinkEnvelope['channel'] | undefined;
  let contentType: UplinkEnvelope['contentType'] | undefined;
  let deviceId: string | undefined;
  let receivedAt: number | undefined;
  let bytes: Uint8Array | undefined;
  let asset: string | undefined;
  let net: NetworkMeta | undefined;
  let adm: AdmittedUplink | undefined;
  let seen = 0;
  for (let i = 0, f = -1; !done(n, i); i++) {
    f = keyIndex(ENVELOPE, f + 1);
    if (f < 0) {
      skip(0);
      continue;
    }
    seen = once(seen, f, ENVELOPE, 'the envelope');
    if ((OPTIONAL >> f) & 1 && isUndefined()) continue;
    switch (f) {
      case 0: id = text('/id'); break;
      case 1: channel = literal(CHANNELS, CHANNEL_BYTES, '/channel'); break;
      case 2: contentType = literal(CONTENT_TYPES, CONTENT_TYPE_BYTES, '/contentType'); break;
      case 3: deviceId = text('/deviceId'); break;
      case 4: asset = text('/asset'); break;
      case 5: net = network(); break;
      case 6: receivedAt = time('/receivedAt'); break;
      case 7: bytes = body(); break;
      case 8: adm = admitted(); break;
      default: if (number('/version') !== 1) fail('/version must be 1, the only format this reader knows');
    }
  }
  if ((seen & REQUIRED) !== REQUIRED) {
    fail(`the envelope has no ${ENVELOPE.names.filter((_: string, f: number) => ((REQUIRED & ~seen) >> f) & 1).join(', ')}`);
  }
  // Built in one order whatever the input's, so every envelope is an object of one shape.
  const out: UplinkEnvelope = { id: id!, channel: channel!, contentType: contentType!, deviceId: deviceId!, receivedAt: receivedAt!, body: bytes! };
  if (asset !== undefined) out.asset = asset;
  if (net !== undefined) out.network = net;
  if (adm !== undefined) out.admitted = adm;
  return out;
}

/** The envelope in `bytes`; throws FleetError('MALFORMED_PAYLOAD') on anything that is not one. */
export function readEnvelope(bytes: Uint8Array): UplinkEnvelope {
  if (!(bytes instanceof Uint8Array)) throw new FleetError('MALFORMED_PAYLOAD', 'uplink envelope must be bytes');
  begin(bytes);
  try {
    const e = envelope();
    finish();
    return e;
  } finally {
    // Do not keep the caller's block alive.
    release();
  }
}
