/**
 * Encodes state rows of the legacy layout (stateTable.ts STATE_COLUMNS) as RowBinary: Int64 and
 * Float64 little-endian, strings as a LEB128 length and UTF-8 bytes. RowBinary carries a number's
 * exact float64 bits, so ClickHouse 18.16's inexact decimal parser is out of the way and the
 * decimal copy of each number in value_string can be left empty; the server also skips the text
 * parse. Used where the executor offers it (the server adapter; chDB's insert takes text formats only).
 */
import type { JsonValue, StateRow } from '../../schemas/messages.ts';

const KIND = { null: 0, number: 1, string: 2, boolean: 3, json: 4 } as const;

class Writer {
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
    // At most 3 bytes per UTF-16 unit, plus a length of at most 5 bytes.
    this.room(value.length * 3 + 5);
    let length = value.length;
    let ascii = true;
    for (let i = 0; i < value.length; i++) {
      if (value.charCodeAt(i) > 0x7f) {
        ascii = false;
        break;
      }
    }
    if (!ascii) length = Buffer.byteLength(value, 'utf8');
    while (length > 0x7f) {
      this.buf[this.pos++] = (length & 0x7f) | 0x80;
      length >>>= 7;
    }
    this.buf[this.pos++] = length;
    this.pos += this.buf.write(value, this.pos, ascii ? 'latin1' : 'utf8');
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
  byte(value: number): void {
    this.room(1);
    this.buf[this.pos++] = value;
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
  const w = new Writer(rows.length * 96);
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
  return w.buf.subarray(0, w.pos);
}
