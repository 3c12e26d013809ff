/**
 * SqlExecutor over PGlite (PostgreSQL compiled to WASM, in this process). PGlite is one backend:
 * it runs one statement at a time and queues the rest, and its transaction() holds that backend
 * for the whole callback, so transactions are serialised as they would be under one connection.
 */
import type { PGlite, Transaction } from '@electric-sql/pglite';
import type { SqlExecutor, SqlQueryable, SqlResult } from '../sql-registry/executor.ts';

function queryable(db: PGlite | Transaction): SqlQueryable {
  return {
    async query<R>(sql: string, params: readonly unknown[] = []): Promise<SqlResult<R>> {
      const result = await db.query<R>(sql, params as unknown[]);
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await db.exec(sql);
    },
  };
}

/** Wraps an open PGlite; `onClose` runs after the database closed (e.g. to release a data-dir lock). */
export function pgliteExecutor(db: PGlite, onClose: () => Promise<void> = async () => {}): SqlExecutor {
  const base = queryable(db);
  return {
    ...base,
    transaction: (fn) => db.transaction((tx) => fn(queryable(tx))),
    async close() {
      try {
        if (!db.closed) await db.close();
      } finally {
        await onClose();
      }
    },
  };
}
