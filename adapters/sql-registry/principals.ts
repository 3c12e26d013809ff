/**
 * Partners, users and their bearer tokens (engine/ports/principalRegistry.ts) in SQL.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { newId } from '../../engine/kernel/ids.ts';
import type { KeyGrant, KeyRole, Partner, Principal, TokenScope, User, WithToken } from '../../engine/ports/registry.ts';
import type { PrincipalRegistry } from '../../engine/ports/principalRegistry.ts';
import { hashToken, tokenScope } from '../../engine/access/tokens.ts';
import * as S from '../../schemas/registry.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { toNamed, type NamedRow } from './rows.ts';
import { canonicalFields, check } from './validate.ts';

/** Whose tokens issueToken adds: a key has exactly the one token it was created with. */
const SUBJECT_TABLES: Record<Exclude<TokenScope, 'key'>, string> = { device: 'devices', user: 'users', partner: 'partners' };

interface TokenRow {
  scope: string;
  subject_id: string;
  ground_id: string | null;
  role: string | null;
  expires_at: unknown;
}

/**
 * The grant of a key token's row; undefined when the key is gone or expired at `now`. Its last use is
 * recorded here, so `lastUsedAt` is as fresh as the processes' lookup caches let it be (they ask
 * once per token per cacheTtlMs), at the cost of one indexed UPDATE per such lookup.
 */
async function keyGrant(ctx: SqlContext, row: TokenRow): Promise<KeyGrant | undefined> {
  const now = ctx.clock.now();
  if (row.ground_id === null || row.role === null) return undefined;
  const expiresAt = row.expires_at === null ? undefined : Number(row.expires_at);
  if (expiresAt !== undefined && expiresAt <= now) return undefined;
  await ctx.executor.query('UPDATE ground_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)', [row.subject_id, now]);
  const grant: KeyGrant = { groundId: row.ground_id, role: row.role as KeyRole };
  if (expiresAt !== undefined) grant.expiresAt = expiresAt;
  return grant;
}

export function principalOperations(ctx: SqlContext): PrincipalRegistry {
  const { executor, clock, guard, insertToken } = ctx;
  async function createPrincipal<T extends Partner | User>(table: 'partners' | 'users', scope: TokenScope, raw: { name: string }): Promise<WithToken<T>> {
    const input = canonicalFields(raw, { name: 'name' });
    check(S.EntityName, input?.name, 'name');
    const id = newId();
    return guard(() =>
      executor.transaction(async (tx) => {
        const { rows } = await tx.query<NamedRow>(`INSERT INTO ${table} (id, name, created_at) VALUES ($1, $2, $3) RETURNING id, name, created_at`, [id, input.name, clock.now()]);
        const token = await insertToken(tx, scope, id);
        return { entity: toNamed(rows[0]) as T, token };
      }),
    );
  }
  return {
    createPartner: (input) => createPrincipal<Partner>('partners', 'partner', input),
    getPartner: (id) => ctx.getNamed<Partner>('partners', id),
    createUser: (input) => createPrincipal<User>('users', 'user', input),
    getUser: (id) => ctx.getNamed<User>('users', id),

    async authenticate(token): Promise<Principal | undefined> {
      const scope = tokenScope(token);
      if (!scope) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<TokenRow>(
          `SELECT t.scope, t.subject_id, k.ground_id, k.role, k.expires_at FROM tokens t
             LEFT JOIN ground_keys k ON t.scope = 'key' AND k.id = t.subject_id
           WHERE t.hash = $1 AND t.revoked_at IS NULL`,
          [hashToken(token)],
        );
        const row = rows[0];
        // The prefix is part of the hashed text, so a mismatch means a corrupted row: deny.
        if (!row || row.scope !== scope) return undefined;
        if (scope !== 'key') return { scope, subjectId: row.subject_id };
        const key = await keyGrant(ctx, row);
        return key === undefined ? undefined : { scope, subjectId: row.subject_id, key };
      });
    },

    async issueToken(scope, subjectId) {
      check(S.TokenScope, scope, 'scope');
      if (scope === 'key') throw new FleetError('VALIDATION_FAILED', 'scope: a key has the one token it was created with', { detail: { field: 'scope' } });
      requireId(subjectId, 'subjectId');
      return guard(() =>
        executor.transaction(async (tx) => {
          // FOR SHARE: a concurrent deleteDevice waits for this token, then revokes it too.
          const subject = await tx.query(`SELECT 1 FROM ${SUBJECT_TABLES[scope]} WHERE id = $1 FOR SHARE`, [subjectId]);
          if (subject.rows.length === 0) throw new FleetError('NOT_FOUND', `${scope} not found`, { detail: { field: 'subjectId' } });
          return insertToken(tx, scope, subjectId);
        }),
      );
    },

    async revokeToken(token) {
      if (!tokenScope(token)) return false;
      return guard(async () => (await executor.query('UPDATE tokens SET revoked_at = $2 WHERE hash = $1 AND revoked_at IS NULL', [hashToken(token), clock.now()])).rowCount > 0);
    },
  };
}
