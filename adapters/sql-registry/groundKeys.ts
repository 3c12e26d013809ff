/**
 * The ground keys port (engine/ports/groundKeyRegistry.ts) in SQL. A key's row is in ground_keys,
 * its token's hash in tokens (scope 'key', subject the key's id): authentication reads both
 * (principals.ts keyGrant), revoking a key deletes its row and revokes its token in one
 * transaction, so the tokens table's trigger announces it on PostgreSQL.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import type { GroundKeyRegistry } from '../../engine/ports/groundKeyRegistry.ts';
import type { GroundKey, KeyRole } from '../../engine/ports/registry.ts';
import * as K from '../../schemas/groundKeys.ts';
import type { SqlQueryable } from './executor.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { canonicalFields, check } from './validate.ts';

interface KeyRow {
  id: string;
  ground_id: string;
  name: string;
  role: string;
  created_at: unknown;
  created_by: string;
  expires_at: unknown;
  last_used_at: unknown;
}

const KEY_COLUMNS = 'id, ground_id, name, role, created_at, created_by, expires_at, last_used_at';

function toKey(row: KeyRow): GroundKey {
  const key: GroundKey = {
    id: row.id, groundId: row.ground_id, name: row.name, role: row.role as KeyRole, createdAt: Number(row.created_at), createdBy: row.created_by,
  };
  if (row.expires_at !== null) key.expiresAt = Number(row.expires_at);
  if (row.last_used_at !== null) key.lastUsedAt = Number(row.last_used_at);
  return key;
}

async function selectKey(q: SqlQueryable, groundId: string, keyId: string, lock = ''): Promise<GroundKey | undefined> {
  const { rows } = await q.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM ground_keys WHERE ground_id = $1 AND id = $2 ${lock}`, [groundId, keyId]);
  return rows[0] === undefined ? undefined : toKey(rows[0]);
}

export function groundKeyOperations(ctx: SqlContext): GroundKeyRegistry {
  const { executor, clock, guard, insertToken } = ctx;
  return {
    async createKey(groundId, raw, createdBy) {
      requireId(groundId, 'groundId');
      requireId(createdBy, 'createdBy');
      const input = canonicalFields(raw, { name: 'name' });
      check(K.NewGroundKey, input, '');
      const now = clock.now();
      if (input.expiresAt !== undefined && input.expiresAt <= now) {
        throw new FleetError('VALIDATION_FAILED', 'expiresAt: must lie in the future', { detail: { field: 'expiresAt' } });
      }
      const id = newId();
      return guard(() =>
        executor.transaction(async (tx) => {
          const user = await tx.query('SELECT 1 FROM users WHERE id = $1', [createdBy]);
          if (user.rows.length === 0) throw new FleetError('NOT_FOUND', 'user not found', { detail: { field: 'createdBy' } });
          // ground_keys_ground_id_fkey: NOT_FOUND groundId for an unknown ground.
          const { rows } = await tx.query<KeyRow>(
            `INSERT INTO ground_keys (id, ground_id, name, role, created_at, created_by, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${KEY_COLUMNS}`,
            [id, groundId, input.name, input.role, now, createdBy, input.expiresAt ?? null],
          );
          const token = await insertToken(tx, 'key', id);
          return { key: toKey(rows[0]), token };
        }),
      );
    },

    async listKeys(groundId, query) {
      if (!isId(groundId)) return [];
      check(K.KeyQuery, query ?? {}, '');
      const { limit, after } = query ?? {};
      return guard(async () => {
        const { rows } = await executor.query<KeyRow>(
          `SELECT ${KEY_COLUMNS} FROM ground_keys WHERE ground_id = $1
             AND ($2::bigint IS NULL OR (created_at, id) > ($2::bigint, $3::text))
           ORDER BY created_at, id LIMIT $4`,
          [groundId, after?.createdAt ?? null, after?.id ?? null, limit ?? null],
        );
        return rows.map(toKey);
      });
    },

    async getKey(groundId, keyId) {
      if (!isId(groundId) || !isId(keyId)) return undefined;
      return guard(() => selectKey(executor, groundId, keyId));
    },

    async revokeKey(groundId, keyId) {
      if (!isId(groundId) || !isId(keyId)) return undefined;
      return guard(() =>
        executor.transaction(async (tx) => {
          const key = await selectKey(tx, groundId, keyId, 'FOR UPDATE');
          if (key === undefined) return undefined;
          await tx.query('DELETE FROM ground_keys WHERE id = $1', [keyId]);
          const { rows } = await tx.query<{ hash: string }>(
            `UPDATE tokens SET revoked_at = $2 WHERE scope = 'key' AND subject_id = $1 AND revoked_at IS NULL RETURNING hash`,
            [keyId, clock.now()],
          );
          // Its token revoked by itself before (principals' revokeToken): the hash is still the key's.
          const hash = rows[0]?.hash ?? (await tx.query<{ hash: string }>(`SELECT hash FROM tokens WHERE scope = 'key' AND subject_id = $1`, [keyId])).rows[0].hash;
          return { key, tokenHash: hash };
        }),
      );
    },
  };
}
