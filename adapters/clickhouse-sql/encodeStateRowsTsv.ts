/**
 * Encodes state rows as one TabSeparated payload in STATE_COLUMNS order. TabSeparated because both
 * engines parse it identically, chDB takes it as a raw insert and @clickhouse/client sends it as a
 * plain byte stream (its JSONEachRow path would stringify row objects itself).
 */
import type { JsonValue, StateRow } from '../../schemas/messages.ts';

const TSV_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  '\t': '\\t',
  '\n': '\\n',
  '\r': '\\r',
  '\0': '\\0',
};
const TSV_SPECIAL = /[\\\t\n\r\0]/;
const TSV_SPECIAL_ALL = /[\\\t\n\r\0]/g;

export function tsvField(value: string): string {
  return TSV_SPECIAL.test(value) ? value.replace(TSV_SPECIAL_ALL, (c) => TSV_ESCAPES[c]) : value;
}

/** Shortest decimal text that parses back to the same double; keeps the sign of -0. */
export function numberText(value: number): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

/** kind, value_number, value_string, value_bool — the typed value columns of one row. */
function valueFields(value: JsonValue): string {
  switch (typeof value) {
    case 'number': {
      const text = numberText(value);
      return `number\t${text}\t${text}\t0`;
    }
    case 'string':
      return `string\t0\t${tsvField(value)}\t0`;
    case 'boolean':
      return value ? 'boolean\t0\t\t1' : 'boolean\t0\t\t0';
    default:
      return value === null ? 'null\t0\t\t0' : `json\t0\t${tsvField(JSON.stringify(value))}\t0`;
  }
}

/** Rows must have passed engine/checkStateRows. */
export function encodeStateRowsTsv(rows: readonly StateRow[]): Buffer {
  const lines = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    lines[i] = `${tsvField(row.deviceId)}\t${tsvField(row.asset)}\t${row.ts}\t${tsvField(row.uplinkId)}\t${row.receivedAt}\t${valueFields(row.value)}\n`;
  }
  return Buffer.from(lines.join(''), 'utf8');
}

/** 16 upper-case hex digits: the shape of an id made by engine/kernel/ids.ts newUplinkId. */
const ORDERED_ID = /^[0-9A-F]{16}$/;

/**
 * The compact layout's row (stateLayout.ts COMPACT_COLUMNS). The receive time goes as its lag
 * behind `ts`; an ordered uplink id whose time is the row's receive time as its low 20 bits, any
 * other id verbatim; a number as decimal mantissa and scale where that is exact (see numberFields).
 * `keepText`: the server parses floats inexactly, so a number that needs the Float64 column also
 * keeps its decimal text.
 */
export function encodeCompactStateRowsTsv(rows: readonly StateRow[], keepText: boolean): Buffer {
  const lines = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    lines[i] = `${tsvField(row.deviceId)}\t${tsvField(row.asset)}\t${row.ts}\t${row.receivedAt - row.ts}\t${uplinkFields(row.uplinkId, row.receivedAt)}\t${compactValueFields(row.value, keepText)}\n`;
  }
  return Buffer.from(lines.join(''), 'utf8');
}

/** uplink_low, uplink_text. */
function uplinkFields(id: string, receivedAt: number): string {
  if (id.length === 16 && ORDERED_ID.test(id)) {
    const hi = parseInt(id.slice(0, 8), 16);
    const lo = parseInt(id.slice(8), 16);
    if (hi * 2 ** 12 + Math.floor(lo / 2 ** 20) === receivedAt && receivedAt >= 2 ** 36) return `${lo & 0xfffff}\t`;
  }
  return `0\t${tsvField(id)}`;
}

/** Scale marking a number kept as Float64 in value_float (stateLayout.ts). */
export const FLOAT_SCALE = 255;
const POWERS_OF_TEN = Array.from({ length: 16 }, (_, k) => 10 ** k);

/**
 * value_mantissa, value_scale, value_float for a number. A reading like 21.37 is stored as 2137 and
 * 2: integers that compress to a few bits where the Float64's decimal-looking mantissa does not.
 * Exact by construction: m / 10^k with both exact doubles is one correctly rounded division, the
 * same the server computes (value_number), and it is checked here before m and k are chosen.
 */
function numberFields(value: number): string {
  const text = numberText(value);
  if (!text.includes('e') && !Object.is(value, -0)) {
    const dot = text.indexOf('.');
    const scale = dot < 0 ? 0 : text.length - dot - 1;
    const digits = dot < 0 ? text : text.slice(0, dot) + text.slice(dot + 1);
    const mantissa = Number(digits);
    if (scale < POWERS_OF_TEN.length && Math.abs(mantissa) < 1e15 && mantissa / POWERS_OF_TEN[scale] === value) return `${mantissa}\t${scale}\t0`;
  }
  return `0\t${FLOAT_SCALE}\t${text}`;
}

/** value_kind, value_mantissa, value_scale, value_float, value_string, value_bool. */
function compactValueFields(value: JsonValue, keepText: boolean): string {
  switch (typeof value) {
    case 'number': {
      const fields = numberFields(value);
      return `number\t${fields}\t${keepText && fields.startsWith(`0\t${FLOAT_SCALE}\t`) ? numberText(value) : ''}\t0`;
    }
    case 'string':
      return `string\t0\t0\t0\t${tsvField(value)}\t0`;
    case 'boolean':
      return value ? 'boolean\t0\t0\t0\t\t1' : 'boolean\t0\t0\t0\t\t0';
    default:
      return value === null ? 'null\t0\t0\t0\t\t0' : `json\t0\t0\t0\t${tsvField(JSON.stringify(value))}\t0`;
  }
}
