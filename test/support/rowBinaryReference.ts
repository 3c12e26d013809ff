/**
 * The RowBinary encoders as they were before they were rewritten for speed (one bounds check per
 * row, no regex or substring per uplink id): the reference test/adapters/clickhouse/encode-state-rows.test.ts compares
 * today's bytes with, on random rows. Kept simple on purpose; not used by the service.
 */
import type { JsonValue, StateRow } from '../../schemas/messages.ts';
import { compactNumber, FLOAT_SCALE } from '../../adapters/clickhouse-sql/encodeStateRowsTsv.ts';

const KIND = { null: 0, number: 1, string: 2, boolean: 3, json: 4 } as const;

class RowBinaryWriter {
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
  uint16(value: number): void {
    this.room(2);
    this.buf.writeUInt16LE(value, this.pos);
    this.pos += 2;
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
export function referenceStateRowsRowBinary(rows: readonly StateRow[]): Buffer {
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
    w.uint16(row.seq ?? 0);
  }
  return w.bytes();
}

const ORDERED_ID = /^[0-9A-F]{16}$/;

function orderedUplinkLow(id: string, receivedAt: number): number {
  if (id.length === 16 && ORDERED_ID.test(id)) {
    const hi = parseInt(id.slice(0, 8), 16);
    const lo = parseInt(id.slice(8), 16);
    if (hi * 2 ** 12 + Math.floor(lo / 2 ** 20) === receivedAt && receivedAt >= 2 ** 36) return lo & 0xfffff;
  }
  return -1;
}

/** Rows must have passed engine/checkStateRows. `keepText` as in encodeCompactStateRowsTsv. */
export function referenceCompactStateRowsRowBinary(rows: readonly StateRow[], keepText: boolean): Buffer {
  const w = new RowBinaryWriter(rows.length * 64);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    w.string(row.deviceId);
    w.string(row.asset);
    w.int64(row.ts);
    w.int64(row.receivedAt - row.ts);
    const low = orderedUplinkLow(row.uplinkId, row.receivedAt);
    if (low < 0) {
      w.uint32(0);
      w.string(row.uplinkId);
    } else {
      w.uint32(low);
      w.byte(0);
    }
    valueColumns(w, row.value, keepText);
    w.uint16(row.seq ?? 0);
  }
  return w.bytes();
}

/** value_kind, value_mantissa, value_scale, value_float, value_string, value_bool. */
function valueColumns(w: RowBinaryWriter, value: JsonValue, keepText: boolean): void {
  switch (typeof value) {
    case 'number': {
      w.byte(KIND.number);
      const number = compactNumber(value);
      if (number.scale === FLOAT_SCALE) {
        w.int64(0);
        w.byte(FLOAT_SCALE);
        w.float64(value);
        if (keepText) w.string(number.text);
        else w.byte(0);
      } else {
        w.int64(number.mantissa);
        w.byte(number.scale);
        w.float64(0);
        w.byte(0);
      }
      w.byte(0);
      return;
    }
    case 'string':
      w.byte(KIND.string);
      w.zeros(17);
      w.string(value);
      w.byte(0);
      return;
    case 'boolean':
      w.byte(KIND.boolean);
      w.zeros(18);
      w.byte(value ? 1 : 0);
      return;
    default:
      if (value === null) {
        w.byte(KIND.null);
        w.zeros(19);
      } else {
        w.byte(KIND.json);
        w.zeros(17);
        w.string(JSON.stringify(value));
        w.byte(0);
      }
  }
}
