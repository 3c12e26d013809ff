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

/** 16 upper-case hex digits: the shape of an id made by engine/ids.ts newUplinkId. */
const ORDERED_ID = /^[0-9A-F]{16}$/;

/**
 * The compact layout's row (stateLayout.ts COMPACT_COLUMNS). An ordered uplink id whose time is the
 * row's receive time is written as its low 20 bits; any other id verbatim.
 */
export function encodeCompactStateRowsTsv(rows: readonly StateRow[], numberText: boolean): Buffer {
  const lines = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    lines[i] = `${tsvField(row.deviceId)}\t${tsvField(row.asset)}\t${row.ts}\t${row.receivedAt}\t${uplinkFields(row.uplinkId, row.receivedAt)}\t${numberText ? valueFields(row.value) : compactValueFields(row.value)}\n`;
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

/** As valueFields, without the decimal copy of a number (the server parses it exactly). */
function compactValueFields(value: JsonValue): string {
  return typeof value === 'number' ? `number\t${numberText(value)}\t\t0` : valueFields(value);
}
