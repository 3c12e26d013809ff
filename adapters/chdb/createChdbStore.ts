/**
 * Embedded state store (DESIGN.md §2): ClickHouse in-process through chDB, data in a directory.
 * Queries and inserts use chDB's async APIs, which run on libuv worker threads, so the event loop
 * keeps serving while the engine works.
 *
 * chDB also offers `chdb/connection`, a Connection for @clickhouse/client, which would let both
 * adapters share the client calls too. It is not used: the SQL is already shared
 * (adapters/clickhouse-sql), and the native Session takes a TSV insert as bytes with no client-side
 * stream or JSON layer in between.
 *
 * Large state batches go as RowBinary through a file: the Session's raw insert takes text formats
 * only (its payload travels inline in the query, which a binary payload's NUL bytes would cut), so
 * the payload is written to a file in the data directory and read by `INSERT … SELECT FROM
 * file(…, RowBinary, …)`. The engine copies the binary fields where it would parse text: 2-3× the
 * rows/s of TabSeparated for 40 000-row inserts (bench/pipeline.bench.ts). The file is only the
 * insert's input: the insert has returned, so the rows are in the table, before it is removed.
 */
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Session, type StreamChunk } from 'chdb';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import { fleetErrorFromClickHouseCode } from '../clickhouse-sql/clickhouseErrors.ts';
import { quoteString } from '../clickhouse-sql/stateTable.ts';
import { createSqlStateStore, type SqlStateStore, type SqlStateStoreOptions } from '../clickhouse-sql/createSqlStateStore.ts';
import type { SqlExecutor } from '../clickhouse-sql/SqlExecutor.ts';
import { processAlive } from '../processAlive.ts';

export interface ChdbStoreOptions extends SqlStateStoreOptions {
  /**
   * Data directory (created when missing). chDB allows one data directory per process: opening a
   * second store on another directory fails UNAVAILABLE until the first is closed.
   */
  dir: string;
  /** Per-statement deadline in ms; none by default. chDB rejects at the deadline but the engine
   * finishes the statement in the background (an insert may still land; re-appending is harmless). */
  timeoutMs?: number;
}

export function createChdbStore(options: ChdbStoreOptions): SqlStateStore {
  if (typeof options?.dir !== 'string' || options.dir === '') throw new TypeError('createChdbStore: dir is required');
  let session!: Session;
  const timeout = options.timeoutMs;
  // Payload files of RowBinary inserts, in a directory of this store's own (chDB lets several
  // sessions of one process share a data directory), removed on close.
  let payloads!: string;
  let payloadCount = 0;
  /**
   * Parquet: chDB's streaming output writes a whole Parquet file per chunk, so the engine writes one
   * file (its Parquet writer holds a row group at a time) into the payload directory, which is then
   * read out and removed. chDB cannot interrupt a single-shot query, so an abort KILLs it by the
   * marker its text carries.
   */
  async function parquetFile(sql: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
    const n = payloadCount++;
    const file = join(payloads, `${n}.parquet`);
    const marker = `fleetstream_export_${process.pid}_${n}`;
    // Row groups of 64 Ki rows encoded one at a time, by one thread: the writer holds one group, not
    // 1 Mi rows per thread; one thread also wrote 10 M states 3× as fast here as the default. No
    // bloom filters and no page index: the writer keeps both for every row group until the file's
    // footer, so its memory grew with the rows (43 MB for 2 M rows, 121 MB for 20 M; without them
    // 36 and 37 MB). Readers lose only their predicate push-down on the downloaded file.
    const insert = `/* ${marker} */ INSERT INTO FUNCTION file(${quoteString(file)}, 'Parquet') ${sql}
SETTINGS output_format_parquet_row_group_size = 65536, output_format_parquet_parallel_encoding = 0, max_threads = 1,
  output_format_parquet_write_bloom_filter = 0, output_format_parquet_write_page_index = 0`;
    const writer = new Session(options.dir);
    const kill = (): void => {
      const killer = new Session(options.dir);
      void killer.queryAsync(`KILL QUERY WHERE query LIKE ${quoteString(`%${marker}%`)} AND query NOT LIKE '%KILL QUERY%' SYNC`).catch(() => undefined).finally(() => killer.close());
    };
    signal.addEventListener('abort', kill, { once: true });
    try {
      await writer.queryBindAsync(insert, params ?? {}, {});
      // No row, no file: the engine writes none. The same columns, no rows, as a Parquet file.
      if (!existsSync(file)) {
        const empty = await writer.queryBindAsync(`${sql}\nLIMIT 0`, params ?? {}, { format: 'Parquet' });
        const bytes = Buffer.from(empty.bytes());
        return (async function* () { yield bytes; })();
      }
    } catch (error) {
      await unlink(file).catch(() => {});
      throw chdbError(error);
    } finally {
      signal.removeEventListener('abort', kill);
      writer.close();
    }
    return removedAfter(file);
  }

  const executor: SqlExecutor = {
    async command(sql) {
      try {
        await session.queryAsync(sql, { timeout });
      } catch (error) {
        throw chdbError(error);
      }
    },
    async select(sql) {
      let text: string;
      try {
        text = (await session.queryAsync(sql, { format: 'JSONEachRow', timeout })).text();
      } catch (error) {
        throw chdbError(error);
      }
      return parseJsonEachRow(text);
    },
    async insertTsv(table, columns, payload) {
      try {
        await session.insert({ table, columns, values: payload, format: 'TabSeparated', timeout });
      } catch (error) {
        throw chdbError(error);
      }
    },
    async insertRowBinary(table, columns, types, payload) {
      const file = join(payloads, `${payloadCount++}.bin`);
      const structure = columns.map((column, i) => `${column} ${types[i]}`).join(', ');
      try {
        await writeFile(file, payload);
        // optimize_on_insert = 0: the engine does not fold equal keys inside the inserted block
        // (ReplacingMergeTree); every read folds them with FINAL anyway, as it must for a replay
        // that comes in a later insert. 1.1-1.2× the rows/s of the pipeline bench.
        await session.queryAsync(
          `INSERT INTO ${table} (${columns.join(', ')}) SELECT * FROM file(${quoteString(file)}, 'RowBinary', ${quoteString(structure)}) SETTINGS optimize_on_insert = 0`,
          { timeout },
        );
      } catch (error) {
        throw chdbError(error);
      } finally {
        await unlink(file).catch(() => {});
      }
    },
    // Each export reads in a Session of its own on the store's directory (a Session streams one
    // query at a time), closed when its stream ends; chDB hands the output over chunk by chunk.
    bindsParameters: true,
    async stream(sql, format, params, signal) {
      if (format === 'Parquet') return parquetFile(sql, params, signal);
      let reader: Session;
      try {
        reader = new Session(options.dir);
      } catch (error) {
        throw chdbError(error);
      }
      let chunks: AsyncIterator<StreamChunk>;
      let first: IteratorResult<StreamChunk>;
      try {
        const query = params === undefined ? reader.queryStream(sql, { format, signal }) : reader.queryStreamBind(sql, params, { format, signal });
        chunks = query[Symbol.asyncIterator]();
        first = await chunks.next();
      } catch (error) {
        reader.close();
        throw chdbError(error);
      }
      return streamChunks(reader, chunks, first);
    },
    async close() {
      session.close();
      rmSync(payloads, { recursive: true, force: true });
    },
  };
  // Options are checked (by createSqlStateStore) before the data directory is opened.
  const store = createSqlStateStore(executor, options);
  try {
    session = new Session(options.dir);
  } catch (error) {
    throw chdbError(error);
  }
  try {
    payloads = payloadDirectory(options.dir);
  } catch (error) {
    session.close();
    throw new FleetError('UNAVAILABLE', `chDB: no payload directory in ${options.dir}: ${(error as Error).message}`, { cause: error, retriable: false });
  }
  return store;
}

/**
 * A fresh directory for this store's payload files, named after the process; directories that
 * processes no longer running left behind (a crash between writing a payload and removing it) go.
 */
function payloadDirectory(dir: string): string {
  const root = join(dir, 'user_files', 'fleetstream-inserts');
  mkdirSync(root, { recursive: true });
  for (const name of readdirSync(root)) {
    const pid = Number(name.split('-')[0]);
    if (Number.isSafeInteger(pid) && pid !== process.pid && !processAlive(pid)) rmSync(join(root, name), { recursive: true, force: true });
  }
  return mkdtempSync(join(root, `${process.pid}-`));
}

/**
 * A chDB stream's chunks as bytes (copied: a chunk's memory is chDB's). Its Session is closed when
 * the chunks end, fail, or the reader returns — also before reading any (so not a generator, whose
 * `finally` only runs once started).
 */
function streamChunks(reader: Session, chunks: AsyncIterator<StreamChunk>, first: IteratorResult<StreamChunk>): AsyncIterable<Uint8Array> {
  let pending: IteratorResult<StreamChunk> | undefined = first;
  let open = true;
  const close = async (): Promise<void> => {
    if (!open) return;
    open = false;
    try {
      await chunks.return?.();
    } finally {
      reader.close();
    }
  };
  const iterator: AsyncIterator<Uint8Array> = {
    async next() {
      try {
        while (open) {
          const result = pending ?? await chunks.next();
          pending = undefined;
          if (result.done) break;
          if (result.value.numBytes > 0) return { done: false, value: Buffer.from(result.value.raw()) };
        }
      } catch (error) {
        await close().catch(() => undefined);
        throw chdbError(error);
      }
      await close();
      return { done: true, value: undefined };
    },
    async return() {
      await close();
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

/** A file's bytes, the file removed once they are read or the reader leaves. */
function removedAfter(file: string): AsyncIterable<Uint8Array> {
  const stream = createReadStream(file, { highWaterMark: 256 * 1024 });
  // Errors reach the reader through the iterator; one after the reader left (a file removed while
  // opening) must not become an uncaught 'error' event.
  stream.on('error', () => undefined);
  const chunks = stream[Symbol.asyncIterator]();
  const remove = async (): Promise<void> => {
    stream.destroy();
    await unlink(file).catch(() => {});
  };
  const iterator: AsyncIterator<Uint8Array> = {
    async next() {
      try {
        const result = (await chunks.next()) as IteratorResult<Uint8Array>;
        if (result.done) await remove();
        return result;
      } catch (error) {
        await remove();
        throw new FleetError('INTERNAL', `chDB: the export file could not be read: ${(error as Error).message}`, { cause: error });
      }
    },
    async return() {
      await remove();
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

export function parseJsonEachRow(text: string): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end > start) rows.push(JSON.parse(text.slice(start, end)) as Record<string, unknown>);
    start = end + 1;
  }
  return rows;
}

/** chDB errors carry a stable `code` (CHDB_*) and, for engine errors, the ClickHouse code. */
export function chdbError(error: unknown): FleetError {
  if (error instanceof FleetError) return error;
  const e = error as { code?: unknown; clickhouseCode?: unknown; message?: unknown } | null;
  const message = `chDB: ${typeof e?.message === 'string' ? e.message : String(error)}`;
  if (typeof e?.clickhouseCode === 'number') return fleetErrorFromClickHouseCode(e.clickhouseCode, message, error);
  switch (e?.code) {
    case 'CHDB_CLOSED':
      return new FleetError('CLOSED', message, { cause: error });
    case 'CHDB_TIMEOUT':
    case 'CHDB_ABORT':
      return new FleetError('TIMEOUT', message, { cause: error });
    case 'CHDB_CONNECTION':
      // Opening failed or another data directory is live in this process: configuration, not load.
      return new FleetError('UNAVAILABLE', message, { cause: error, retriable: false });
    default:
      return new FleetError('INTERNAL', message, { cause: error });
  }
}
