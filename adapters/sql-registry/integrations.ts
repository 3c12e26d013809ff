/**
 * Integrations (engine/ports/integrationRegistry.ts) in SQL. Inputs are checked against
 * schemas/integrations.ts (names canonical, as every name of the registry), custom headers by
 * engine/integrations/customHeaders.ts; listed devices must be devices of the ground.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import { checkCustomHeaders } from '../../engine/integrations/customHeaders.ts';
import { newWebhookSecret } from '../../engine/integrations/webhookSignature.ts';
import type { Integration, IntegrationPatch, IntegrationRegistry, NewIntegration } from '../../engine/ports/integrationRegistry.ts';
import * as S from '../../schemas/integrations.ts';
import { requireDevicesOf, requireId, type SqlContext } from './SqlContext.ts';
import { canonicalFields, check, jsonParam } from './validate.ts';

interface IntegrationRow {
  id: string;
  ground_id: string;
  name: string;
  kind: string;
  url: string;
  events: unknown;
  devices: unknown;
  assets: unknown;
  headers: unknown;
  status: string;
  disabled_reason: string | null;
  previous_secret_until: unknown;
  created_at: unknown;
  updated_at: unknown;
}

const COLUMNS = 'id, ground_id, name, kind, url, events, devices, assets, headers, status, disabled_reason, previous_secret_until, created_at, updated_at';

function json(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}

function toIntegration(row: IntegrationRow, now: number): Integration {
  const integration: Integration = {
    id: row.id,
    groundId: row.ground_id,
    name: row.name,
    kind: row.kind as Integration['kind'],
    url: row.url,
    events: json(row.events) as Integration['events'],
    headers: json(row.headers) as Integration['headers'],
    status: row.status as Integration['status'],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
  if (row.devices !== null && row.devices !== undefined) integration.devices = json(row.devices) as string[];
  if (row.assets !== null && row.assets !== undefined) integration.assets = json(row.assets) as string[];
  if (row.disabled_reason !== null) integration.disabledReason = row.disabled_reason;
  const until = row.previous_secret_until === null ? undefined : Number(row.previous_secret_until);
  if (until !== undefined && until > now) integration.previousSecretValidUntil = until;
  return integration;
}

export function integrationOperations(ctx: SqlContext): IntegrationRegistry {
  const { executor, clock, guard } = ctx;
  return {
    async createIntegration(raw: NewIntegration) {
      const input = canonicalFields(raw, { name: 'name' });
      check<NewIntegration>(S.NewIntegration, input, '');
      const headers = checkCustomHeaders(input.headers ?? {});
      const id = newId();
      const secret = newWebhookSecret();
      const now = clock.now();
      return guard(() => executor.transaction(async (tx) => {
        await requireDevicesOf(tx, input.groundId, input.devices);
        const { rows } = await tx.query<IntegrationRow>(
          `INSERT INTO integrations (id, ground_id, name, kind, url, events, devices, assets, headers, status, secret, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8::jsonb, $9::jsonb, 'active', $10, $11, $11) RETURNING ${COLUMNS}`,
          [id, input.groundId, input.name, input.kind, input.url, jsonParam(input.events, 'events'),
            input.devices === undefined ? null : jsonParam(input.devices, 'devices'),
            input.assets === undefined ? null : jsonParam(input.assets, 'assets'),
            jsonParam(headers, 'headers'), secret, now],
        );
        return { integration: toIntegration(rows[0], now), secret };
      }));
    },

    async getIntegration(integrationId) {
      if (!isId(integrationId)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<IntegrationRow>(`SELECT ${COLUMNS} FROM integrations WHERE id = $1`, [integrationId]);
        return rows[0] ? toIntegration(rows[0], clock.now()) : undefined;
      });
    },

    async listIntegrations(groundId, query) {
      if (!isId(groundId)) return [];
      check(S.IntegrationQuery, query ?? {}, '');
      const { limit, after } = query ?? {};
      return guard(async () => {
        const { rows } = await executor.query<IntegrationRow>(
          `SELECT ${COLUMNS} FROM integrations WHERE ground_id = $1
             AND ($2::bigint IS NULL OR (created_at, id) > ($2::bigint, $3::text))
           ORDER BY created_at, id LIMIT $4`,
          [groundId, after?.createdAt ?? null, after?.id ?? null, limit ?? null],
        );
        const now = clock.now();
        return rows.map((row) => toIntegration(row, now));
      });
    },

    async activeIntegrations() {
      return guard(async () => {
        const { rows } = await executor.query<IntegrationRow>(`SELECT ${COLUMNS} FROM integrations WHERE status = 'active' ORDER BY created_at, id`);
        const now = clock.now();
        return rows.map((row) => toIntegration(row, now));
      });
    },

    async integrationCount() {
      return guard(async () => {
        const { rows } = await executor.query<{ n: unknown }>('SELECT count(*) AS n FROM integrations');
        return Number(rows[0].n);
      });
    },

    async updateIntegration(integrationId, raw: IntegrationPatch) {
      requireId(integrationId, 'integrationId');
      const patch = canonicalFields(raw, { name: 'name' });
      check<IntegrationPatch>(S.IntegrationPatch, patch, '');
      const headers = patch.headers === undefined ? undefined : checkCustomHeaders(patch.headers);
      const now = clock.now();
      return guard(() => executor.transaction(async (tx) => {
        const { rows: found } = await tx.query<{ ground_id: string }>('SELECT ground_id FROM integrations WHERE id = $1 FOR UPDATE', [integrationId]);
        if (!found[0]) throw new FleetError('NOT_FOUND', 'integration not found', { detail: { field: 'integrationId' } });
        await requireDevicesOf(tx, found[0].ground_id, patch.devices);
        const { rows } = await tx.query<IntegrationRow>(
          `UPDATE integrations SET
             name = COALESCE($2, name), url = COALESCE($3, url), events = COALESCE($4::jsonb, events),
             devices = CASE WHEN $5::boolean THEN $6::jsonb ELSE devices END,
             assets = CASE WHEN $7::boolean THEN $8::jsonb ELSE assets END,
             headers = COALESCE($9::jsonb, headers),
             status = COALESCE($10, status),
             disabled_reason = CASE WHEN $10 IS NULL OR $10 = status THEN disabled_reason WHEN $10 = 'disabled' THEN 'manual' ELSE NULL END,
             updated_at = $11
           WHERE id = $1 RETURNING ${COLUMNS}`,
          [integrationId, patch.name ?? null, patch.url ?? null, patch.events === undefined ? null : jsonParam(patch.events, 'events'),
            patch.devices !== undefined, patch.devices == null ? null : jsonParam(patch.devices, 'devices'),
            patch.assets !== undefined, patch.assets == null ? null : jsonParam(patch.assets, 'assets'),
            headers === undefined ? null : jsonParam(headers, 'headers'), patch.status ?? null, now],
        );
        return toIntegration(rows[0], now);
      }));
    },

    async deleteIntegration(integrationId) {
      if (!isId(integrationId)) return false;
      return guard(async () => (await executor.query('DELETE FROM integrations WHERE id = $1', [integrationId])).rowCount > 0);
    },

    async rotateIntegrationSecret(integrationId, options) {
      requireId(integrationId, 'integrationId');
      const graceMs = options?.graceMs;
      if (typeof graceMs !== 'number' || !Number.isSafeInteger(graceMs) || graceMs < 0) {
        throw new FleetError('VALIDATION_FAILED', 'graceMs: an integer >= 0', { detail: { field: 'graceMs' } });
      }
      const secret = newWebhookSecret();
      const now = clock.now();
      return guard(async () => {
        const { rows } = await executor.query<IntegrationRow>(
          `UPDATE integrations SET
             previous_secret = CASE WHEN $3::bigint > 0 THEN secret ELSE NULL END,
             previous_secret_until = CASE WHEN $3::bigint > 0 THEN $4::bigint + $3::bigint ELSE NULL END,
             secret = $2, updated_at = $4
           WHERE id = $1 RETURNING ${COLUMNS}`,
          [integrationId, secret, graceMs, now],
        );
        if (!rows[0]) throw new FleetError('NOT_FOUND', 'integration not found', { detail: { field: 'integrationId' } });
        return { integration: toIntegration(rows[0], now), secret };
      });
    },

    async integrationSecrets(integrationId) {
      if (!isId(integrationId)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<{ secret: string; previous_secret: string | null; previous_secret_until: unknown }>(
          'SELECT secret, previous_secret, previous_secret_until FROM integrations WHERE id = $1', [integrationId]);
        const row = rows[0];
        if (!row) return undefined;
        const previousValid = row.previous_secret !== null && Number(row.previous_secret_until) > clock.now();
        return previousValid ? [row.secret, row.previous_secret!] : [row.secret];
      });
    },
  };
}
