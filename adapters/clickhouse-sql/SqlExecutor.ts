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
  close(): Promise<void>;
}
