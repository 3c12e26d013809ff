/**
 * The compact layout's rows (stateLayout.ts COMPACT_COLUMNS) as RowBinary: the same column values
 * encodeCompactStateRowsTsv writes as text, in the engine's own binary row format, so the engine
 * copies bytes instead of parsing decimal text and escapes. LowCardinality(String) travels as
 * String and the Enum8 as its Int8 value (that is how RowBinary carries them).
 */
import type { JsonValue, StateRow } from '../../schemas/messages.ts';
import { compactNumber, FLOAT_SCALE, orderedUplinkLow } from './encodeStateRowsTsv.ts';
import { RowBinaryWriter, VALUE_KIND } from './encodeStateRowsRowBinary.ts';

/** Rows must have passed engine/checkStateRows. `keepText` as in encodeCompactStateRowsTsv. */
export function encodeCompactStateRowsRowBinary(rows: readonly StateRow[], keepText: boolean): Buffer {
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
  }
  return w.bytes();
}

/** value_kind, value_mantissa, value_scale, value_float, value_string, value_bool. */
function valueColumns(w: RowBinaryWriter, value: JsonValue, keepText: boolean): void {
  switch (typeof value) {
    case 'number': {
      w.byte(VALUE_KIND.number);
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
      w.byte(VALUE_KIND.string);
      w.zeros(17);
      w.string(value);
      w.byte(0);
      return;
    case 'boolean':
      w.byte(VALUE_KIND.boolean);
      w.zeros(18);
      w.byte(value ? 1 : 0);
      return;
    default:
      if (value === null) {
        w.byte(VALUE_KIND.null);
        w.zeros(19);
      } else {
        w.byte(VALUE_KIND.json);
        w.zeros(17);
        w.string(JSON.stringify(value));
        w.byte(0);
      }
  }
}
