/**
 * Rules (engine/ports/ruleRegistry.ts) in SQL. Inputs are checked against schemas/rules.ts (names
 * canonical, as every name of the registry; the asset's name as assets.ts stores it); listed
 * devices must be devices of the ground. What the rule means for those devices is the caller's to
 * check, with assetDeclarations.
 */
import type { TSchema } from 'typebox';
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import type { AssetDeclaration, NewRule, Rule, RulePatch, RuleRegistry } from '../../engine/ports/ruleRegistry.ts';
import { durationMs } from '../../engine/rules/duration.ts';
import { ASSET_NAME_PATTERN } from '../../schemas/registry.ts';
import * as S from '../../schemas/rules.ts';
import type { RuleCondition } from '../../schemas/rules.ts';
import type { SqlQueryable } from './executor.ts';
import { requireDevicesOf, requireId, type SqlContext } from './SqlContext.ts';
import { canonicalFields, canonicalLookup, check, jsonParam } from './validate.ts';

interface RuleRow {
  id: string;
  ground_id: string;
  name: string;
  asset: string;
  devices: unknown;
  condition: unknown;
  for_duration: string | null;
  clear: unknown;
  severity: string;
  actions: unknown;
  created_at: unknown;
  updated_at: unknown;
}

const COLUMNS = 'id, ground_id, name, asset, devices, condition, for_duration, clear, severity, actions, created_at, updated_at';
const TEXT_FIELDS = { name: 'name', asset: 'name' } as const;
const ASSET_NAME_RE = new RegExp(ASSET_NAME_PATTERN);

function json(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}

function toRule(row: RuleRow): Rule {
  const rule: Rule = {
    id: row.id,
    groundId: row.ground_id,
    name: row.name,
    asset: row.asset,
    condition: json(row.condition) as Rule['condition'],
    severity: row.severity as Rule['severity'],
    actions: json(row.actions) as Rule['actions'],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
  if (row.devices !== null && row.devices !== undefined) rule.devices = json(row.devices) as string[];
  if (row.for_duration !== null) rule.for = row.for_duration;
  if (row.clear !== null && row.clear !== undefined) rule.clear = json(row.clear) as Rule['clear'];
  return rule;
}

/**
 * JSON text of a checked value, checked again as it will be read back: JSON drops what it cannot
 * carry (an `equals` or command value of undefined, a function), which could leave a rule that no
 * longer matches its schema.
 */
function storedJson(schema: TSchema, value: unknown, field: string): string {
  const text = jsonParam(value, field);
  check(schema, JSON.parse(text), field);
  return text;
}

/** A silence rule's duration in milliseconds; null for any other condition. */
function silentMs(condition: RuleCondition): number | null {
  return 'silentFor' in condition ? durationMs(condition.silentFor) : null;
}

/**
 * A silence rule watches the devices it covers from `now`: each has until `now` + its duration to
 * send a state of the asset (engine/ports/alarmRegistry.ts fireDueTimers). Nothing for other rules.
 */
async function watchForSilence(tx: SqlQueryable, ruleId: string, condition: RuleCondition, now: number): Promise<void> {
  if (silentMs(condition) === null) return;
  // A ground of a million devices takes seconds (8 s on PostgreSQL on two cores): more than the
  // registry's statement timeout, for this statement only.
  await tx.query("SET LOCAL statement_timeout = '300s'");
  await tx.query(
    `INSERT INTO rule_standings (rule_id, device_id, holding, due_at)
     SELECT r.id, d.id, false, $2::bigint + r.silent_ms FROM rules r JOIN devices d ON d.ground_id = r.ground_id
     WHERE r.id = $1 AND r.silent_ms IS NOT NULL AND (r.devices IS NULL OR r.devices ? d.id)
       AND EXISTS (SELECT 1 FROM assets a WHERE a.device_id = d.id AND a.name = r.asset)
     ON CONFLICT (rule_id, device_id) DO NOTHING`,
    [ruleId, now],
  );
}

export function ruleOperations(ctx: SqlContext): RuleRegistry {
  const { executor, clock, guard } = ctx;
  return {
    async createRule(raw: NewRule) {
      const input = canonicalFields(raw, TEXT_FIELDS);
      check<NewRule>(S.NewRule, input, '');
      const condition = storedJson(S.RuleCondition, input.condition, 'condition');
      const clear = input.clear === undefined ? null : storedJson(S.RuleClear, input.clear, 'clear');
      const actions = storedJson(S.RuleActions, input.actions ?? [], 'actions');
      const id = newId();
      const now = clock.now();
      return guard(() => executor.transaction(async (tx) => {
        await requireDevicesOf(tx, input.groundId, input.devices);
        const { rows } = await tx.query<RuleRow>(
          `INSERT INTO rules (id, ground_id, name, asset, devices, condition, for_duration, clear, severity, actions, created_at, updated_at, for_ms, silent_ms)
           VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8::jsonb, $9, $10::jsonb, $11, $11, $12, $13) RETURNING ${COLUMNS}`,
          [id, input.groundId, input.name, input.asset, input.devices === undefined ? null : jsonParam(input.devices, 'devices'),
            condition, input.for ?? null, clear, input.severity, actions, now,
            input.for === undefined ? null : durationMs(input.for), silentMs(input.condition)],
        );
        await watchForSilence(tx, id, input.condition, now);
        return toRule(rows[0]);
      }));
    },

    async getRule(ruleId) {
      if (!isId(ruleId)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<RuleRow>(`SELECT ${COLUMNS} FROM rules WHERE id = $1`, [ruleId]);
        return rows[0] ? toRule(rows[0]) : undefined;
      });
    },

    async listRules(groundId, query) {
      if (!isId(groundId)) return [];
      check(S.RuleQuery, query ?? {}, '');
      const { limit, after } = query ?? {};
      return guard(async () => {
        const { rows } = await executor.query<RuleRow>(
          `SELECT ${COLUMNS} FROM rules WHERE ground_id = $1
             AND ($2::bigint IS NULL OR (created_at, id) > ($2::bigint, $3::text))
           ORDER BY created_at, id LIMIT $4`,
          [groundId, after?.createdAt ?? null, after?.id ?? null, limit ?? null],
        );
        return rows.map(toRule);
      });
    },

    async updateRule(ruleId, raw: RulePatch) {
      requireId(ruleId, 'ruleId');
      const patch = canonicalFields(raw, TEXT_FIELDS);
      check<RulePatch>(S.RulePatch, patch, '');
      const condition = patch.condition === undefined ? null : storedJson(S.RuleCondition, patch.condition, 'condition');
      const clear = patch.clear == null ? null : storedJson(S.RuleClear, patch.clear, 'clear');
      const actions = patch.actions === undefined ? null : storedJson(S.RuleActions, patch.actions, 'actions');
      const now = clock.now();
      return guard(() => executor.transaction(async (tx) => {
        const { rows: found } = await tx.query<{ ground_id: string }>('SELECT ground_id FROM rules WHERE id = $1 FOR UPDATE', [ruleId]);
        if (!found[0]) throw new FleetError('NOT_FOUND', 'rule not found', { detail: { field: 'ruleId' } });
        await requireDevicesOf(tx, found[0].ground_id, patch.devices);
        const { rows } = await tx.query<RuleRow>(
          `UPDATE rules SET
             name = COALESCE($2, name), asset = COALESCE($3, asset),
             devices = CASE WHEN $4::boolean THEN $5::jsonb ELSE devices END,
             condition = COALESCE($6::jsonb, condition),
             for_duration = CASE WHEN $7::boolean THEN $8::text ELSE for_duration END,
             clear = CASE WHEN $9::boolean THEN $10::jsonb ELSE clear END,
             severity = COALESCE($11, severity), actions = COALESCE($12::jsonb, actions),
             updated_at = $13,
             for_ms = CASE WHEN $7::boolean THEN $14::bigint ELSE for_ms END,
             silent_ms = CASE WHEN $6::jsonb IS NOT NULL THEN $15::bigint ELSE silent_ms END
           WHERE id = $1 RETURNING ${COLUMNS}`,
          [ruleId, patch.name ?? null, patch.asset ?? null,
            patch.devices !== undefined, patch.devices == null ? null : jsonParam(patch.devices, 'devices'),
            condition,
            patch.for !== undefined, patch.for ?? null,
            patch.clear !== undefined, clear,
            patch.severity ?? null, actions, now,
            patch.for == null ? null : durationMs(patch.for), patch.condition === undefined ? null : silentMs(patch.condition)],
        );
        // What the rule judges changed: where it stood for each device (a hold under way, a silence
        // timer) no longer applies; it starts again from the next state (its active alarms stay).
        const changed = patch.asset !== undefined || patch.devices !== undefined || patch.condition !== undefined || patch.for !== undefined || patch.clear !== undefined;
        const rule = toRule(rows[0]);
        if (changed) {
          await tx.query('DELETE FROM rule_standings WHERE rule_id = $1', [ruleId]);
          await watchForSilence(tx, ruleId, rule.condition, now);
        }
        return rule;
      }));
    },

    async deleteRule(ruleId) {
      if (!isId(ruleId)) return false;
      return guard(async () => (await executor.query('DELETE FROM rules WHERE id = $1', [ruleId])).rowCount > 0);
    },

    async assetDeclarations(groundId, rawAsset, devices) {
      if (devices !== undefined) check(S.RuleDevices, devices, 'devices');
      const asset = canonicalLookup(rawAsset);
      // No such ground or asset name can exist: nothing declares it, every listed device misses it.
      if (!isId(groundId) || asset === undefined || !ASSET_NAME_RE.test(asset)) return { declarations: [], missing: [...(devices ?? [])] };
      return guard(async () => {
        // The distinct declarations (n NULL), then the listed devices that have none, in their order.
        const { rows } = await executor.query<{ kind: string | null; profile: unknown; missing: string | null }>(
          `WITH declared AS (
             SELECT a.device_id, a.kind, a.profile FROM assets a JOIN devices d ON d.id = a.device_id
             WHERE d.ground_id = $1 AND a.name = $2 AND ($3::text[] IS NULL OR d.id = ANY($3::text[]))
           )
           SELECT kind, profile, NULL::text AS missing, NULL::bigint AS n FROM (SELECT DISTINCT kind, profile FROM declared) k
           UNION ALL
           SELECT NULL::text, NULL::jsonb, l.id, l.n FROM unnest($3::text[]) WITH ORDINALITY AS l(id, n)
           WHERE NOT EXISTS (SELECT 1 FROM declared WHERE declared.device_id = l.id)
           ORDER BY n NULLS FIRST, kind, profile`,
          [groundId, asset, devices === undefined ? null : [...devices]],
        );
        const declarations: AssetDeclaration[] = [];
        const missing: string[] = [];
        for (const row of rows) {
          if (row.missing !== null) missing.push(row.missing);
          else declarations.push({ is: row.kind as AssetDeclaration['is'], profile: json(row.profile) as AssetDeclaration['profile'] });
        }
        return { declarations, missing };
      });
    },
  };
}
