/**
 * The usage port (engine/ports/usageRegistry.ts) in SQL: counts per ground and UTC day in
 * ground_usage, added to by one statement a flush, the devices' grounds found by the join.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import type { DeviceUsage, UsageRegistry } from '../../engine/ports/usageRegistry.ts';
import type { SqlContext } from './SqlContext.ts';

const MAX_DAY = 2_932_896; // 9999-12-31
const MAX_COUNT = 2 ** 40;

function requireEntries(entries: readonly DeviceUsage[]): void {
  if (!Array.isArray(entries)) throw new FleetError('VALIDATION_FAILED', 'entries: an array', { detail: { field: 'entries' } });
  entries.forEach((entry, i) => {
    const bad = (field: string) => new FleetError('VALIDATION_FAILED', `entries/${i}/${field}: out of range`, { detail: { field: `entries/${i}/${field}` } });
    if (typeof entry !== 'object' || entry === null || !isId(entry.deviceId)) throw bad('deviceId');
    if (!Number.isSafeInteger(entry.day) || entry.day < 0 || entry.day > MAX_DAY) throw bad('day');
    for (const field of ['states', 'commands'] as const) {
      if (!Number.isSafeInteger(entry[field]) || entry[field] < 0 || entry[field] > MAX_COUNT) throw bad(field);
    }
  });
}

export function usageOperations(ctx: SqlContext): UsageRegistry {
  const { executor, guard } = ctx;
  return {
    async recordUsage(entries) {
      requireEntries(entries);
      const kept = entries.filter((e) => e.states > 0 || e.commands > 0);
      if (kept.length === 0) return;
      await guard(() => executor.query(
        `INSERT INTO ground_usage (ground_id, day, states, commands)
         SELECT d.ground_id, v.day, sum(v.states), sum(v.commands)
           FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::bigint[]) AS v(device_id, day, states, commands)
           JOIN devices d ON d.id = v.device_id
          GROUP BY d.ground_id, v.day
          ORDER BY d.ground_id, v.day
         ON CONFLICT (ground_id, day) DO UPDATE
           SET states = ground_usage.states + EXCLUDED.states, commands = ground_usage.commands + EXCLUDED.commands`,
        [kept.map((e) => e.deviceId), kept.map((e) => e.day), kept.map((e) => e.states), kept.map((e) => e.commands)],
      ));
    },

    async usageOf(groundId, today, monthStart) {
      const none = { statesToday: 0, statesThisMonth: 0, commandsToday: 0, commandsThisMonth: 0 };
      if (!isId(groundId)) return none;
      for (const [field, day] of [['today', today], ['monthStart', monthStart]] as const) {
        if (!Number.isSafeInteger(day) || day < 0 || day > MAX_DAY) throw new FleetError('VALIDATION_FAILED', `${field}: a day number`, { detail: { field } });
      }
      return guard(async () => {
        const { rows } = await executor.query<{ st: unknown; sm: unknown; ct: unknown; cm: unknown }>(
          `SELECT coalesce(sum(states) FILTER (WHERE day = $2), 0) AS st, coalesce(sum(states), 0) AS sm,
                  coalesce(sum(commands) FILTER (WHERE day = $2), 0) AS ct, coalesce(sum(commands), 0) AS cm
             FROM ground_usage WHERE ground_id = $1 AND day >= $3 AND day <= $2`,
          [groundId, today, monthStart],
        );
        const row = rows[0];
        return row === undefined ? none : { statesToday: Number(row.st), statesThisMonth: Number(row.sm), commandsToday: Number(row.ct), commandsThisMonth: Number(row.cm) };
      });
    },
  };
}
