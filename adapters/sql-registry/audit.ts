/**
 * The audit log port (engine/ports/auditLog.ts) in SQL: ground_audit (migration 17), one insert per
 * batch of entries, read newest first by the (ground_id, at, seq) index.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import type { AuditLog, ListedAuditEntry } from '../../engine/ports/auditLog.ts';
import * as A from '../../schemas/audit.ts';
import type { SqlContext } from './SqlContext.ts';
import { check } from './validate.ts';

interface AuditRow {
  seq: unknown;
  ground_id: string;
  at: unknown;
  actor_kind: 'user' | 'key' | 'operator';
  actor_id: string;
  operation: string;
  target_id: string | null;
  status: number;
  code: string | null;
}

/** Entries one insert takes at most: a flush of more is written in several, in one transaction. */
const CHUNK = 1000;

function toEntry(row: AuditRow): ListedAuditEntry {
  const entry: ListedAuditEntry = {
    seq: Number(row.seq),
    groundId: row.ground_id,
    at: Number(row.at),
    actor: { kind: row.actor_kind, id: row.actor_id } as ListedAuditEntry['actor'],
    operation: row.operation,
    result: { status: Number(row.status) },
  };
  if (row.target_id !== null) entry.targetId = row.target_id;
  if (row.code !== null) entry.result.code = row.code;
  return entry;
}

export function auditOperations(ctx: SqlContext): AuditLog {
  const { executor, guard } = ctx;
  return {
    async recordAudit(entries) {
      if (!Array.isArray(entries)) throw new FleetError('VALIDATION_FAILED', 'entries: an array', { detail: { field: 'entries' } });
      entries.forEach((entry, i) => check(A.AuditEntry, entry, `entries.${i}`));
      if (entries.length === 0) return;
      await guard(() => executor.transaction(async (tx) => {
        for (let i = 0; i < entries.length; i += CHUNK) {
          const chunk = entries.slice(i, i + CHUNK);
          await tx.query(
            `INSERT INTO ground_audit (ground_id, at, actor_kind, actor_id, operation, target_id, status, code)
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::integer[], $8::text[])`,
            [
              chunk.map((e) => e.groundId), chunk.map((e) => e.at), chunk.map((e) => e.actor.kind), chunk.map((e) => e.actor.id),
              chunk.map((e) => e.operation), chunk.map((e) => e.targetId ?? null), chunk.map((e) => e.result.status), chunk.map((e) => e.result.code ?? null),
            ],
          );
        }
      }));
    },

    async listAudit(groundId, query) {
      check(A.AuditQuery, query, '');
      if (!isId(groundId)) return [];
      const limit = query.limit ?? 100;
      return guard(async () => {
        const before = query.before;
        const { rows } = before === undefined
          ? await executor.query<AuditRow>('SELECT * FROM ground_audit WHERE ground_id = $1 ORDER BY at DESC, seq DESC LIMIT $2', [groundId, limit])
          : await executor.query<AuditRow>(
            'SELECT * FROM ground_audit WHERE ground_id = $1 AND (at, seq) < ($2::bigint, $3::bigint) ORDER BY at DESC, seq DESC LIMIT $4',
            [groundId, before.at, before.seq, limit],
          );
        return rows.map(toEntry);
      });
    },

    async pruneAudit(olderThan) {
      if (!Number.isSafeInteger(olderThan)) throw new FleetError('VALIDATION_FAILED', 'olderThan: epoch milliseconds', { detail: { field: 'olderThan' } });
      return guard(async () => {
        const { rows } = await executor.query<{ n: unknown }>(
          'WITH gone AS (DELETE FROM ground_audit WHERE at < $1 RETURNING 1) SELECT count(*) AS n FROM gone', [olderThan],
        );
        return Number(rows[0]?.n ?? 0);
      });
    },
  };
}
