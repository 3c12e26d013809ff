/**
 * The compact layout's rows (stateLayout.ts COMPACT_COLUMNS) as RowBinary: the same column values
 * encodeCompactStateRowsTsv writes as text, in the engine's own binary row format, so the engine
 * copies bytes instead of parsing decimal text and escapes. LowCardinality(String) travels as
 * String and the Enum8 as its Int8 value (that is how RowBinary carries them).
 */
import type { JsonValue, StateRow } from '../../schemas/messages.ts';
import { compactNumber, FLOAT_SCALE, orderedUplinkLow } from './encodeStateRowsTsv.ts';
import { rowRoom, stringBound, VALUE_KIND, writeInt64, writeString, writeUint16, writeUint32, writeZeros } from './encodeStateRowsRowBinary.ts';

/**
 * The most bytes a row takes besides its strings: ts, received_lag, uplink_low (8 + 8 + 4), an
 * empty uplink_text (1), value_kind, value_mantissa, value_scale, value_float, an empty value_string
 * and value_bool (1 + 8 + 1 + 8 + 1 + 1), seq (2).
 */
const FIXED_BOUND = 43;

/** Rows must have passed engine/checkStateRows. `keepText` as in encodeCompactStateRowsTsv. */
export function encodeCompactStateRowsRowBinary(rows: readonly StateRow[], keepText: boolean): Buffer {
  let buf: Buffer = Buffer.allocUnsafe(Math.max(rows.length * 64, 64));
  let pos = 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const deviceId = row.deviceId;
    const asset = row.asset;
    const uplinkId = row.uplinkId;
    const receivedAt = row.receivedAt;
    const value = row.value;
    const text = valueText(value, keepText);
    buf = rowRoom(buf, pos, stringBound(deviceId) + stringBound(asset) + stringBound(uplinkId) + stringBound(text) + FIXED_BOUND);
    pos = writeString(buf, pos, deviceId);
    pos = writeString(buf, pos, asset);
    pos = writeInt64(buf, pos, row.ts);
    pos = writeInt64(buf, pos, receivedAt - row.ts);
    const low = orderedUplinkLow(uplinkId, receivedAt);
    if (low < 0) {
      pos = writeUint32(buf, pos, 0);
      pos = writeString(buf, pos, uplinkId);
    } else {
      pos = writeUint32(buf, pos, low);
      buf[pos++] = 0;
    }
    pos = valueColumns(buf, pos, value, text);
    pos = writeUint16(buf, pos, row.seq ?? 0);
  }
  return buf.subarray(0, pos);
}

/** value_string: a string itself, a JSON value's text, a Float64-stored number's text when kept. */
function valueText(value: JsonValue, keepText: boolean): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
      if (!keepText) return '';
      return compactNumber(value).text;
    case 'object':
      return value === null ? '' : JSON.stringify(value);
    default:
      return '';
  }
}

/** value_kind, value_mantissa, value_scale, value_float, value_string, value_bool. */
function valueColumns(buf: Buffer, pos: number, value: JsonValue, text: string): number {
  switch (typeof value) {
    case 'number': {
      buf[pos++] = VALUE_KIND.number;
      const number = compactNumber(value);
      if (number.scale === FLOAT_SCALE) {
        pos = writeInt64(buf, pos, 0);
        buf[pos++] = FLOAT_SCALE;
        pos = buf.writeDoubleLE(value, pos);
        // `text` is the number's text when kept, else empty: an empty string is its length 0.
        pos = writeString(buf, pos, text);
      } else {
        pos = writeInt64(buf, pos, number.mantissa);
        buf[pos++] = number.scale;
        pos = writeZeros(buf, pos, 9);
      }
      buf[pos++] = 0;
      return pos;
    }
    case 'string':
      buf[pos++] = VALUE_KIND.string;
      pos = writeZeros(buf, pos, 17);
      pos = writeString(buf, pos, text);
      buf[pos++] = 0;
      return pos;
    case 'boolean':
      buf[pos++] = VALUE_KIND.boolean;
      pos = writeZeros(buf, pos, 18);
      buf[pos++] = value ? 1 : 0;
      return pos;
    default:
      if (value === null) {
        buf[pos++] = VALUE_KIND.null;
        return writeZeros(buf, pos, 19);
      }
      buf[pos++] = VALUE_KIND.json;
      pos = writeZeros(buf, pos, 17);
      pos = writeString(buf, pos, text);
      buf[pos++] = 0;
      return pos;
  }
}
