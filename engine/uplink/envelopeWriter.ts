/**
 * The uplink envelope's CBOR written by hand, the one writer of topic `uplinks`: every uplink of
 * every channel is encoded once on its way to the log, and a generic encoder (cbor-x walking a
 * freshly built map, 64-bit times as bigints) cost several times what this fixed shape needs.
 *
 * The bytes are those the cbor-x codec the envelope was first written with writes
 * (test/engine/uplink/envelope.test.ts compares them with test/support/reference/envelopeCborX.ts
 * on random envelopes, and with the recorded fixture), so readers see no change: definite-length
 * maps and arrays with their shortest headers, text keys in the schema's order, the body as a byte
 * string, integers up to 32 bits as CBOR integers, epoch-ms times as 64-bit integers, any other
 * number as a float64 (as cbor-x does: -0 as the integer 0).
 *
 * It writes every envelope envelopeReader.ts reads back, and throws FleetError('INTERNAL') on any
 * other (a carried state that is no storable JSON value, a time that is no safe integer): such an
 * envelope is an edge bug, and a record every consumer would refuse must not reach the log.
 */
import type { UplinkEnvelope } from '../../schemas/messages.ts';
import { MAX_JSON_DEPTH } from '../kernel/checkJsonValue.ts';
import { FleetError } from '../kernel/errors.ts';

const TWO_32 = 0x1_0000_0000;

/** Reused output block; grown when an envelope does not fit, copied out per envelope. */
let out = Buffer.allocUnsafe(16 * 1024);
let view = new DataView(out.buffer, out.byteOffset, out.byteLength);
let pos = 0;

function unwritable(reason: string): never {
  throw new FleetError('INTERNAL', `cannot encode uplink envelope: ${reason}`);
}

function room(bytes: number): void {
  if (pos + bytes <= out.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, pos + bytes + 1024));
  out.copy(bigger, 0, 0, pos);
  out = bigger;
  view = new DataView(out.buffer, out.byteOffset, out.byteLength);
}

/** A major type's head with the shortest argument (`n` < 2^32). */
function head(major: number, n: number): void {
  room(5);
  const m = major << 5;
  if (n < 24) out[pos++] = m | n;
  else if (n < 0x100) {
    out[pos++] = m | 24;
    out[pos++] = n;
  } else if (n < 0x10000) {
    out[pos++] = m | 25;
    out[pos++] = n >> 8;
    out[pos++] = n & 0xff;
  } else {
    out[pos++] = m | 26;
    view.setUint32(pos, n);
    pos += 4;
  }
}

function text(s: unknown): void {
  if (typeof s !== 'string') unwritable(`${typeof s} where text belongs`);
  const n = s.length;
  room(9 + n * 3);
  // ASCII, the usual case (ids, asset names, codes), copied without a call into the runtime.
  if (n < 24) {
    const start = pos;
    out[pos++] = 0x60 | n;
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      out[pos++] = c;
    }
    if (i === n) return;
    pos = start;
  }
  const bytes = Buffer.byteLength(s, 'utf8');
  head(3, bytes);
  pos += out.write(s, pos, bytes, 'utf8');
}

function bytes(b: Uint8Array): void {
  head(2, b.length);
  room(b.length);
  out.set(b, pos);
  pos += b.length;
}

/** A number as cbor-x writes it (envelope.ts's options): small integers as integers, else float64. */
function number(n: unknown): void {
  if (typeof n !== 'number') unwritable(`${typeof n} where a number belongs`);
  room(9);
  if (n >>> 0 === n) head(0, n);
  else if (n >> 0 === n || (n < 0 && n >= -TWO_32 && Math.floor(n) === n)) head(1, -1 - n);
  else {
    out[pos++] = 0xfb;
    view.setFloat64(pos, n);
    pos += 8;
  }
}

function integer(n: unknown, what: string): void {
  if (!Number.isInteger(n)) unwritable(`${what} ${String(n)} is no integer`);
  number(n);
}

/** An epoch-ms time: beyond 32 bits a 64-bit integer, never a float (as the cbor-x codec wrote a bigint). */
function time(t: unknown, what: string): void {
  if (!Number.isSafeInteger(t)) unwritable(`${what} ${String(t)} is no epoch ms (a safe integer)`);
  const n = t as number;
  if (n <= 0xffffffff && n >= -0xffffffff) return number(n);
  room(9);
  const negative = n < 0;
  const u = negative ? -1 - n : n;
  out[pos++] = negative ? 0x3b : 0x1b;
  view.setUint32(pos, Math.floor(u / TWO_32));
  view.setUint32(pos + 4, u % TWO_32);
  pos += 8;
}

function json(v: unknown, depth: number): void {
  switch (typeof v) {
    case 'number':
      if (!Number.isFinite(v)) unwritable(`a state holds ${v}, which cannot be stored`);
      return number(v);
    case 'string': return text(v);
    case 'boolean':
      room(1);
      out[pos++] = v ? 0xf5 : 0xf4;
      return;
    case 'object': {
      if (v === null) {
        room(1);
        out[pos++] = 0xf6;
        return;
      }
      // Deeper than a stored value may be (envelopeReader.ts refuses it too).
      if (depth >= MAX_JSON_DEPTH) unwritable(`a state nests deeper than ${MAX_JSON_DEPTH} levels`);
      if (Array.isArray(v)) {
        head(4, v.length);
        for (let i = 0; i < v.length; i++) json(v[i], depth + 1);
        return;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) unwritable(`a state holds a ${v.constructor?.name} object, no JSON value`);
      const keys = Object.keys(v);
      head(5, keys.length);
      for (const key of keys) {
        text(key);
        json((v as Record<string, unknown>)[key], depth + 1);
      }
      return;
    }
    default:
      unwritable(`a state holds a ${typeof v}, no JSON value`);
  }
}

function optionalCount(e: UplinkEnvelope): number {
  return (e.asset !== undefined ? 1 : 0) + (e.network !== undefined ? 1 : 0) + (e.admitted !== undefined ? 1 : 0);
}

function envelope(e: UplinkEnvelope): void {
  head(5, 6 + optionalCount(e));
  text('id');
  text(e.id);
  text('channel');
  text(e.channel);
  text('contentType');
  text(e.contentType);
  text('deviceId');
  text(e.deviceId);
  if (e.asset !== undefined) {
    text('asset');
    text(e.asset);
  }
  const n = e.network;
  if (n !== undefined) {
    text('network');
    head(5, 1 + (n.devEui !== undefined ? 1 : 0) + (n.fPort !== undefined ? 1 : 0) + (n.receivedAt !== undefined ? 1 : 0) + (n.format !== undefined ? 1 : 0));
    text('networkId');
    text(n.networkId);
    if (n.devEui !== undefined) {
      text('devEui');
      text(n.devEui);
    }
    if (n.fPort !== undefined) {
      text('fPort');
      integer(n.fPort, 'fPort');
    }
    if (n.receivedAt !== undefined) {
      text('receivedAt');
      // The schema lets the network's own time be any integer; beyond 2^53 it is the float64 it is.
      if (Number.isSafeInteger(n.receivedAt)) time(n.receivedAt, 'network receivedAt');
      else integer(n.receivedAt, 'network receivedAt');
    }
    if (n.format !== undefined) {
      text('format');
      text(n.format);
    }
  }
  text('receivedAt');
  time(e.receivedAt, 'receivedAt');
  text('body');
  bytes(e.body);
  const a = e.admitted;
  if (a !== undefined) {
    text('admitted');
    head(5, 2);
    text('states');
    head(4, a.states.length);
    for (const state of a.states) {
      if (state.length !== 3) unwritable('a state is not [asset, ts, value]');
      head(4, 3);
      text(state[0]);
      time(state[1], 'state ts');
      json(state[2], 0);
    }
    text('dropped');
    head(4, a.dropped.length);
    for (const entry of a.dropped) {
      if (entry.length !== 3 && entry.length !== 4) unwritable('a dropped entry is not [asset, code, reason] or [asset, code, reason, item]');
      head(4, entry.length);
      text(entry[0]);
      text(entry[1]);
      text(entry[2]);
      if (entry.length === 4) {
        if (!(entry[3] >= 0)) unwritable(`dropped item ${entry[3]} is below 0`);
        integer(entry[3], 'dropped item');
      }
    }
  }
}

/**
 * The envelope's CBOR (its own copy). The copy is taken like Buffer.from's, from Node's shared pool
 * below 4 KiB: an envelope lives only until the log has framed it, and a backing store of its own
 * per uplink cost a malloc and a free.
 */
export function writeEnvelope(e: UplinkEnvelope): Uint8Array {
  pos = 0;
  if (!(e.body instanceof Uint8Array)) unwritable('body is not bytes');
  envelope(e);
  const copy = Buffer.allocUnsafe(pos);
  out.copy(copy, 0, 0, pos);
  return new Uint8Array(copy.buffer, copy.byteOffset, pos);
}
