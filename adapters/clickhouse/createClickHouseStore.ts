/**
 * Distributed state store (DESIGN.md §2): a ClickHouse server over HTTP through @clickhouse/client,
 * running the SQL shared with the chDB adapter (adapters/clickhouse-sql).
 *
 * Works against ClickHouse 18.16 as is: the client sends plain POSTs with only `query_id` (and
 * `query` for inserts) in the URL and no settings unless asked. Two 18.16 gaps are handled here
 * rather than by a different transport:
 * - 18.16 error bodies ("Code: 60, e.displayText() = …") lack the "(NAME)" suffix the client parses,
 *   so the client hands back a plain Error; the ClickHouse code is read from the body's head.
 * - the client's own timeout error is only recognisable by its text, so each call carries an
 *   AbortSignal with our deadline and a timeout is recognised by that signal.
 */
import { ClickHouseError, ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { Readable } from 'node:stream';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import { clickhouseCodeOf, fleetErrorFromClickHouseCode } from '../clickhouse-sql/clickhouseErrors.ts';
import { createSqlStateStore, type SqlStateStore, type SqlStateStoreOptions } from '../clickhouse-sql/createSqlStateStore.ts';
import type { SqlExecutor } from '../clickhouse-sql/SqlExecutor.ts';

export interface ClickHouseStoreOptions extends SqlStateStoreOptions {
  /** HTTP interface, e.g. http://127.0.0.1:8123. */
  url: string;
  /** Default 'default'. */
  username?: string;
  /** Default ''. */
  password?: string;
  /** Deadline per statement, ms; past it the call fails TIMEOUT (retriable). Default 30 000. */
  requestTimeoutMs?: number;
  /** Most sockets kept open to the server. Default 10. */
  maxOpenConnections?: number;
}

/** Network failures that say "the server is not reachable right now". */
const TRANSIENT_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ERR_SOCKET_CONNECTION_TIMEOUT',
]);

export function createClickHouseStore(options: ClickHouseStoreOptions): SqlStateStore {
  if (typeof options?.url !== 'string' || options.url === '') throw new TypeError('createClickHouseStore: url is required');
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  let client!: ReturnType<typeof createClient>;

  async function call<T>(run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      return await run(signal);
    } catch (error) {
      throw clickhouseServerError(error, signal);
    }
  }

  const executor: SqlExecutor = {
    async command(sql) {
      await call((abort_signal) => client.command({ query: sql, abort_signal }));
    },
    async select(sql) {
      return call(async (abort_signal) => {
        const result = await client.query({ query: sql, format: 'JSONEachRow', abort_signal });
        return result.json<Record<string, unknown>>();
      });
    },
    async insertTsv(table, columns, payload) {
      await call((abort_signal) =>
        client.insert({
          table,
          columns: columns as [string, ...string[]],
          // A byte stream: the client passes raw formats through untouched.
          values: Readable.from([payload], { objectMode: false }),
          format: 'TabSeparated',
          abort_signal,
        }),
      );
    },
    // A RowBinary insert is the same request as a TabSeparated one, without the text to make and
    // parse. 18.16, 1 000-row appends alternating 12 times: 1.3× the rows/s of text with the
    // server's file system quiet, no difference beyond the noise (0.9×, rounds 0.6-1.6×) while
    // the server was slowed by part files (see bench/store.bench.ts); the 0.7× that set a 5 000-row
    // threshold was measured with the binary case right after the text case's DROP.
    rowBinaryFromRows: 1,
    async insertRowBinary(table, columns, _types, payload) {
      // The client's insert() does not take RowBinary; exec() streams any format's bytes as is.
      await call(async (abort_signal) => {
        const result = await client.exec({
          query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT RowBinary`,
          values: Readable.from([payload], { objectMode: false }),
          abort_signal,
        });
        result.stream.resume();
        await new Promise((resolve, reject) => result.stream.on('end', resolve).on('error', reject));
      });
    },
    // No deadline of our own: an export runs as long as its reader reads; the reader's signal stops it.
    async stream(sql, format, _params, signal) {
      let result;
      try {
        result = await client.exec({ query: `${sql}\nFORMAT ${format}`, abort_signal: signal });
      } catch (error) {
        throw clickhouseServerError(error, signal);
      }
      return serverChunks(result.stream, signal);
    },
    async close() {
      await client.close();
    },
  };
  // Options are checked (by createSqlStateStore) before a client is made.
  const store = createSqlStateStore(executor, options);
  client = createClient({
    url: options.url,
    username: options.username ?? 'default',
    password: options.password ?? '',
    // Our AbortSignal fires first; the client's own timer is only a backstop.
    request_timeout: timeoutMs + 5_000,
    max_open_connections: options.maxOpenConnections ?? 10,
    application: 'fleetstream',
    // Every failure reaches the caller as a FleetError; the client logging it too would repeat
    // each one (and flood the log while a batcher retries through an outage).
    log: { level: ClickHouseLogLevel.OFF },
  });
  return store;
}

/**
 * The answer's bytes as they arrive, the socket released when they end, fail or the reader returns
 * (also before reading any). A server that fails after it began answering (18.16 streams with HTTP
 * 200) writes its exception into the body; the reader gets that text at the end.
 */
function serverChunks(stream: Readable, signal: AbortSignal): AsyncIterable<Uint8Array> {
  const chunks = stream[Symbol.asyncIterator]();
  const iterator: AsyncIterator<Uint8Array> = {
    async next() {
      try {
        return (await chunks.next()) as IteratorResult<Uint8Array>;
      } catch (error) {
        stream.destroy();
        throw clickhouseServerError(error, signal);
      }
    },
    async return() {
      stream.destroy();
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

export function clickhouseServerError(error: unknown, signal?: AbortSignal): FleetError {
  if (error instanceof FleetError) return error;
  const message = `ClickHouse: ${error instanceof Error ? error.message : String(error)}`;
  if (signal?.aborted) return new FleetError('TIMEOUT', message, { cause: error });
  if (error instanceof ClickHouseError) {
    const code = Number(error.code);
    if (Number.isInteger(code)) return fleetErrorFromClickHouseCode(code, message, error);
  }
  const socketCode = (error as { code?: unknown } | null)?.code;
  if (socketCode === 'ETIMEDOUT') return new FleetError('TIMEOUT', message, { cause: error });
  if (typeof socketCode === 'string' && TRANSIENT_SOCKET_CODES.has(socketCode)) {
    return new FleetError('UNAVAILABLE', message, { cause: error });
  }
  // An error answer with no body: the client makes Error('') of it. A server that is stopping
  // answers so (seen while the server went down under an engine's appends); it names no fault of
  // the query, so the append is retried like one refused by a closed socket.
  if (error instanceof Error && error.message.trim() === '') return new FleetError('UNAVAILABLE', `${message}(an error answer without a body: the server may be stopping)`, { cause: error });
  if (error instanceof Error) {
    const code = clickhouseCodeOf(error.message);
    if (code !== undefined) return fleetErrorFromClickHouseCode(code, message, error);
  }
  return new FleetError('INTERNAL', message, { cause: error });
}
