/**
 * Analysts' SQL on the embedded store while the service runs: chDB binds one data directory per
 * process, so nobody else can open it; this runs their queries in the service's own process.
 *
 * Each query gets a Session of its own on the store's directory (chDB lets sessions of one process
 * share it; each carries its own settings and current database, so nothing one query sets reaches
 * another, and opening one costs ~0.2 ms). In that session the client's settings are SET, then this
 * module's limits, then `readonly = 1`: from there the engine itself refuses every write — INSERT,
 * CREATE, DROP, ALTER, table functions that write or read files and URLs — and any change of a
 * setting, `readonly` included (ClickHouse's code 164, READONLY). No SQL is parsed here.
 */
import { Session } from 'chdb';
import { quoteString } from '../clickhouse-sql/stateTable.ts';
import { SqlError, type ReadOnlySql, type SqlAnswer, type SqlRequest } from '../clickhouse-http/ReadOnlySql.ts';

export interface ChdbReadOnlySqlOptions {
  /** The data directory of the process's chDB store (the only one chDB will open in this process). */
  dir: string;
  /** Longest a query may run, seconds (ClickHouse's max_execution_time; a client may ask for less). Default 60. */
  maxExecutionSeconds?: number;
  /** Largest result, bytes before formatting (max_result_bytes): chDB hands the whole answer over at once. Default 256 MiB. */
  maxResultBytes?: number;
}

const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export function createChdbReadOnlySql(options: ChdbReadOnlySqlOptions): ReadOnlySql {
  const maxSeconds = options.maxExecutionSeconds ?? 60;
  const maxResultBytes = options.maxResultBytes ?? 256 * 1024 * 1024;
  return {
    async run(request: SqlRequest): Promise<SqlAnswer> {
      const statements = prelude(request, maxSeconds, maxResultBytes);
      let session: Session;
      try {
        session = new Session(options.dir);
      } catch (error) {
        throw sqlError(error);
      }
      try {
        for (const statement of statements) await session.queryAsync(statement);
        const format = request.format;
        const result = Object.keys(request.params).length > 0
          ? await session.queryBindAsync(request.query, request.params, { format })
          : await session.queryAsync(request.query, { format });
        return { body: result.bytes(), rowsRead: result.rowsRead, bytesRead: result.bytesRead, elapsedSeconds: result.elapsed };
      } catch (error) {
        throw sqlError(error);
      } finally {
        session.close();
      }
    },
  };
}

/** The statements that set the session up: the database, the client's settings, the limits, then readonly. */
function prelude(request: SqlRequest, maxSeconds: number, maxResultBytes: number): string[] {
  const out: string[] = [];
  if (request.database !== undefined) out.push(`USE \`${request.database.replaceAll('\\', '\\\\').replaceAll('`', '\\`')}\``);
  let seconds = maxSeconds;
  for (const [name, value] of request.settings) {
    if (!SETTING_NAME.test(name)) throw new SqlError(115, `Code: 115. DB::Exception: Unknown setting '${name.slice(0, 200)}'. (UNKNOWN_SETTING)`);
    // Read-only is this endpoint's to set, last; a client asking for it (1, 2) gets it, one asking it off is refused.
    if (name === 'readonly') {
      if (value === '1' || value === '2') continue;
      throw new SqlError(164, "Code: 164. DB::Exception: Cannot modify 'readonly' setting in readonly mode. (READONLY)");
    }
    // The client may ask for a shorter deadline, never a longer one (0 is "none" to ClickHouse).
    if (name === 'max_execution_time') {
      const asked = Number(value);
      if (Number.isFinite(asked) && asked > 0) seconds = Math.min(seconds, asked);
      continue;
    }
    out.push(`SET ${name} = ${quoteString(value)}`);
  }
  for (const name of Object.keys(request.params)) {
    if (!PARAM_NAME.test(name)) throw new SqlError(456, `Code: 456. DB::Exception: Bad query parameter name '${name.slice(0, 200)}'. (UNKNOWN_QUERY_PARAMETER)`);
  }
  out.push(`SET max_execution_time = ${seconds}`, `SET max_result_bytes = ${maxResultBytes}`, "SET result_overflow_mode = 'throw'", 'SET readonly = 1');
  return out;
}

/** chDB's errors carry the ClickHouse code and ClickHouse's own text. */
function sqlError(error: unknown): SqlError {
  if (error instanceof SqlError) return error;
  const e = error as { clickhouseCode?: unknown; message?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : String(error);
  return new SqlError(typeof e?.clickhouseCode === 'number' ? e.clickhouseCode : 1002, message.startsWith('Code: ') ? message : `Code: 1002. DB::Exception: ${message}. (UNKNOWN_EXCEPTION)`);
}
