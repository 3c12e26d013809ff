/**
 * The quotas port (engine/ports/quotaRegistry.ts) in SQL. The devices limit itself is kept by the
 * database (enforce_devices_quota, migration 15), for every insert of a device whoever makes it.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import type { GroundQuota, QuotaLimits, QuotaPatch, QuotaRegistry } from '../../engine/ports/quotaRegistry.ts';
import * as Q from '../../schemas/quotas.ts';
import type { SqlQueryable } from './executor.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { check } from './validate.ts';

interface QuotaRow {
  ground_id: string;
  devices: number | null;
  states_per_second: number | null;
  retention_days: number | null;
  updated_at: unknown;
}

const COLUMNS = 'ground_id, devices, states_per_second, retention_days, updated_at';

function toQuota(row: QuotaRow): GroundQuota {
  const quota: GroundQuota = { groundId: row.ground_id, updatedAt: Number(row.updated_at) };
  if (row.devices !== null) quota.devices = Number(row.devices);
  if (row.states_per_second !== null) quota.statesPerSecond = Number(row.states_per_second);
  if (row.retention_days !== null) quota.retentionDays = Number(row.retention_days);
  return quota;
}

/** Inserts the configuration's defaults for a ground just created, in the caller's transaction. */
export async function insertDefaultQuota(tx: SqlQueryable, groundId: string, defaults: QuotaLimits | undefined, now: number): Promise<void> {
  if (defaults === undefined || Q.QUOTA_NAMES.every((name) => defaults[name] === undefined)) return;
  await tx.query(
    'INSERT INTO ground_quotas (ground_id, devices, states_per_second, retention_days, updated_at) VALUES ($1, $2, $3, $4, $5)',
    [groundId, defaults.devices ?? null, defaults.statesPerSecond ?? null, defaults.retentionDays ?? null, now],
  );
}

export function quotaOperations(ctx: SqlContext): QuotaRegistry {
  const { executor, clock, guard } = ctx;
  return {
    async getQuota(groundId) {
      if (!isId(groundId)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<QuotaRow>(`SELECT ${COLUMNS} FROM ground_quotas WHERE ground_id = $1`, [groundId]);
        return rows[0] === undefined ? undefined : toQuota(rows[0]);
      });
    },

    async setQuota(groundId, patch: QuotaPatch) {
      requireId(groundId, 'groundId');
      check(Q.QuotaPatch, patch, '');
      const param = (value: number | null | undefined) => (value === undefined ? null : value);
      const given = (value: number | null | undefined) => value !== undefined;
      return guard(() =>
        executor.transaction(async (tx) => {
          const exists = await tx.query('SELECT 1 FROM grounds WHERE id = $1', [groundId]);
          if (exists.rows.length === 0) throw new FleetError('NOT_FOUND', 'ground not found', { detail: { field: 'groundId' } });
          // $2..$4 the new limits, $5..$7 whether each is given (an absent one keeps its value).
          const { rows } = await tx.query<QuotaRow>(
            `INSERT INTO ground_quotas AS q (ground_id, devices, states_per_second, retention_days, updated_at) VALUES ($1, $2, $3, $4, $8)
             ON CONFLICT (ground_id) DO UPDATE SET
               devices = CASE WHEN $5 THEN EXCLUDED.devices ELSE q.devices END,
               states_per_second = CASE WHEN $6 THEN EXCLUDED.states_per_second ELSE q.states_per_second END,
               retention_days = CASE WHEN $7 THEN EXCLUDED.retention_days ELSE q.retention_days END,
               updated_at = EXCLUDED.updated_at
             RETURNING ${COLUMNS}`,
            [groundId, param(patch.devices), param(patch.statesPerSecond), param(patch.retentionDays),
              given(patch.devices), given(patch.statesPerSecond), given(patch.retentionDays), clock.now()],
          );
          const row = rows[0];
          if (row.devices !== null || row.states_per_second !== null || row.retention_days !== null) return toQuota(row);
          await tx.query('DELETE FROM ground_quotas WHERE ground_id = $1', [groundId]);
          return undefined;
        }),
      );
    },

    async removeQuota(groundId) {
      if (!isId(groundId)) return false;
      return guard(async () => (await executor.query('DELETE FROM ground_quotas WHERE ground_id = $1', [groundId])).rowCount > 0);
    },

    async listQuotas() {
      return guard(async () => (await executor.query<QuotaRow>(`SELECT ${COLUMNS} FROM ground_quotas ORDER BY ground_id`)).rows.map(toQuota));
    },

    async liveEdges(now) {
      if (!Number.isSafeInteger(now)) throw new FleetError('VALIDATION_FAILED', 'now: not a time', { detail: { field: 'now' } });
      return guard(async () => {
        const { rows } = await executor.query<{ n: unknown }>('SELECT count(*) AS n FROM edges WHERE alive_until > $1', [now]);
        return Number(rows[0]?.n ?? 0);
      });
    },
  };
}
