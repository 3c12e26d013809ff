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
    lines[i] = `${tsvField(row.deviceId)}\t${tsvField(row.asset)}\t${row.ts}\t${tsvField(row.uplinkId)}\t${row.receivedAt}\t${valueFields(row.value)}\t${row.seq ?? 0}\n`;
  }
  return Buffer.from(lines.join(''), 'utf8');
}

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
    lines[i] = `${tsvField(row.deviceId)}\t${tsvField(row.asset)}\t${row.ts}\t${row.receivedAt - row.ts}\t${uplinkFields(row.uplinkId, row.receivedAt)}\t${compactValueFields(row.value, keepText)}\t${row.seq ?? 0}\n`;
  }
  return Buffer.from(lines.join(''), 'utf8');
}

/** uplink_low, uplink_text. */
function uplinkFields(id: string, receivedAt: number): string {
  const low = orderedUplinkLow(id, receivedAt);
  return low < 0 ? `0\t${tsvField(id)}` : `${low}\t`;
}

/**
 * uplink_low of an id made by newUplinkId at `receivedAt` (its 20 bits below the time), or -1 for
 * any other id, which is kept verbatim in uplink_text. Such an id is 16 upper-case hex digits
 * (engine/kernel/ids.ts), read here digit by digit: this runs for every stored row.
 */
export function orderedUplinkLow(id: string, receivedAt: number): number {
  if (id.length !== 16) return -1;
  let hi = 0;
  let lo = 0;
  for (let i = 0; i < 16; i++) {
    const c = id.charCodeAt(i);
    let digit: number;
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30;
    else if (c >= 0x41 && c <= 0x46) digit = c - 0x37;
    else return -1;
    if (i < 8) hi = hi * 16 + digit;
    else lo = lo * 16 + digit;
  }
  if (hi * 2 ** 12 + Math.floor(lo / 2 ** 20) === receivedAt && receivedAt >= 2 ** 36) return lo & 0xfffff;
  return -1;
}

/** Scale marking a number kept as Float64 in value_float (stateLayout.ts). */
export const FLOAT_SCALE = 255;
const POWERS_OF_TEN = Array.from({ length: 16 }, (_, k) => 10 ** k);

/** How the compact layout stores a number; one object reused by every call (no allocation per value). */
export interface CompactNumber {
  mantissa: number;
  /** Digits after the decimal point, or FLOAT_SCALE: the number goes whole to value_float. */
  scale: number;
  /** numberText of the number; set only when scale is FLOAT_SCALE. */
  text: string;
}
const compact: CompactNumber = { mantissa: 0, scale: 0, text: '' };

/**
 * value_mantissa and value_scale of a number: the digits and the count of decimals of its shortest
 * decimal text (numberText), where that text has no exponent and at most 15 digits and 15 decimals.
 * A reading like 21.37 is stored as 2137 and 2: integers that compress to a few bits where the
 * Float64's decimal-looking mantissa does not. Exact by construction: m / 10^k with both exact
 * doubles is one correctly rounded division, the same the server computes (value_number), and it
 * is checked here before m and k are chosen.
 *
 * Found without making the text: the first k with round(v × 10^k) / 10^k === v. That is the text's
 * count of decimals, since a decimal with fewer that reads back as v would be a shorter text, and
 * m is its digits, since v × 10^k is within 0.25 of them while |m| < 10^15 < 2^50. Below 10^-6 the
 * text has an exponent, so those numbers go to value_float (test/adapters/clickhouse/encode-state-rows.test.ts checks
 * this against the text). The result is valid until the next call.
 */
export function compactNumber(value: number): CompactNumber {
  const size = Math.abs(value);
  if (size < 1e15 && !Object.is(value, -0)) {
    if (Number.isInteger(value)) return decimal(value, 0);
    if (size >= 1e-6) {
      for (let scale = 1; scale < POWERS_OF_TEN.length; scale++) {
        const mantissa = Math.round(value * POWERS_OF_TEN[scale]);
        if (Math.abs(mantissa) >= 1e15) break;
        if (mantissa / POWERS_OF_TEN[scale] === value) return decimal(mantissa, scale);
      }
    }
  }
  compact.mantissa = 0;
  compact.scale = FLOAT_SCALE;
  compact.text = numberText(value);
  return compact;
}

function decimal(mantissa: number, scale: number): CompactNumber {
  compact.mantissa = mantissa;
  compact.scale = scale;
  compact.text = '';
  return compact;
}

/** value_mantissa, value_scale, value_float for a number. */
function numberFields(value: number): string {
  const number = compactNumber(value);
  return number.scale === FLOAT_SCALE ? `0\t${FLOAT_SCALE}\t${number.text}` : `${number.mantissa}\t${number.scale}\t0`;
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
