/**
 * Encodes state rows of the legacy layout (stateTable.ts STATE_COLUMNS) as RowBinary: Int64 and
 * Float64 little-endian, strings as a LEB128 length and UTF-8 bytes. RowBinary carries a number's
 * exact float64 bits, so ClickHouse 18.16's inexact decimal parser is out of the way and the
 * decimal copy of each number in value_string can be left empty; the server also skips the text
 * parse. Used where the executor offers it (the server over HTTP; chDB through a payload file).
 */
import type { JsonValue, StateRow } from '../../schemas/messages.ts';

/** The value_kind Enum8 values of both layouts (stateTable.ts). */
export const VALUE_KIND = { null: 0, number: 1, string: 2, boolean: 3, json: 4 } as const;
const KIND = VALUE_KIND;

/**
 * RowBinary fields written at `pos` of `buf`, each returning the position after it. The encoders
 * reserve a row's worst case once (rowRoom) and then write its fields unchecked: a bounds check and
 * a Buffer method call per field cost more than most fields.
 */

/** The most bytes writeString may take: 3 per UTF-16 unit, and a length of at most 5 bytes. */
export function stringBound(value: string): number {
  return value.length * 3 + 5;
}

/** `buf`, or a copy of its first `pos` bytes twice as large (or more) when `bytes` do not fit. */
export function rowRoom(buf: Buffer, pos: number, bytes: number): Buffer {
  if (pos + bytes <= buf.length) return buf;
  const next = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + bytes));
  buf.copy(next, 0, 0, pos);
  return next;
}

/** A LEB128 length and the UTF-8 bytes. */
export function writeString(buf: Buffer, pos: number, value: string): number {
  const units = value.length;
  if (units < 0x80) {
    // Short ASCII (ids, asset names) byte by byte: cheaper than a call into Buffer.write.
    let at = pos + 1;
    let i = 0;
    for (; i < units; i++) {
      const code = value.charCodeAt(i);
      if (code > 0x7f) break;
      buf[at++] = code;
    }
    if (i === units) {
      buf[pos] = units;
      return at;
    }
  }
  const bytes = Buffer.byteLength(value, 'utf8');
  let length = bytes;
  while (length > 0x7f) {
    buf[pos++] = (length & 0x7f) | 0x80;
    length >>>= 7;
  }
  buf[pos++] = length;
  return pos + buf.write(value, pos, bytes, 'utf8');
}

/** A safe integer, little-endian, from two 32-bit halves (no BigInt on the hot path). */
export function writeInt64(buf: Buffer, pos: number, value: number): number {
  const hi = Math.floor(value / 2 ** 32);
  const lo = value - hi * 2 ** 32;
  // Typed array stores keep the low 8 bits: no masks needed.
  buf[pos] = lo;
  buf[pos + 1] = lo >>> 8;
  buf[pos + 2] = lo >>> 16;
  buf[pos + 3] = lo >>> 24;
  buf[pos + 4] = hi;
  buf[pos + 5] = hi >> 8;
  buf[pos + 6] = hi >> 16;
  buf[pos + 7] = hi >> 24;
  return pos + 8;
}

export function writeUint16(buf: Buffer, pos: number, value: number): number {
  buf[pos] = value;
  buf[pos + 1] = value >>> 8;
  return pos + 2;
}

export function writeUint32(buf: Buffer, pos: number, value: number): number {
  buf[pos] = value;
  buf[pos + 1] = value >>> 8;
  buf[pos + 2] = value >>> 16;
  buf[pos + 3] = value >>> 24;
  return pos + 4;
}

/** `count` zero bytes: the empty or zero fields of columns a row does not use. */
export function writeZeros(buf: Buffer, pos: number, count: number): number {
  const end = pos + count;
  while (pos < end) buf[pos++] = 0;
  return end;
}

function kindOf(value: JsonValue): keyof typeof KIND {
  switch (typeof value) {
    case 'number':
      return 'number';
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    default:
      return value === null ? 'null' : 'json';
  }
}

/** Rows must have passed engine/checkStateRows. */
export function encodeStateRowsRowBinary(rows: readonly StateRow[]): Buffer {
  let buf: Buffer = Buffer.allocUnsafe(Math.max(rows.length * 96, 64));
  let pos = 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const value = row.value;
    const kind = kindOf(value);
    const text = kind === 'string' ? (value as string) : kind === 'json' ? JSON.stringify(value) : '';
    buf = rowRoom(buf, pos, stringBound(row.deviceId) + stringBound(row.asset) + stringBound(row.uplinkId) + stringBound(text) + 28);
    pos = writeString(buf, pos, row.deviceId);
    pos = writeString(buf, pos, row.asset);
    pos = writeInt64(buf, pos, row.ts);
    pos = writeString(buf, pos, row.uplinkId);
    pos = writeInt64(buf, pos, row.receivedAt);
    buf[pos++] = KIND[kind];
    pos = buf.writeDoubleLE(kind === 'number' ? (value as number) : 0, pos);
    pos = writeString(buf, pos, text);
    buf[pos++] = value === true ? 1 : 0;
    pos = writeUint16(buf, pos, row.seq ?? 0);
  }
  return buf.subarray(0, pos);
}
