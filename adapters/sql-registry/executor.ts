/**
 * The minimal SQL surface the registry is written against. adapters/pglite and adapters/postgres
 * implement it; everything above it is one code path with one SQL dialect (PostgreSQL 15+).
 * Implementations throw the vendor's own errors; sqlErrors.ts maps them to FleetErrors in one table.
 */

export interface SqlResult<R> {
  rows: R[];
  /** Rows inserted, updated or deleted by the statement (0 for a SELECT without rows). */
  rowCount: number;
}

export interface SqlQueryable {
  /** One statement with `$1…$n` parameters. JSON parameters are passed as text with an explicit `::jsonb` cast. */
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<SqlResult<R>>;
  /** A script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface SqlExecutor extends SqlQueryable {
  /**
   * Runs `fn` in one transaction on one connection: committed when `fn` resolves, rolled back when
   * it throws (the error is rethrown unchanged).
   */
  transaction<T>(fn: (tx: SqlQueryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
