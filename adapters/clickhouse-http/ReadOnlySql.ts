/**
 * What the ClickHouse-compatible SQL endpoint (serveClickHouseHttp.ts) and the admin CLI's `sql`
 * command need from an engine: one analyst's query, run read-only, its output in a ClickHouse
 * format. The embedded store's chDB implements it (adapters/chdb/createChdbReadOnlySql.ts).
 */

export interface SqlRequest {
  /** One statement, as the client sent it (a FORMAT clause in it wins over `format`). */
  query: string;
  /** Output format when the query names none (ClickHouse's `default_format`; TabSeparated by default). */
  format: string;
  /** Database the query's unqualified names resolve in (ClickHouse's `database` parameter). */
  database?: string;
  /** ClickHouse settings for this query, applied before the query is made read-only. */
  settings: ReadonlyArray<readonly [name: string, value: string]>;
  /** Values of the query's `{name:Type}` placeholders (ClickHouse's `param_<name>`). */
  params: Readonly<Record<string, string>>;
}

export interface SqlAnswer {
  /** The query's output, in the format asked for. */
  body: Uint8Array;
  rowsRead: number;
  bytesRead: number;
  elapsedSeconds: number;
}

/**
 * A refusal in ClickHouse's terms: its exception code and name (`164`, `READONLY`) and the text
 * ClickHouse would print ("Code: 164. DB::Exception: … (READONLY)").
 */
export class SqlError extends Error {
  readonly clickhouseCode: number;
  constructor(clickhouseCode: number, message: string) {
    super(message);
    this.name = 'SqlError';
    this.clickhouseCode = clickhouseCode;
  }
}

export interface ReadOnlySql {
  /** Runs `request` so that the engine refuses any write; rejects with SqlError. */
  run(request: SqlRequest): Promise<SqlAnswer>;
}
