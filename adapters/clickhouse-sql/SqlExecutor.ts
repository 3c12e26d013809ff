/**
 * What the chDB and ClickHouse server adapters each provide to the SQL stores of this folder
 * (states, rejections, command history): text moved to an engine and back. Every method rejects
 * with a FleetError.
 */
export interface SqlExecutor {
  /** A statement without a result (DDL). */
  command(sql: string): Promise<void>;
  /** A SELECT written without FORMAT; returns its rows as JSONEachRow objects. */
  select(sql: string): Promise<Record<string, unknown>[]>;
  /** Inserts a TabSeparated payload; resolves once the engine has committed it. */
  insertTsv(table: string, columns: readonly string[], payload: Buffer): Promise<void>;
  /**
   * Inserts a RowBinary payload whose columns have these types (as RowBinary carries them), where
   * the engine can take one; resolves once the engine has committed it.
   */
  insertRowBinary?(table: string, columns: readonly string[], types: readonly string[], payload: Buffer): Promise<void>;
  /**
   * Smallest insert, in rows, sent as RowBinary where insertRowBinary exists; smaller ones go as
   * TabSeparated. Default 5 000 (what a binary insert costs beyond a text one differs per engine).
   */
  readonly rowBinaryFromRows?: number;
  /**
   * Streams a SELECT (written without FORMAT) in the engine's output `format`, as the engine writes
   * it; resolves once the engine has accepted the query. `params` fill `{name:Type}` placeholders,
   * given only where `bindsParameters`. Aborting `signal` stops the query. Where absent: no export.
   */
  stream?(sql: string, format: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>>;
  /** The engine takes query parameters (`{name:Type}`): chDB; ClickHouse 18.16 has none. */
  readonly bindsParameters?: boolean;
  close(): Promise<void>;
}
