/**
 * SqlExecutor over a node-postgres Pool. Every call checks out one client (a transaction holds it
 * from BEGIN to COMMIT/ROLLBACK); a client that failed for any reason other than an SQL error is
 * destroyed rather than returned to the pool.
 */
import type { Pool, PoolClient } from 'pg';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { SqlExecutor, SqlQueryable, SqlResult } from '../sql-registry/executor.ts';

/** An error that leaves the connection usable: one the server reported for a statement (SQLSTATE), or our own. */
function isSqlError(error: unknown): boolean {
  if (error instanceof FleetError) return true; // thrown by our own code inside a transaction
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

function queryable(client: PoolClient): SqlQueryable {
  return {
    async query<R>(sql: string, params: readonly unknown[] = []): Promise<SqlResult<R>> {
      const result = await client.query(sql, params as unknown[]);
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
    },
    async exec(sql: string): Promise<void> {
      // Without parameters node-postgres uses the simple protocol, which runs several statements.
      await client.query(sql);
    },
  };
}

async function connect(pool: Pool): Promise<PoolClient> {
  try {
    return await pool.connect();
  } catch (error) {
    // Not getting a connection (refused, timed out, pool ended) is unavailability by definition.
    // Socket errors keep their errno code for sqlErrors.ts; the pool's own errors carry none.
    if (typeof (error as { code?: unknown } | null)?.code === 'string') throw error;
    throw new FleetError('UNAVAILABLE', `registry: cannot connect to PostgreSQL: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

async function withClient<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await connect(pool);
  let broken: Error | undefined;
  try {
    return await fn(client);
  } catch (error) {
    if (!isSqlError(error)) broken = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    client.release(broken);
  }
}

export function pgExecutor(pool: Pool): SqlExecutor {
  return {
    query: <R>(sql: string, params?: readonly unknown[]) => withClient(pool, (client) => queryable(client).query<R>(sql, params)),
    exec: (sql) => withClient(pool, (client) => queryable(client).exec(sql)),
    transaction: <T>(fn: (tx: SqlQueryable) => Promise<T>) =>
      withClient(pool, async (client) => {
        await client.query('BEGIN');
        try {
          const result = await fn(queryable(client));
          await client.query('COMMIT');
          return result;
        } catch (error) {
          // A failed ROLLBACK means a broken connection: surface it so the client is destroyed.
          await client.query('ROLLBACK');
          throw error;
        }
      }),
    async close() {
      await pool.end();
    },
  };
}
