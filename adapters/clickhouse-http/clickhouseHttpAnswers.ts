/**
 * How ClickHouse's HTTP interface answers: the HTTP status of an exception code
 * (HTTPHandler's exceptionCodeToHTTPStatus), the error body and headers clients parse
 * (@clickhouse/client reads "Code: N. DB::Exception: … (NAME)" and X-ClickHouse-Exception-Code),
 * and the Content-Type of an output format.
 */
import type { OutgoingHttpHeaders } from 'node:http';

const UNAUTHORIZED = new Set([192, 193, 194, 516]); // UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD, AUTHENTICATION_FAILED
const FORBIDDEN = new Set([164, 497]); // READONLY, ACCESS_DENIED
const NOT_FOUND = new Set([60, 81, 46]); // UNKNOWN_TABLE, UNKNOWN_DATABASE, UNKNOWN_FUNCTION
const BAD_REQUEST = new Set([6, 26, 27, 36, 38, 41, 42, 43, 47, 53, 62, 72, 73, 115, 456, 457]);
const UNAVAILABLE = new Set([202]); // TOO_MANY_SIMULTANEOUS_QUERIES

export function statusOfCode(code: number): number {
  if (UNAUTHORIZED.has(code)) return 401;
  if (FORBIDDEN.has(code)) return 403;
  if (NOT_FOUND.has(code)) return 404;
  if (BAD_REQUEST.has(code)) return 400;
  if (UNAVAILABLE.has(code)) return 503;
  return 500;
}

export function errorHeaders(code: number): OutgoingHttpHeaders {
  return { 'content-type': 'text/plain; charset=UTF-8', 'x-clickhouse-exception-code': String(code), 'cache-control': 'no-store' };
}

/** ClickHouse's text ends with a newline; chDB's may not. */
export function errorBody(message: string): string {
  return message.endsWith('\n') ? message : `${message}\n`;
}

export function contentTypeOf(format: string): string {
  const f = format.toLowerCase();
  if (f.startsWith('json') || f === 'ndjson') return 'application/json; charset=UTF-8';
  if (f.startsWith('tabseparated') || f.startsWith('tsv')) return 'text/tab-separated-values; charset=UTF-8';
  if (f.startsWith('csv')) return 'text/csv; charset=UTF-8; header=absent';
  if (['native', 'rowbinary', 'rowbinarywithnames', 'rowbinarywithnamesandtypes', 'parquet', 'arrow', 'arrowstream', 'orc', 'avro'].includes(f)) return 'application/octet-stream';
  return 'text/plain; charset=UTF-8';
}
