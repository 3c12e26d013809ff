/**
 * A read-only SQL endpoint speaking ClickHouse's HTTP interface, on a listener of its own: GET
 * `/?query=`, POST with the query in the body, `default_format`, `database`, settings and
 * `param_<name>` as URL parameters, `/ping`; so curl, @clickhouse/client and Grafana's ClickHouse
 * data source use the embedded service as they use a ClickHouse server. Read-only is the engine's
 * (ReadOnlySql); this module authenticates, bounds what it reads and runs at once, and answers as
 * ClickHouse does (clickhouseHttpAnswers.ts).
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { badRequest, credentialsOf, sqlRequestOf, type Credentials } from './clickhouseHttpRequest.ts';
import { contentTypeOf, errorBody, errorHeaders, statusOfCode } from './clickhouseHttpAnswers.ts';
import { SqlError, type ReadOnlySql } from './ReadOnlySql.ts';

const gzipAsync = promisify(gzip);

export interface ClickHouseHttpOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** The one operator credential the endpoint accepts. */
  user: string;
  password: string;
  sql: ReadOnlySql;
  /** Longest query accepted (URL parameter and body together), bytes. Default 262 144 (ClickHouse's max_query_size). */
  maxQueryBytes?: number;
  /** Queries run at once; more are refused 503 (code 202, TOO_MANY_SIMULTANEOUS_QUERIES). Default 4. */
  maxConcurrent?: number;
}

export interface ServedClickHouseHttp {
  port: number;
  close(): Promise<void>;
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

export async function serveClickHouseHttp(options: ClickHouseHttpOptions): Promise<ServedClickHouseHttp> {
  const maxQueryBytes = options.maxQueryBytes ?? 262_144;
  const maxConcurrent = options.maxConcurrent ?? 4;
  const expected = { user: digest(options.user), password: digest(options.password) };
  // Both compared in full, in constant time, whichever is wrong: digests make the lengths equal.
  const authentic = (c: Credentials) => Number(timingSafeEqual(digest(c.user), expected.user)) & Number(timingSafeEqual(digest(c.password), expected.password));
  let running = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://endpoint');
    if (url.pathname === '/ping' && (req.method === 'GET' || req.method === 'HEAD')) return void res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8' }).end('Ok.\n');
    if (url.pathname !== '/') throw badRequest(60, 'UNKNOWN_TABLE', `There is no handle ${url.pathname.slice(0, 200)}: send queries to / (GET /?query=… or POST), health checks to /ping`);
    if (req.method !== 'GET' && req.method !== 'POST') throw badRequest(36, 'BAD_ARGUMENTS', `HTTP method ${req.method ?? ''} is not accepted: use GET or POST`);
    const credentials = credentialsOf(req.headers, url.searchParams);
    if (!authentic(credentials)) {
      throw badRequest(516, 'AUTHENTICATION_FAILED', `${credentials.user.slice(0, 64)}: Authentication failed: password is incorrect, or there is no user with such name`);
    }
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding !== 'identity') throw badRequest(36, 'BAD_ARGUMENTS', 'Compressed request bodies are not accepted');
    const body = req.method === 'POST' ? await readBody(req, maxQueryBytes) : '';
    const request = sqlRequestOf(url.searchParams, body, maxQueryBytes);
    if (running >= maxConcurrent) throw badRequest(202, 'TOO_MANY_SIMULTANEOUS_QUERIES', `Too many simultaneous queries. Maximum: ${maxConcurrent}`);
    running++;
    try {
      const answer = await options.sql.run(request);
      const compress = url.searchParams.get('enable_http_compression') === '1' && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
      const payload = compress ? await gzipAsync(answer.body) : answer.body;
      res.writeHead(200, {
        'content-type': contentTypeOf(request.format),
        'x-clickhouse-format': request.format,
        'x-clickhouse-query-id': url.searchParams.get('query_id') ?? randomUUID(),
        'x-clickhouse-server-display-name': 'fleetstream',
        'x-clickhouse-summary': JSON.stringify({ read_rows: String(answer.rowsRead), read_bytes: String(answer.bytesRead), elapsed_ns: String(Math.round(answer.elapsedSeconds * 1e9)) }),
        'cache-control': 'no-store',
        ...(compress ? { 'content-encoding': 'gzip' } : {}),
      });
      res.end(payload);
    } finally {
      running--;
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const e = error instanceof SqlError ? error : new SqlError(1002, `Code: 1002. DB::Exception: ${(error as Error)?.message ?? String(error)}. (UNKNOWN_EXCEPTION)`);
      if (res.headersSent) return void res.destroy();
      // A request refused before its body was read: the connection is not reused for what follows it.
      if (!req.complete) res.setHeader('connection', 'close');
      res.writeHead(statusOfCode(e.clickhouseCode), errorHeaders(e.clickhouseCode)).end(errorBody(e.message));
    });
  });
  server.maxHeadersCount = 100;
  server.headersTimeout = 10_000;
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : options.port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** The body as text, refused once it passes `limit` bytes (the rest is not read). */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return reject(tooLong(limit));
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        reject(tooLong(limit));
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const tooLong = (limit: number) => badRequest(62, 'SYNTAX_ERROR', `Max query size exceeded: the query is longer than ${limit} bytes`);
