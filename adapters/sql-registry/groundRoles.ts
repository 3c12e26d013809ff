/**
 * The grounds port (engine/ports/groundRegistry.ts) in SQL: members' roles, renaming and deleting
 * a ground. Every change of a membership locks the ground's row first (lockGround), so the count of
 * owners it checks cannot change under it: two concurrent demotions of a ground's two owners are
 * serialised, and the second sees one owner left.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import type { GroundRegistry } from '../../engine/ports/groundRegistry.ts';
import type { Ground } from '../../engine/ports/registry.ts';
import * as G from '../../schemas/grounds.ts';
import type { GroundRole, Member } from '../../schemas/grounds.ts';
import * as S from '../../schemas/registry.ts';
import type { SqlQueryable } from './executor.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { toNamed, type NamedRow } from './rows.ts';
import { canonicalFields, check } from './validate.ts';

interface MemberRow {
  user_id: string;
  name: string;
  role: string;
  created_at: unknown;
}

const MEMBER_COLUMNS = 'm.user_id, u.name, m.role, m.created_at';

function toMember(row: MemberRow): Member {
  return { userId: row.user_id, name: row.name, role: row.role as GroundRole, createdAt: Number(row.created_at) };
}

/** Locks the ground's row for the rest of the transaction; false when there is no such ground. */
export async function lockGround(tx: SqlQueryable, groundId: string): Promise<boolean> {
  return (await tx.query('SELECT 1 FROM grounds WHERE id = $1 FOR UPDATE', [groundId])).rows.length > 0;
}

/** CONFLICT when the member is the ground's last owner (the ground's row is locked by the caller). */
export async function keepAnOwner(tx: SqlQueryable, groundId: string, userId: string, action: 'removed' | 'demoted'): Promise<void> {
  const { rows } = await tx.query<{ n: unknown }>(
    `SELECT count(*) AS n FROM memberships WHERE ground_id = $1 AND role = 'owner' AND user_id <> $2`,
    [groundId, userId],
  );
  if (Number(rows[0]?.n) === 0) {
    throw new FleetError('CONFLICT', `the last owner of a ground cannot be ${action}: make another member owner first`, { detail: { field: 'role' } });
  }
}

async function roleOf(tx: SqlQueryable, groundId: string, userId: string): Promise<GroundRole | undefined> {
  const { rows } = await tx.query<{ role: string }>('SELECT role FROM memberships WHERE ground_id = $1 AND user_id = $2', [groundId, userId]);
  return rows[0]?.role as GroundRole | undefined;
}

async function selectMember(tx: SqlQueryable, groundId: string, userId: string): Promise<Member> {
  const { rows } = await tx.query<MemberRow>(
    `SELECT ${MEMBER_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.ground_id = $1 AND m.user_id = $2`,
    [groundId, userId],
  );
  return toMember(rows[0]);
}

export function groundRoleOperations(ctx: SqlContext): GroundRegistry {
  const { executor, clock, guard } = ctx;
  return {
    async memberRole(groundId, userId) {
      if (!isId(groundId) || !isId(userId)) return undefined;
      return guard(() => roleOf(executor, groundId, userId));
    },

    async listMembers(groundId, query) {
      if (!isId(groundId)) return [];
      check(G.MemberQuery, query ?? {}, '');
      const { limit, after } = query ?? {};
      return guard(async () => {
        const { rows } = await executor.query<MemberRow>(
          `SELECT ${MEMBER_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.ground_id = $1
             AND ($2::bigint IS NULL OR (m.created_at, m.user_id) > ($2::bigint, $3::text))
           ORDER BY m.created_at, m.user_id LIMIT $4`,
          [groundId, after?.createdAt ?? null, after?.id ?? null, limit ?? null],
        );
        return rows.map(toMember);
      });
    },

    async setMemberRole(groundId, userId, role) {
      requireId(groundId, 'groundId');
      requireId(userId, 'userId');
      check(S.GroundRole, role, 'role');
      return guard(() =>
        executor.transaction(async (tx) => {
          if (!(await lockGround(tx, groundId))) throw new FleetError('NOT_FOUND', 'ground not found', { detail: { field: 'groundId' } });
          const current = await roleOf(tx, groundId, userId);
          if (current === undefined) {
            // memberships_user_id_fkey: NOT_FOUND userId for an unknown user.
            await tx.query('INSERT INTO memberships (ground_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)', [groundId, userId, role, clock.now()]);
            return { member: await selectMember(tx, groundId, userId), created: true, changed: true };
          }
          if (current === role) return { member: await selectMember(tx, groundId, userId), created: false, changed: false };
          if (current === 'owner') await keepAnOwner(tx, groundId, userId, 'demoted');
          await tx.query('UPDATE memberships SET role = $3 WHERE ground_id = $1 AND user_id = $2', [groundId, userId, role]);
          return { member: await selectMember(tx, groundId, userId), created: false, changed: true };
        }),
      );
    },

    async updateGround(groundId, raw) {
      requireId(groundId, 'groundId');
      const patch = canonicalFields(raw, { name: 'name' });
      check(G.GroundPatch, patch, '');
      return guard(async () => {
        const { rows } = await executor.query<NamedRow>(
          'UPDATE grounds SET name = COALESCE($2, name) WHERE id = $1 RETURNING id, name, created_at',
          [groundId, patch.name ?? null],
        );
        if (!rows[0]) throw new FleetError('NOT_FOUND', 'ground not found', { detail: { field: 'groundId' } });
        return toNamed(rows[0]) as Ground;
      });
    },

    async deleteGround(groundId, options) {
      if (!isId(groundId)) return undefined;
      const force = options?.force === true;
      return guard(() =>
        executor.transaction(async (tx) => {
          if (!(await lockGround(tx, groundId))) return undefined;
          const ids = async (sql: string) => (await tx.query<{ id: string }>(sql, [groundId])).rows.map((r) => r.id);
          const deviceIds = await ids('SELECT id FROM devices WHERE ground_id = $1 ORDER BY id');
          if (deviceIds.length > 0 && !force) {
            throw new FleetError('CONFLICT', `the ground still has ${deviceIds.length} device${deviceIds.length === 1 ? '' : 's'}`, { detail: { field: 'devices' } });
          }
          const memberIds = await ids('SELECT user_id AS id FROM memberships WHERE ground_id = $1 ORDER BY user_id');
          const integrationIds = await ids('SELECT id FROM integrations WHERE ground_id = $1 ORDER BY id');
          const ruleIds = await ids('SELECT id FROM rules WHERE ground_id = $1 ORDER BY id');
          // The ground's keys go with it (cascade); their tokens are revoked, as revokeKey does.
          const keyTokenHashes = (await tx.query<{ hash: string }>(
            `UPDATE tokens SET revoked_at = $2 WHERE scope = 'key' AND revoked_at IS NULL
               AND subject_id IN (SELECT id FROM ground_keys WHERE ground_id = $1) RETURNING hash`,
            [groundId, clock.now()],
          )).rows.map((r) => r.hash).sort();
          if (deviceIds.length > 0) {
            // As deleteDevice: the assets go with their device, its tokens are revoked.
            await tx.query('DELETE FROM devices WHERE ground_id = $1', [groundId]);
            await tx.query(`UPDATE tokens SET revoked_at = $2 WHERE scope = 'device' AND subject_id = ANY($1::text[]) AND revoked_at IS NULL`, [deviceIds, clock.now()]);
          }
          // Memberships, keys, integrations (with their deliveries), rules (with their standings) and alarms cascade.
          await tx.query('DELETE FROM grounds WHERE id = $1', [groundId]);
          return { deviceIds, memberIds, integrationIds, ruleIds, keyTokenHashes };
        }),
      );
    },
  };
}
