/**
 * Assets of devices (engine/ports/fleetRegistry.ts) in SQL.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import type { Asset, AssetFields } from '../../engine/ports/registry.ts';
import type { FleetRegistry } from '../../engine/ports/fleetRegistry.ts';
import * as S from '../../schemas/registry.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { ASSET_COLUMNS, toAsset, type AssetRow } from './rows.ts';
import { canonical, canonicalFields, canonicalLookup, check, jsonParam } from './validate.ts';

const ASSET_NAME_RE = new RegExp(S.ASSET_NAME_PATTERN);

type AssetOperations = Pick<FleetRegistry, 'getAsset' | 'getAssetById' | 'listAssets' | 'upsertAsset' | 'deleteAsset'>;

export function assetOperations(ctx: SqlContext): AssetOperations {
  const { executor, clock, guard } = ctx;
  return {
    async getAsset(deviceId, rawName) {
      const name = canonicalLookup(rawName);
      if (!isId(deviceId) || name === undefined || !ASSET_NAME_RE.test(name)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<AssetRow>(`SELECT ${ASSET_COLUMNS} FROM assets WHERE device_id = $1 AND name = $2`, [deviceId, name]);
        return rows[0] ? toAsset(rows[0]) : undefined;
      });
    },

    async getAssetById(assetId) {
      if (!isId(assetId)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<AssetRow>(`SELECT ${ASSET_COLUMNS} FROM assets WHERE id = $1`, [assetId]);
        return rows[0] ? toAsset(rows[0]) : undefined;
      });
    },

    async listAssets(deviceId): Promise<Asset[]> {
      if (!isId(deviceId)) return [];
      return guard(async () => {
        const { rows } = await executor.query<AssetRow>(`SELECT ${ASSET_COLUMNS} FROM assets WHERE device_id = $1 ORDER BY name COLLATE "C"`, [deviceId]);
        return rows.map(toAsset);
      });
    },

    async upsertAsset(deviceId, rawName, rawFields: AssetFields) {
      requireId(deviceId, 'deviceId');
      const name = canonical(rawName, 'name');
      const fields = canonicalFields(rawFields, { title: 'text', description: 'text' });
      check(S.AssetName, name, 'name');
      check(S.AssetFields, fields, '');
      const profile = fields.profile === undefined ? null : jsonParam(fields.profile, 'profile');
      const title = fields.title ?? null;
      const description = fields.description ?? null;
      return guard(async () => {
        if (fields.is === undefined) {
          // Without `is` this can only update: creating an asset needs its kind.
          const { rows } = await executor.query<AssetRow>(
            `UPDATE assets SET title = COALESCE($3, title), description = COALESCE($4, description), profile = COALESCE($5::jsonb, profile)
             WHERE device_id = $1 AND name = $2 RETURNING ${ASSET_COLUMNS}`,
            [deviceId, name, title, description, profile],
          );
          if (rows[0]) return { asset: toAsset(rows[0]), created: false };
          const device = await executor.query('SELECT 1 FROM devices WHERE id = $1', [deviceId]);
          if (device.rows.length === 0) throw new FleetError('NOT_FOUND', 'device not found', { detail: { field: 'deviceId' } });
          throw new FleetError('VALIDATION_FAILED', 'is: required to create an asset', { detail: { field: 'is' } });
        }
        // One statement, so concurrent upserts of one name serialise on the unique key: one inserts,
        // the others update. xmax = 0 only on a freshly inserted row version.
        const { rows } = await executor.query<AssetRow & { created: boolean }>(
          `INSERT INTO assets (id, device_id, name, title, description, kind, profile, created_at)
           VALUES ($1, $2, $3, COALESCE($4, $3), COALESCE($5, ''), $6, COALESCE($7::jsonb, '{}'::jsonb), $8)
           ON CONFLICT (device_id, name) DO UPDATE SET
             title = COALESCE($4, assets.title), description = COALESCE($5, assets.description),
             kind = EXCLUDED.kind, profile = COALESCE($7::jsonb, assets.profile)
           RETURNING ${ASSET_COLUMNS}, (xmax = 0) AS created`,
          [newId(), deviceId, name, title, description, fields.is, profile, clock.now()],
        );
        return { asset: toAsset(rows[0]), created: rows[0].created === true };
      });
    },

    async deleteAsset(deviceId, name) {
      if (!isId(deviceId) || typeof name !== 'string' || !ASSET_NAME_RE.test(name)) return false;
      return guard(async () => (await executor.query('DELETE FROM assets WHERE device_id = $1 AND name = $2', [deviceId, name])).rowCount > 0);
    },
  };
}
