/**
 * CBOR device states and commands (spec §2.2, §2.4): a map of asset name → value, both ways.
 * Decoding keeps the values as sent (a bare value, or a `{value, at}` state object; telling them
 * apart belongs to the uplink pipeline) but only as JSON: text keys, finite numbers, no byte
 * strings, no `undefined`, no unknown tags (an epoch/date tag becomes an ISO string). Encoding uses
 * no cbor-x extensions (no records, minimal map headers), so `{"LED": true}` is `A1 63 4C 45 44 F5`.
 */
import { Decoder, Encoder } from 'cbor-x';
import { MAX_JSON_DEPTH } from '../kernel/checkJsonValue.ts';
import { FleetError } from '../kernel/errors.ts';
import { defineValue, guardDecode, guardEncode, type Codec } from './codec.ts';
import { decodeFailed } from './readers.ts';

const decoder = new Decoder({ mapsAsObjects: false, useRecords: false } as ConstructorParameters<typeof Decoder>[0]);
const encoder = new Encoder({ mapsAsObjects: true, useRecords: false, variableMapSize: true, tagUint8Array: false } as ConstructorParameters<typeof Encoder>[0]);

function toJson(value: unknown, path: string, depth: number): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw decodeFailed(`CBOR: ${path} is not a finite number`);
    return value;
  }
  if (typeof value === 'bigint') {
    const n = Number(value);
    if (!Number.isSafeInteger(n)) throw decodeFailed(`CBOR: ${path} is an integer beyond ±2^53`);
    return n;
  }
  if (depth >= MAX_JSON_DEPTH) throw decodeFailed(`CBOR: nested deeper than ${MAX_JSON_DEPTH}`);
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw decodeFailed(`CBOR: ${path} is an invalid date`);
    return value.toISOString();
  }
  if (Array.isArray(value)) return value.map((v, i) => toJson(v, `${path}[${i}]`, depth + 1));
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value) {
      if (typeof k !== 'string') throw decodeFailed(`CBOR: ${path || 'the payload map'} has a ${typeof k} key; keys must be text`);
      defineValue(out, k, toJson(v, path ? `${path}.${k}` : k, depth + 1));
    }
    return out;
  }
  const kind = value instanceof Uint8Array ? 'a byte string' : typeof value === 'object' && value !== null && 'tag' in value ? `tag ${String((value as { tag: unknown }).tag)}` : typeof value;
  throw decodeFailed(`CBOR: ${path || 'payload'} is ${kind}, which has no JSON form`);
}

function decode(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.length === 0) throw decodeFailed('CBOR: empty payload');
  const value: unknown = decoder.decode(bytes);
  if (!(value instanceof Map)) throw decodeFailed('CBOR: the payload must be a map of asset name → value');
  return toJson(value, '', 0) as Record<string, unknown>;
}

function checkCommand(value: unknown, path: string, depth: number): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new FleetError('VALIDATION_FAILED', `CBOR: ${path} is not a finite number`);
    return;
  }
  if (depth >= MAX_JSON_DEPTH) throw new FleetError('VALIDATION_FAILED', `CBOR: nested deeper than ${MAX_JSON_DEPTH}`);
  if (Array.isArray(value)) { value.forEach((v, i) => checkCommand(v, `${path}[${i}]`, depth + 1)); return; }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [k, v] of Object.entries(value)) checkCommand(v, `${path}.${k}`, depth + 1);
    return;
  }
  throw new FleetError('VALIDATION_FAILED', `CBOR: ${path} is ${typeof value}, not a JSON value`);
}

function encode(command: Record<string, unknown>): Uint8Array {
  for (const [k, v] of Object.entries(command)) checkCommand(v, k, 1);
  // cbor-x returns a view of its reusable buffer; the caller gets its own copy.
  return new Uint8Array(encoder.encode(command));
}

export const cborCodec: Codec = {
  decode: guardDecode('CBOR', decode),
  encode: guardEncode('CBOR', encode),
};
