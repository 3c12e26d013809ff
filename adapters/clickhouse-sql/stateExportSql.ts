/**
 * The SELECT of an export (engine/ports/stateExport.ts) per format, written so that the engine
 * shapes every row's text itself and the adapter only passes bytes on: CSV through CSVWithNames,
 * NDJSON as one JSON text per row through TabSeparatedRaw (the row is already JSON; Raw adds no
 * escaping), Parquet through the engine's Parquet writer with typed columns. The same SQL runs on
 * ClickHouse 18.16 and on chDB (ClickHouse 26): no function younger than 18.16 is used (Parquet, which only
 * chDB writes, excepted).
 *
 * Rows are read from the states table with FINAL, as the `state_rows` view reads them (each state
 * once, replays folded), but number values come as their exact decimal text where the legacy layout
 * keeps one (the view blanks it).
 *
 * Values from outside go through the binder: query parameters on chDB, escaped literals on 18.16,
 * which has no query parameters. Times are checked safe integers.
 */
import type { ExportFormat } from '../../engine/ports/stateExport.ts';
import { int64Literal, qualifiedTable, quoteString, type StateTableNames } from './stateTable.ts';

/** How a value from outside enters the SQL. */
export interface ExportBinder {
  /** An expression for a list of strings, usable after IN. */
  strings(name: string, values: readonly string[]): string;
}

/** Spliced literals, each escaped by quoteString: for engines without query parameters (18.16). */
export const literalBinder: ExportBinder = {
  strings: (_name, values) => `(${values.map(quoteString).join(', ')})`,
};

/** `{name:Array(String)}` placeholders, their values collected in `params`. */
export function parameterBinder(): ExportBinder & { params: Record<string, unknown> } {
  const params: Record<string, unknown> = {};
  return {
    params,
    strings(name, values) {
      params[name] = [...values];
      return `{${name}:Array(String)}`;
    },
  };
}

export interface ExportSqlInput {
  devices: readonly string[];
  assets?: readonly string[];
  from?: number;
  to?: number;
  format: ExportFormat;
}

/**
 * The output format each export format is written in. CSV without names: chDB's streaming output
 * repeats a format's header in every chunk, so the header is written once, before the engine's
 * bytes (CSV_HEADER).
 */
export const ENGINE_FORMAT: Record<ExportFormat, string> = {
  csv: 'CSV',
  ndjson: 'TabSeparatedRaw',
  parquet: 'Parquet',
};

/** The number's text: the exact decimal the legacy layout keeps, else the Float64's shortest text. */
const NUMBER_TEXT = "if(value_string != '', value_string, toString(value_number))";

/**
 * `ms` (Int64 epoch ms, 1970..2106 as admission allows) as RFC 3339 in UTC with milliseconds:
 * toDateTime's text with a T, then the milliseconds padded from 1000+ms.
 */
function isoTime(ms: string): string {
  return `concat(replaceOne(toString(toDateTime(toUInt32(intDiv(${ms}, 1000)), 'UTC')), ' ', 'T'), '.', substring(toString(1000 + ${ms} % 1000), 2, 3), 'Z')`;
}

/** JSON string escapes: backslash and quote first, then every control character (RFC 8259 §7). */
function jsonString(expr: string): string {
  let out = `replaceAll(replaceAll(${expr}, '\\\\', '\\\\\\\\'), '"', '\\\\"')`;
  const short: Record<number, string> = { 8: 'b', 9: 't', 10: 'n', 12: 'f', 13: 'r' };
  for (let code = 0; code < 0x20; code++) {
    const escaped = short[code] !== undefined ? `\\\\${short[code]}` : `\\\\u00${code.toString(16).padStart(2, '0')}`;
    out = `replaceAll(${out}, '\\x${code.toString(16).padStart(2, '0')}', '${escaped}')`;
  }
  return `concat('"', ${out}, '"')`;
}

/**
 * A string value as CSV shows it: one starting with = + - @ (or TAB, CR) gets a leading single
 * quote, so a spreadsheet opening the file does not run it as a formula (OWASP "CSV injection").
 * Numbers are not guarded: a negative number is a number.
 */
const CSV_TEXT = "if(substring(value_string, 1, 1) IN ('=', '+', '-', '@', '\\t', '\\r'), concat('''', value_string), value_string)";

function valueText(format: 'csv' | 'plain'): string {
  return `multiIf(value_kind = 'number', ${NUMBER_TEXT}, value_kind = 'string', ${format === 'csv' ? CSV_TEXT : 'value_string'},
    value_kind = 'boolean', if(value_bool != 0, 'true', 'false'), value_kind = 'json', value_string, '')`;
}

const JSON_VALUE = `multiIf(value_kind = 'number', ${NUMBER_TEXT}, value_kind = 'string', ${jsonString('value_string')},
    value_kind = 'boolean', if(value_bool != 0, 'true', 'false'), value_kind = 'json', value_string, 'null')`;

export const CSV_HEADER = 'device,asset,at,received_at,kind,value,uplink_id,seq\n';

/** Device ids and asset names are registry identifiers (base62, [A-Za-z0-9_.-]): no JSON escape needed. */
const COLUMNS: Record<ExportFormat, string> = {
  csv: `device_id AS device, asset, ${isoTime('ts')} AS at, ${isoTime('received_at')} AS received_at, toString(value_kind) AS kind,
  ${valueText('csv')} AS value, uplink_id, seq`,
  ndjson: `concat('{"device":"', device_id, '","asset":"', asset, '","at":"', ${isoTime('ts')}, '","receivedAt":"', ${isoTime('received_at')},
  '","kind":"', toString(value_kind), '","value":', ${JSON_VALUE}, ',"uplinkId":', ${jsonString('uplink_id')}, ',"seq":', toString(seq), '}') AS line`,
  parquet: `device_id AS device, asset, fromUnixTimestamp64Milli(ts, 'UTC') AS at, fromUnixTimestamp64Milli(received_at, 'UTC') AS received_at,
  toString(value_kind) AS kind, ${valueText('plain')} AS value, if(value_kind = 'number', toNullable(value_number), NULL) AS number, uplink_id, seq`,
};

export function exportSql(names: StateTableNames, q: ExportSqlInput, bind: ExportBinder): string {
  let where = `device_id IN ${bind.strings('devices', q.devices)}`;
  if (q.assets !== undefined) where += ` AND asset IN ${bind.strings('assets', q.assets)}`;
  if (q.from !== undefined) where += ` AND ts >= ${int64Literal(q.from)}`;
  if (q.to !== undefined) where += ` AND ts < ${int64Literal(q.to)}`;
  return `SELECT ${COLUMNS[q.format]}
FROM ${qualifiedTable(names)} FINAL
WHERE ${where}`;
}
