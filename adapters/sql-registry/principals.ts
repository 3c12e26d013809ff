/**
 * Partners, users and their bearer tokens (engine/ports/principalRegistry.ts) in SQL.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { newId } from '../../engine/kernel/ids.ts';
import type { Partner, Principal, TokenScope, User, WithToken } from '../../engine/ports/registry.ts';
import type { PrincipalRegistry } from '../../engine/ports/principalRegistry.ts';
import { hashToken, tokenScope } from '../../engine/access/tokens.ts';
import * as S from '../../schemas/registry.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { toNamed, type NamedRow } from './rows.ts';
import { canonicalFields, check } from './validate.ts';

const SUBJECT_TABLES: Record<TokenScope, string> = { device: 'devices', user: 'users', partner: 'partners' };

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
        const { rows } = await executor.query<{ scope: string; subject_id: string }>('SELECT scope, subject_id FROM tokens WHERE hash = $1 AND revoked_at IS NULL', [hashToken(token)]);
        const row = rows[0];
        // The prefix is part of the hashed text, so a mismatch means a corrupted row: deny.
        if (!row || row.scope !== scope) return undefined;
        return { scope, subjectId: row.subject_id };
      });
    },

    async issueToken(scope, subjectId) {
      check(S.TokenScope, scope, 'scope');
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
