/**
 * Grounds and their members (engine/ports/fleetRegistry.ts) in SQL.
 */
import { isId, newId } from '../../engine/kernel/ids.ts';
import type { Ground, NewGround } from '../../engine/ports/registry.ts';
import type { FleetRegistry } from '../../engine/ports/fleetRegistry.ts';
import type { QuotaLimits } from '../../engine/ports/quotaRegistry.ts';
import * as S from '../../schemas/registry.ts';
import { keepAnOwner, lockGround } from './groundRoles.ts';
import { insertDefaultQuota } from './quotas.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { toNamed, type NamedRow } from './rows.ts';
import { canonicalFields, check } from './validate.ts';

type GroundOperations = Pick<FleetRegistry, 'createGround' | 'getGround' | 'addMember' | 'removeMember' | 'isMember' | 'listGrounds'>;

/** `quotaDefaults`: the limits a new ground starts with (the configuration's `quotas`). */
export function groundOperations(ctx: SqlContext, quotaDefaults?: QuotaLimits): GroundOperations {
  const { executor, clock, guard } = ctx;
  return {
    async createGround(raw: NewGround): Promise<Ground> {
      const input = canonicalFields(raw, { name: 'name' });
      check(S.EntityName, input?.name, 'name');
      if (input.userId !== undefined) requireId(input.userId, 'userId');
      if (input.role !== undefined) check(S.GroundRole, input.role, 'role');
      const id = newId();
      return guard(() =>
        executor.transaction(async (tx) => {
          const now = clock.now();
          const { rows } = await tx.query<NamedRow>('INSERT INTO grounds (id, name, created_at) VALUES ($1, $2, $3) RETURNING id, name, created_at', [id, input.name, now]);
          if (input.userId !== undefined) {
            await tx.query('INSERT INTO memberships (ground_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)', [id, input.userId, input.role ?? 'owner', now]);
          }
          await insertDefaultQuota(tx, id, quotaDefaults, now);
          return toNamed(rows[0]);
        }),
      );
    },
    getGround: (id) => ctx.getNamed<Ground>('grounds', id),

    async addMember(groundId, userId) {
      requireId(groundId, 'groundId');
      requireId(userId, 'userId');
      await guard(() =>
        executor.query(`INSERT INTO memberships (ground_id, user_id, role, created_at) VALUES ($1, $2, 'editor', $3) ON CONFLICT (ground_id, user_id) DO NOTHING`, [groundId, userId, clock.now()]),
      );
    },

    async removeMember(groundId, userId) {
      if (!isId(groundId) || !isId(userId)) return false;
      return guard(() =>
        executor.transaction(async (tx) => {
          if (!(await lockGround(tx, groundId))) return false;
          const { rows } = await tx.query<{ role: string }>('SELECT role FROM memberships WHERE ground_id = $1 AND user_id = $2', [groundId, userId]);
          if (rows[0] === undefined) return false;
          if (rows[0].role === 'owner') await keepAnOwner(tx, groundId, userId, 'removed');
          return (await tx.query('DELETE FROM memberships WHERE ground_id = $1 AND user_id = $2', [groundId, userId])).rowCount > 0;
        }),
      );
    },

    async isMember(groundId, userId) {
      if (!isId(groundId) || !isId(userId)) return false;
      return guard(async () => (await executor.query('SELECT 1 FROM memberships WHERE ground_id = $1 AND user_id = $2', [groundId, userId])).rows.length > 0);
    },

    async listGrounds(userId) {
      if (!isId(userId)) return [];
      return guard(async () => {
        const { rows } = await executor.query<NamedRow>(
          'SELECT g.id, g.name, g.created_at FROM grounds g JOIN memberships m ON m.ground_id = g.id WHERE m.user_id = $1 ORDER BY g.created_at, g.id',
          [userId],
        );
        return rows.map(toNamed);
      });
    },
  };
}
