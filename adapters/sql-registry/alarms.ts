/**
 * Alarms (engine/ports/alarmRegistry.ts) in SQL. An evaluation is applied by one statement, the
 * function apply_rule_evaluation (migration 13), that first locks the rule's standing for the device
 * (rule_standings, created on the first evaluation): evaluations of one (rule, device) are applied
 * one after the other, each against the standing the previous one left, so a repeated or late one
 * (at, then state id, before or at the standing's) is known as stale and changes nothing.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import type { Alarm, AlarmQuery, AlarmRegistry, EvaluationChange, EvaluationOutcome, RuleEvaluation, SilenceSighting, TimerFiring } from '../../engine/ports/alarmRegistry.ts';
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
  holding_since: unknown;
  for_ms: unknown;
}

/** A standing whose timer is due, with what its rule and device are now. */
interface DueRow {
  rule_id: string;
  device_id: string;
  holding: boolean;
  due_at: unknown;
  last_seen: unknown;
  value: string | null;
  ground_id: string;
  asset: string;
  severity: string;
  for_ms: unknown;
  silent_ms: unknown;
  device_ground: string | null;
}

/** Values as JSON text: a driver answers a jsonb string as a string, which could not be told from text to parse. */
const COLUMNS = 'id, rule_id, ground_id, device_id, asset, severity, status, acknowledged, started_at, cleared_at, acknowledged_at, acknowledged_by, value::text AS value, last_value::text AS last_value, count, updated_at';
const TEXT_FIELDS = { asset: 'name' } as const;

/** An alarm's row as apply_rule_evaluation answers it (row_to_json): its values as JSON. */
type AlarmJson = Omit<AlarmRow, 'value' | 'last_value'> & { value: unknown; last_value: unknown };

function toAlarm(row: AlarmRow): Alarm {
  return alarmFrom(row, JSON.parse(row.value), JSON.parse(row.last_value));
}

function alarmFrom(row: Omit<AlarmRow, 'value' | 'last_value'>, value: unknown, lastValue: unknown): Alarm {
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
    value: value as Alarm['value'],
    lastValue: lastValue as Alarm['lastValue'],
    count: Number(row.count),
    updatedAt: Number(row.updated_at),
  };
  if (row.cleared_at !== null && row.cleared_at !== undefined) alarm.clearedAt = Number(row.cleared_at);
  if (row.acknowledged_at !== null && row.acknowledged_at !== undefined) alarm.acknowledgedAt = Number(row.acknowledged_at);
  if (row.acknowledged_by !== null) alarm.acknowledgedBy = row.acknowledged_by;
  return alarm;
}

const nullable = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** Raises the alarm of a (rule, device) that has none active, inside the caller's transaction. */
async function raise(tx: SqlQueryable, due: DueRow, startedAt: number, value: string, now: number): Promise<Alarm | undefined> {
  const { rows } = await tx.query<AlarmRow>(
    `INSERT INTO alarms (id, rule_id, ground_id, device_id, asset, severity, status, acknowledged, started_at, value, last_value, count, updated_at)
     SELECT $1, $2, $3, $4, $5, $6, 'active', false, $7, $8::jsonb, $8::jsonb, 1, $9
     WHERE NOT EXISTS (SELECT 1 FROM alarms WHERE rule_id = $2 AND device_id = $4 AND status = 'active')
     RETURNING ${COLUMNS}`,
    [newId(), due.rule_id, due.ground_id, due.device_id, due.asset, due.severity, startedAt, value, now],
  );
  return rows[0] ? toAlarm(rows[0]) : undefined;
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
      const { rows } = await guard(() => executor.query<{ result: string }>(
        'SELECT apply_rule_evaluation($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12) AS result',
        [ruleId, deviceId, evaluation.groundId, evaluation.asset, evaluation.severity, evaluation.holds, evaluation.clears, evaluation.at, evaluation.stateId, value, clock.now(), newId()],
      ));
      const outcome = JSON.parse(rows[0].result) as { change: EvaluationChange | 'stale'; alarm?: AlarmJson };
      return outcome.alarm === undefined ? { change: outcome.change } : { change: outcome.change, alarm: alarmFrom(outcome.alarm, outcome.alarm.value, outcome.alarm.last_value) } as EvaluationOutcome;
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

    async recordSightings(raw) {
      check(S.SilenceSightings, raw, 'sightings');
      if (raw.length === 0) return [];
      // One per (rule, device), the latest, in the order rows are locked in (no deadlock between engines).
      const latest = new Map<string, SilenceSighting>();
      for (const sighting of raw) {
        const key = `${sighting.ruleId} ${sighting.deviceId}`;
        const known = latest.get(key);
        if (known === undefined || sighting.receivedAt > known.receivedAt) latest.set(key, sighting);
      }
      const sightings = [...latest.values()].sort((a, b) => (a.ruleId < b.ruleId ? -1 : a.ruleId > b.ruleId ? 1 : a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0));
      const rules = sightings.map((x) => x.ruleId);
      const devices = sightings.map((x) => x.deviceId);
      const seen = sightings.map((x) => x.receivedAt);
      return guard(() => executor.transaction(async (tx) => {
        const { rows: old } = await tx.query<{ rule_id: string; device_id: string; last_seen: unknown }>(
          `SELECT s.rule_id, s.device_id, s.last_seen FROM rule_standings s
           JOIN unnest($1::text[], $2::text[]) AS v(r_id, d_id) ON s.rule_id = v.r_id AND s.device_id = v.d_id
           ORDER BY s.rule_id, s.device_id FOR UPDATE OF s`,
          [rules, devices],
        );
        const lastSeen = new Map(old.map((row) => [`${row.rule_id} ${row.device_id}`, nullable(row.last_seen) ?? -1]));
        await tx.query(
          `INSERT INTO rule_standings (rule_id, device_id, holding, last_seen, due_at)
           SELECT v.r_id, v.d_id, false, v.seen, v.seen + r.silent_ms
           FROM unnest($1::text[], $2::text[], $3::bigint[]) AS v(r_id, d_id, seen) JOIN rules r ON r.id = v.r_id AND r.silent_ms IS NOT NULL
           ON CONFLICT (rule_id, device_id) DO UPDATE SET
             due_at = CASE WHEN EXCLUDED.last_seen > COALESCE(rule_standings.last_seen, -1) THEN EXCLUDED.due_at ELSE rule_standings.due_at END,
             last_seen = GREATEST(COALESCE(rule_standings.last_seen, -1), EXCLUDED.last_seen)`,
          [rules, devices, seen],
        );
        // A state newer than the last one before the silence ends it (a replayed older one does not).
        const newer = sightings.filter((x) => x.receivedAt > (lastSeen.get(`${x.ruleId} ${x.deviceId}`) ?? -1));
        if (newer.length === 0) return [];
        const { rows } = await tx.query<AlarmRow>(
          `UPDATE alarms SET status = 'cleared', cleared_at = v.seen, updated_at = $4
           FROM unnest($1::text[], $2::text[], $3::bigint[]) AS v(r_id, d_id, seen)
           WHERE alarms.rule_id = v.r_id AND alarms.device_id = v.d_id AND alarms.status = 'active'
           RETURNING ${COLUMNS.split(', ').map((c) => `alarms.${c}`).join(', ')}`,
          [newer.map((x) => x.ruleId), newer.map((x) => x.deviceId), newer.map((x) => x.receivedAt), clock.now()],
        );
        return rows.map(toAlarm);
      }));
    },

    async fireDueTimers(now, limit, leaseMs) {
      check<number>(EpochMs, now, 'now');
      for (const [field, n, most] of [['limit', limit, 10_000], ['leaseMs', leaseMs, 86_400_000]] as const) {
        if (!Number.isSafeInteger(n) || n < 1 || n > most) throw new FleetError('VALIDATION_FAILED', `${field}: 1 to ${most}`, { detail: { field } });
      }
      return guard(() => executor.transaction(async (tx) => {
        // Whichever engine locks a due standing first fires it; the others pass it by.
        const { rows: due } = await tx.query<DueRow>(
          `SELECT s.rule_id, s.device_id, s.holding, s.due_at, s.last_seen, s.value::text AS value,
                  r.ground_id, r.asset, r.severity, r.for_ms, r.silent_ms, d.ground_id AS device_ground
           FROM rule_standings s JOIN rules r ON r.id = s.rule_id LEFT JOIN devices d ON d.id = s.device_id
           WHERE s.due_at <= LEAST($1::bigint, COALESCE((SELECT min(through) FROM rule_progress), $1::bigint))
           ORDER BY s.due_at LIMIT $2 FOR UPDATE OF s SKIP LOCKED`,
          [now, limit],
        );
        const firings: TimerFiring[] = [];
        const at = clock.now();
        const lease = at + leaseMs;
        for (const standing of due) {
          const key = [standing.rule_id, standing.device_id];
          if (standing.device_ground !== standing.ground_id) {
            // The device is gone (or in another ground): nothing to watch.
            await tx.query('DELETE FROM rule_standings WHERE rule_id = $1 AND device_id = $2', key);
            continue;
          }
          const silentMs = nullable(standing.silent_ms);
          const dueAt = Number(standing.due_at);
          const { rows: active } = await tx.query<AlarmRow>(`SELECT ${COLUMNS} FROM alarms WHERE rule_id = $1 AND device_id = $2 AND status = 'active'`, key);
          let alarm: Alarm | undefined;
          if (active[0]) {
            // Raised by this timer, whose firing was not settled (the engine stopped before its actions were done): again.
            alarm = toAlarm(active[0]);
          } else if (silentMs !== null) {
            // Silent since its last state (or since it was first watched): started when the silence reached the rule's duration.
            const lastSeen = nullable(standing.last_seen);
            alarm = await raise(tx, standing, lastSeen === null ? dueAt : lastSeen + silentMs, 'null', at);
          } else if (nullable(standing.for_ms) !== null && standing.holding) {
            alarm = await raise(tx, standing, dueAt, standing.value ?? 'null', at);
          }
          // Held for the lease while the alarm's actions run: settled then, fired again after it if not.
          await tx.query('UPDATE rule_standings SET due_at = $3 WHERE rule_id = $1 AND device_id = $2', [...key, alarm === undefined ? null : lease]);
          if (alarm !== undefined) firings.push({ ruleId: standing.rule_id, deviceId: standing.device_id, lease, alarm });
        }
        return firings;
      }));
    },

    async recordProgress(progress, partitions) {
      check(S.RuleProgress, progress, 'progress');
      if (!Number.isSafeInteger(partitions) || partitions < 1 || partitions > 100_000) throw new FleetError('VALIDATION_FAILED', 'partitions: 1 to 100000', { detail: { field: 'partitions' } });
      await guard(() => executor.transaction(async (tx) => {
        if (progress.length > 0) {
          await tx.query(
            `INSERT INTO rule_progress (partition, through) SELECT * FROM unnest($1::integer[], $2::bigint[])
             ON CONFLICT (partition) DO UPDATE SET through = GREATEST(rule_progress.through, EXCLUDED.through)`,
            [progress.map((p) => p.partition), progress.map((p) => p.through)],
          );
        }
        // Partitions the topic no longer has (it was made again with fewer) hold nothing back.
        await tx.query('DELETE FROM rule_progress WHERE partition >= $1', [partitions]);
      }));
    },

    async settleTimers(firings) {
      if (firings.length === 0) return;
      await guard(() => executor.query(
        `UPDATE rule_standings SET due_at = NULL FROM unnest($1::text[], $2::text[], $3::bigint[]) AS v(r_id, d_id, lease)
         WHERE rule_id = v.r_id AND device_id = v.d_id AND due_at = v.lease`,
        [firings.map((f) => f.ruleId), firings.map((f) => f.deviceId), firings.map((f) => f.lease)],
      ));
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
        return rows[0] ? { alarm: toAlarm(rows[0]), changed: true } : { alarm: await alarmById(tx, alarmId), changed: false };
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
        return rows[0] ? { alarm: toAlarm(rows[0]), changed: true } : { alarm: await alarmById(tx, alarmId), changed: false };
      }));
    },
  };
}
