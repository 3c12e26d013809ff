/**
 * What every SQL module of the registry shares: the executor, the clock, `guard` (refuses after
 * close, maps driver errors through mapSqlError) and the helpers more than one module needs.
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import type { TokenScope } from '../../engine/ports/registry.ts';
import { hashToken, newToken } from '../../engine/access/tokens.ts';
import type { SqlExecutor, SqlQueryable } from './executor.ts';
import { toNamed, type NamedRow } from './rows.ts';
import { mapSqlError } from './sqlErrors.ts';

export interface SqlContext {
  executor: SqlExecutor;
  clock: Clock;
  guard<T>(fn: () => Promise<T>): Promise<T>;
  /** A new bearer token of `scope` for `subjectId`, stored hashed in the same transaction. */
  insertToken(tx: SqlQueryable, scope: TokenScope, subjectId: string): Promise<string>;
  /** A partner, user or ground by id. */
  getNamed<T>(table: 'partners' | 'users' | 'grounds', id: string): Promise<T | undefined>;
}

export function sqlContext(executor: SqlExecutor, clock: Clock, closed: () => boolean): SqlContext {
  async function guard<T>(fn: () => Promise<T>): Promise<T> {
    if (closed()) throw new FleetError('CLOSED', 'registry is closed');
    try {
      return await fn();
    } catch (error) {
      throw mapSqlError(error);
    }
  }
  return {
    executor,
    clock,
    guard,
    async insertToken(tx, scope, subjectId) {
      const token = newToken(scope);
      await tx.query('INSERT INTO tokens (hash, scope, subject_id, created_at) VALUES ($1, $2, $3, $4)', [hashToken(token), scope, subjectId, clock.now()]);
      return token;
    },
    async getNamed<T>(table: 'partners' | 'users' | 'grounds', id: string): Promise<T | undefined> {
      if (!isId(id)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<NamedRow>(`SELECT id, name, created_at FROM ${table} WHERE id = $1`, [id]);
        return rows[0] ? (toNamed(rows[0]) as T) : undefined;
      });
    },
  };
}

export function requireId(value: unknown, field: string): asserts value is string {
  if (!isId(value)) throw new FleetError('VALIDATION_FAILED', `${field}: not a registry id`, { detail: { field } });
}

/** NOT_FOUND (field devices) when a listed device is not a device of the ground (integrations, rules). */
export async function requireDevicesOf(tx: SqlQueryable, groundId: string, devices: readonly string[] | undefined | null): Promise<void> {
  if (devices === undefined || devices === null) return;
  const { rows } = await tx.query<{ n: unknown }>('SELECT count(*) AS n FROM devices WHERE ground_id = $1 AND id = ANY($2::text[])', [groundId, devices]);
  if (Number(rows[0]?.n) !== devices.length) throw new FleetError('NOT_FOUND', 'devices: not every listed device is a device of this ground', { detail: { field: 'devices' } });
}
