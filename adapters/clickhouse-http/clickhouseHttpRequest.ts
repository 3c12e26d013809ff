/**
 * A request to the SQL endpoint as ClickHouse's HTTP interface reads it: the query from `?query=`
 * and/or the POST body (the body follows the parameter's text on a new line), `default_format`,
 * `database`, `param_<name>` values, every other parameter a setting; the credentials from Basic
 * auth, the X-ClickHouse-User/X-ClickHouse-Key headers or the `user`/`password` parameters (one way
 * at a time, as ClickHouse requires).
 */
import { SqlError, type SqlRequest } from './ReadOnlySql.ts';

export interface Credentials {
  user: string;
  password: string;
}

/** Parameters of ClickHouse's HTTP interface that are not settings, and mean nothing to a read-only endpoint. */
const IGNORED = new Set(['query_id', 'session_id', 'session_timeout', 'session_check', 'buffer_size', 'wait_end_of_query', 'quota_key', 'compress', 'decompress', 'enable_http_compression', 'http_zlib_compression_level', 'send_progress_in_http_headers', 'http_headers_progress_interval_ms', 'add_http_cors_header', 'cancel_http_readonly_queries_on_client_close']);
const PROTOCOL = new Set(['query', 'database', 'default_format', 'user', 'password']);
const FORMAT_NAME = /^[A-Za-z][A-Za-z0-9]{0,63}$/;
const DATABASE_NAME = /^[^\0]{1,255}$/;

export function badRequest(code: number, name: string, message: string): SqlError {
  return new SqlError(code, `Code: ${code}. DB::Exception: ${message}. (${name})`);
}

/** The credentials a request presents; user `default` with an empty password when it presents none, as ClickHouse reads it. */
export function credentialsOf(headers: Record<string, string | string[] | undefined>, params: URLSearchParams): Credentials {
  const ways: Credentials[] = [];
  const authorization = single(headers.authorization);
  if (authorization !== undefined) {
    const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(authorization.trim());
    if (!match) throw badRequest(516, 'AUTHENTICATION_FAILED', 'Invalid authentication: only Basic authorization is accepted');
    const text = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = text.indexOf(':');
    ways.push(colon < 0 ? { user: text, password: '' } : { user: text.slice(0, colon), password: text.slice(colon + 1) });
  }
  const headerUser = single(headers['x-clickhouse-user']);
  const headerKey = single(headers['x-clickhouse-key']);
  if (headerUser !== undefined || headerKey !== undefined) ways.push({ user: headerUser ?? 'default', password: headerKey ?? '' });
  if (params.has('user') || params.has('password')) ways.push({ user: params.get('user') ?? 'default', password: params.get('password') ?? '' });
  if (ways.length > 1) throw badRequest(516, 'AUTHENTICATION_FAILED', 'Invalid authentication: it is not allowed to use more than one way of authentication (Basic, X-ClickHouse-User/Key, user/password parameters) at once');
  return ways[0] ?? { user: 'default', password: '' };
}

function single(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) throw badRequest(516, 'AUTHENTICATION_FAILED', 'Invalid authentication: a credential header given more than once');
  return value;
}

/** The SqlRequest of a URL's parameters and a body (empty for GET). */
export function sqlRequestOf(params: URLSearchParams, body: string, maxQueryBytes: number): SqlRequest {
  for (const key of PROTOCOL) {
    if (params.getAll(key).length > 1) throw badRequest(36, 'BAD_ARGUMENTS', `Parameter '${key}' given more than once`);
  }
  const fromUrl = params.get('query') ?? '';
  const query = fromUrl !== '' && body !== '' ? `${fromUrl}\n${body}` : fromUrl + body;
  if (query.trim() === '') throw badRequest(62, 'SYNTAX_ERROR', 'Empty query');
  if (Buffer.byteLength(query) > maxQueryBytes) throw badRequest(62, 'SYNTAX_ERROR', `Max query size exceeded: the query is longer than ${maxQueryBytes} bytes`);
  if (query.includes('\0')) throw badRequest(62, 'SYNTAX_ERROR', 'A NUL byte in the query');
  const format = params.get('default_format') ?? 'TabSeparated';
  if (!FORMAT_NAME.test(format)) throw badRequest(73, 'UNKNOWN_FORMAT', `Unknown format ${JSON.stringify(format.slice(0, 100))}`);
  const database = params.get('database') ?? undefined;
  if (database !== undefined && !DATABASE_NAME.test(database)) throw badRequest(81, 'UNKNOWN_DATABASE', 'Bad database name');
  const settings: Array<[string, string]> = [];
  const values: Record<string, string> = {};
  for (const [key, value] of params) {
    if (PROTOCOL.has(key) || IGNORED.has(key)) continue;
    if (value.includes('\0')) throw badRequest(36, 'BAD_ARGUMENTS', `A NUL byte in parameter '${key.slice(0, 100)}'`);
    if (key.startsWith('param_')) values[key.slice('param_'.length)] = value;
    else settings.push([key, value]);
  }
  return { query, format, database, settings, params: values };
}
