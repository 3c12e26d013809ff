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

/** Appends RowBinary fields to a buffer that grows as needed. */
export class RowBinaryWriter {
  buf: Buffer;
  pos = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
  string(value: string): void {
    const units = value.length;
    // At most 3 bytes per UTF-16 unit, plus a length of at most 5 bytes.
    this.room(units * 3 + 5);
    const buf = this.buf;
    if (units < 0x80) {
      // Short ASCII (ids, asset names) byte by byte: cheaper than a call into Buffer.write.
      let pos = this.pos + 1;
      let i = 0;
      for (; i < units; i++) {
        const code = value.charCodeAt(i);
        if (code > 0x7f) break;
        buf[pos++] = code;
      }
      if (i === units) {
        buf[this.pos] = units;
        this.pos = pos;
        return;
      }
    }
    let length = Buffer.byteLength(value, 'utf8');
    while (length > 0x7f) {
      buf[this.pos++] = (length & 0x7f) | 0x80;
      length >>>= 7;
    }
    buf[this.pos++] = length;
    this.pos += buf.write(value, this.pos, 'utf8');
  }
  /** A safe integer as two 32-bit halves (no BigInt on the hot path). */
  int64(value: number): void {
    this.room(8);
    const hi = Math.floor(value / 2 ** 32);
    this.buf.writeUInt32LE(value - hi * 2 ** 32, this.pos);
    this.buf.writeInt32LE(hi, this.pos + 4);
    this.pos += 8;
  }
  float64(value: number): void {
    this.room(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }
  uint32(value: number): void {
    this.room(4);
    this.buf.writeUInt32LE(value, this.pos);
    this.pos += 4;
  }
  byte(value: number): void {
    this.room(1);
    this.buf[this.pos++] = value;
  }
  /** `count` zero bytes: the empty or zero fields of columns a row does not use. */
  zeros(count: number): void {
    this.room(count);
    const buf = this.buf;
    for (let end = this.pos + count; this.pos < end; ) buf[this.pos++] = 0;
  }
  /** What was written (a view, not a copy). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
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
  const w = new RowBinaryWriter(rows.length * 96);
  for (const row of rows) {
    w.string(row.deviceId);
    w.string(row.asset);
    w.int64(row.ts);
    w.string(row.uplinkId);
    w.int64(row.receivedAt);
    const value = row.value;
    const kind = kindOf(value);
    w.byte(KIND[kind]);
    w.float64(kind === 'number' ? (value as number) : 0);
    w.string(kind === 'string' ? (value as string) : kind === 'json' ? JSON.stringify(value) : '');
    w.byte(value === true ? 1 : 0);
  }
  return w.bytes();
}
