/**
 * Alarms (engine/ports/alarmRegistry.ts) in SQL. An evaluation is applied in one transaction that
 * first locks the rule's standing for the device (rule_standings, created on the first evaluation):
 * evaluations of one (rule, device) are applied one after the other, each against the standing the
 * previous one left, so a repeated or late one is known as stale and changes nothing.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import type { Alarm, AlarmQuery, AlarmRegistry, EvaluationChange, EvaluationOutcome, RuleEvaluation } from '../../engine/ports/alarmRegistry.ts';
import * as S from '../../schemas/alarms.ts';
import { EpochMs } from '../../schemas/registry.ts';
import type { SqlQueryable } from './executor.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { canonicalFields, check, jsonParam } from './validate.ts';

interface AlarmRow {
  id: string;
  rule_id: string;
  ground_id: string;
  device_id: string;
  asset: string;
  severity: string;
  status: string;
  acknowledged: boolean;
  started_at: unknown;
  cleared_at: unknown;
  acknowledged_at: unknown;
  acknowledged_by: string | null;
  value: string;
  last_value: string;
  count: unknown;
  updated_at: unknown;
}

interface StandingRow {
  holding: boolean;
  at: unknown;
  state_id: string | null;
}

/** Values as JSON text: a driver answers a jsonb string as a string, which could not be told from text to parse. */
const COLUMNS = 'id, rule_id, ground_id, device_id, asset, severity, status, acknowledged, started_at, cleared_at, acknowledged_at, acknowledged_by, value::text AS value, last_value::text AS last_value, count, updated_at';
const TEXT_FIELDS = { asset: 'name' } as const;

function toAlarm(row: AlarmRow): Alarm {
  const alarm: Alarm = {
    id: row.id,
    ruleId: row.rule_id,
    groundId: row.ground_id,
    deviceId: row.device_id,
    asset: row.asset,
    severity: row.severity as Alarm['severity'],
    status: row.status as Alarm['status'],
    acknowledged: row.acknowledged,
    startedAt: Number(row.started_at),
    value: JSON.parse(row.value),
    lastValue: JSON.parse(row.last_value),
    count: Number(row.count),
    updatedAt: Number(row.updated_at),
  };
  if (row.cleared_at !== null && row.cleared_at !== undefined) alarm.clearedAt = Number(row.cleared_at);
  if (row.acknowledged_at !== null && row.acknowledged_at !== undefined) alarm.acknowledgedAt = Number(row.acknowledged_at);
  if (row.acknowledged_by !== null) alarm.acknowledgedBy = row.acknowledged_by;
  return alarm;
}

/** The evaluation is at or before the standing's last one: (at, then stateId). */
function isStale(evaluation: RuleEvaluation, standing: StandingRow): boolean {
  if (standing.at === null || standing.at === undefined || standing.state_id === null) return false;
  const at = Number(standing.at);
  return evaluation.at < at || (evaluation.at === at && evaluation.stateId <= standing.state_id);
}

async function alarmById(tx: SqlQueryable, alarmId: string): Promise<Alarm> {
  const { rows } = await tx.query<AlarmRow>(`SELECT ${COLUMNS} FROM alarms WHERE id = $1`, [alarmId]);
  if (!rows[0]) throw new FleetError('NOT_FOUND', 'alarm not found', { detail: { field: 'alarmId' } });
  return toAlarm(rows[0]);
}

export function alarmOperations(ctx: SqlContext): AlarmRegistry {
  const { executor, clock, guard } = ctx;
  return {
    async applyEvaluation(raw: RuleEvaluation) {
      const evaluation = canonicalFields(raw, TEXT_FIELDS);
      check<RuleEvaluation>(S.RuleEvaluation, evaluation, '');
      const value = jsonParam(evaluation.value, 'value');
      const { ruleId, deviceId } = evaluation;
      return guard(() => executor.transaction(async (tx): Promise<EvaluationOutcome> => {
        // A standing without an evaluation (at NULL) is created once; whoever comes second waits
        // on the lock, then reads what the first one left.
        await tx.query(
          `INSERT INTO rule_standings (rule_id, device_id, holding, at, state_id) VALUES ($1, $2, false, NULL, NULL)
           ON CONFLICT (rule_id, device_id) DO NOTHING`,
          [ruleId, deviceId],
        );
        const { rows: standings } = await tx.query<StandingRow>(
          'SELECT holding, at, state_id FROM rule_standings WHERE rule_id = $1 AND device_id = $2 FOR UPDATE',
          [ruleId, deviceId],
        );
        const standing = standings[0];
        if (isStale(evaluation, standing)) return { change: 'stale' };
        const wasHolding = standing.at !== null && standing.holding;

        const { rows: active } = await tx.query<AlarmRow>(
          `SELECT ${COLUMNS} FROM alarms WHERE rule_id = $1 AND device_id = $2 AND status = 'active' FOR UPDATE`,
          [ruleId, deviceId],
        );
        const now = clock.now();
        let change: EvaluationChange = 'none';
        let row: AlarmRow | undefined;
        if (evaluation.holds) {
          if (!active[0]) {
            change = 'raised';
            ({ rows: [row] } = await tx.query<AlarmRow>(
              `INSERT INTO alarms (id, rule_id, ground_id, device_id, asset, severity, status, acknowledged, started_at, value, last_value, count, updated_at)
               VALUES ($1, $2, $3, $4, $5, $6, 'active', false, $7, $8::jsonb, $8::jsonb, 1, $9) RETURNING ${COLUMNS}`,
              [newId(), ruleId, evaluation.groundId, deviceId, evaluation.asset, evaluation.severity, evaluation.at, value, now],
            ));
          } else {
            change = wasHolding ? 'updated' : 'repeated';
            ({ rows: [row] } = await tx.query<AlarmRow>(
              `UPDATE alarms SET count = count + $2, last_value = $3::jsonb, updated_at = $4 WHERE id = $1 RETURNING ${COLUMNS}`,
              [active[0].id, wasHolding ? 0 : 1, value, now],
            ));
          }
        } else if (evaluation.clears && active[0]) {
          change = 'cleared';
          ({ rows: [row] } = await tx.query<AlarmRow>(
            `UPDATE alarms SET status = 'cleared', cleared_at = $2, updated_at = $3 WHERE id = $1 RETURNING ${COLUMNS}`,
            [active[0].id, evaluation.at, now],
          ));
        }
        await tx.query(
          'UPDATE rule_standings SET holding = $3, at = $4, state_id = $5 WHERE rule_id = $1 AND device_id = $2',
          [ruleId, deviceId, evaluation.holds, evaluation.at, evaluation.stateId],
        );
        return row === undefined ? { change } : { change, alarm: toAlarm(row) };
      }));
    },

    async evaluationStanding(ruleId, deviceId) {
      if (!isId(ruleId) || !isId(deviceId)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<StandingRow & { active: boolean }>(
          `SELECT s.holding, s.at, s.state_id,
                  EXISTS (SELECT 1 FROM alarms a WHERE a.rule_id = s.rule_id AND a.device_id = s.device_id AND a.status = 'active') AS active
           FROM rule_standings s WHERE s.rule_id = $1 AND s.device_id = $2 AND s.at IS NOT NULL`,
          [ruleId, deviceId],
        );
        const row = rows[0];
        return row ? { holding: row.holding, at: Number(row.at), stateId: row.state_id!, active: row.active } : undefined;
      });
    },

    async getAlarm(alarmId) {
      if (!isId(alarmId)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<AlarmRow>(`SELECT ${COLUMNS} FROM alarms WHERE id = $1`, [alarmId]);
        return rows[0] ? toAlarm(rows[0]) : undefined;
      });
    },

    async listAlarms(groundId, query?: AlarmQuery) {
      if (!isId(groundId)) return [];
      check<AlarmQuery>(S.AlarmQuery, query ?? {}, '');
      const { status, acknowledged, deviceId, limit, before } = query ?? {};
      return guard(async () => {
        const { rows } = await executor.query<AlarmRow>(
          `SELECT ${COLUMNS} FROM alarms WHERE ground_id = $1
             AND ($2::text IS NULL OR status = $2::text)
             AND ($3::boolean IS NULL OR acknowledged = $3::boolean)
             AND ($4::text IS NULL OR device_id = $4::text)
             AND ($5::bigint IS NULL OR (started_at, id) < ($5::bigint, $6::text))
           ORDER BY started_at DESC, id DESC LIMIT $7`,
          [groundId, status ?? null, acknowledged ?? null, deviceId ?? null, before?.startedAt ?? null, before?.id ?? null, limit ?? null],
        );
        return rows.map(toAlarm);
      });
    },

    async acknowledgeAlarm(alarmId, userId, at) {
      requireId(alarmId, 'alarmId');
      requireId(userId, 'userId');
      check<number>(EpochMs, at, 'at');
      return guard(() => executor.transaction(async (tx) => {
        const { rows } = await tx.query<AlarmRow>(
          `UPDATE alarms SET acknowledged = true, acknowledged_at = $3, acknowledged_by = $2, updated_at = $4
           WHERE id = $1 AND NOT acknowledged RETURNING ${COLUMNS}`,
          [alarmId, userId, at, clock.now()],
        );
        return rows[0] ? toAlarm(rows[0]) : alarmById(tx, alarmId);
      }));
    },

    async clearAlarm(alarmId, at) {
      requireId(alarmId, 'alarmId');
      check<number>(EpochMs, at, 'at');
      return guard(() => executor.transaction(async (tx) => {
        const { rows } = await tx.query<AlarmRow>(
          `UPDATE alarms SET status = 'cleared', cleared_at = $2, updated_at = $3
           WHERE id = $1 AND status = 'active' RETURNING ${COLUMNS}`,
          [alarmId, at, clock.now()],
        );
        return rows[0] ? toAlarm(rows[0]) : alarmById(tx, alarmId);
      }));
    },
  };
}
