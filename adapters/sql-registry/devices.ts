/**
 * Devices (engine/ports/fleetRegistry.ts) in SQL: created with their assets and token in one
 * transaction (createDevice.ts), read with their assets in one round trip.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import type { Device, DevicePatch, DeviceWithAssets, NewDevice } from '../../engine/ports/registry.ts';
import type { FleetRegistry } from '../../engine/ports/fleetRegistry.ts';
import * as S from '../../schemas/registry.ts';
import { createDevice } from './createDevice.ts';
import type { SqlQueryable } from './executor.ts';
import { requireId, type SqlContext } from './SqlContext.ts';
import { DEVICE_COLUMNS, toAsset, toDevice, type AssetRow, type DeviceRow } from './rows.ts';
import { canonicalFields, check, NAMED_TEXT } from './validate.ts';

const NETWORK_ID_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;

type DeviceOperations = Pick<FleetRegistry, 'createDevice' | 'getDevice' | 'listDevices' | 'updateDevice' | 'deleteDevice' | 'findDeviceByNetwork'>;

export function deviceOperations(ctx: SqlContext): DeviceOperations {
  const { executor, clock, guard, insertToken } = ctx;
  return {
    async createDevice(input: NewDevice) {
      return createDevice(input, {
        clock,
        transaction: (fn) => guard(() => executor.transaction(fn)),
        insertToken,
      });
    },

    async getDevice(deviceId): Promise<DeviceWithAssets | undefined> {
      if (!isId(deviceId)) return undefined;
      return guard(() => selectDeviceWithAssets(executor, deviceId));
    },

    async listDevices(groundId, query): Promise<Device[]> {
      if (!isId(groundId)) return [];
      check(S.DeviceQuery, query ?? {}, '');
      const { limit, after } = query ?? {};
      return guard(async () => {
        const { rows } = await executor.query<DeviceRow>(
          `SELECT ${DEVICE_COLUMNS} FROM devices WHERE ground_id = $1
             AND ($2::bigint IS NULL OR (created_at, id) > ($2::bigint, $3::text))
           ORDER BY created_at, id LIMIT $4`,
          [groundId, after?.createdAt ?? null, after?.id ?? null, limit ?? null],
        );
        return rows.map(toDevice);
      });
    },

    async updateDevice(deviceId, raw: DevicePatch): Promise<Device> {
      requireId(deviceId, 'deviceId');
      const patch = canonicalFields(raw, NAMED_TEXT);
      check(S.DevicePatch, patch, '');
      return guard(async () => {
        const { rows } = await executor.query<DeviceRow>(
          `UPDATE devices SET name = COALESCE($2, name), title = COALESCE($3, title), description = COALESCE($4, description)
           WHERE id = $1 RETURNING ${DEVICE_COLUMNS}`,
          [deviceId, patch.name ?? null, patch.title ?? null, patch.description ?? null],
        );
        if (!rows[0]) throw new FleetError('NOT_FOUND', 'device not found', { detail: { field: 'deviceId' } });
        return toDevice(rows[0]);
      });
    },

    async deleteDevice(deviceId) {
      if (!isId(deviceId)) return false;
      return guard(() =>
        executor.transaction(async (tx) => {
          const { rowCount } = await tx.query('DELETE FROM devices WHERE id = $1', [deviceId]);
          if (rowCount === 0) return false;
          await tx.query(`UPDATE tokens SET revoked_at = $2 WHERE scope = 'device' AND subject_id = $1 AND revoked_at IS NULL`, [deviceId, clock.now()]);
          return true;
        }),
      );
    },

    async findDeviceByNetwork(networkId, devEui) {
      if (typeof networkId !== 'string' || !NETWORK_ID_RE.test(networkId)) return undefined;
      const eui = typeof devEui === 'string' ? devEui.replace(/[-:]/g, '') : '';
      if (!/^[0-9A-Fa-f]{16}$/.test(eui)) return undefined;
      return guard(async () => {
        const { rows } = await executor.query<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE network_id = $1 AND dev_eui = $2`, [networkId, eui.toUpperCase()]);
        return rows[0] ? toDevice(rows[0]) : undefined;
      });
    },
  };
}

/** The device with its assets ordered by name. */
async function selectDeviceWithAssets(executor: SqlQueryable, deviceId: string): Promise<DeviceWithAssets | undefined> {
  // One round trip: the device actor rebuilds from this on every activation of an idle device.
  const { rows } = await executor.query<DeviceRow & { assets: unknown }>(
    `SELECT ${DEVICE_COLUMNS},
       COALESCE((SELECT json_agg(json_build_object('id', a.id, 'device_id', a.device_id, 'name', a.name, 'title', a.title,
                   'description', a.description, 'kind', a.kind, 'profile', a.profile, 'created_at', a.created_at)
                 ORDER BY a.name COLLATE "C")
                 FROM assets a WHERE a.device_id = d.id), '[]'::json) AS assets
     FROM devices d WHERE d.id = $1`,
    [deviceId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const assets = (typeof row.assets === 'string' ? JSON.parse(row.assets) : row.assets) as AssetRow[];
  return { ...toDevice(row), assets: assets.map(toAsset) };
}
