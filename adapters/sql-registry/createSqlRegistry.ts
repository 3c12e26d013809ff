/**
 * The registry port over a SqlExecutor: one implementation, one SQL dialect, shared by the PGlite
 * and PostgreSQL adapters. Inputs are validated before any query; every driver error leaves through
 * mapSqlError.
 */
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import type { Asset, AssetFields, Device, DevicePatch, DeviceWithAssets, Ground, NewDevice, NewGround, Partner, Principal, Registry, TokenScope, User, WithToken } from '../../engine/ports/registry.ts';
import { hashToken, newToken, tokenScope } from '../../engine/access/tokens.ts';
import * as S from '../../schemas/registry.ts';
import { activationOperations } from './activations.ts';
import { createDevice } from './createDevice.ts';
import { deviceTypeOperations } from './deviceTypes.ts';
import type { SqlExecutor, SqlQueryable } from './executor.ts';
import { migrate } from './migrate.ts';
import { ASSET_COLUMNS, DEVICE_COLUMNS, toAsset, toDevice, toNamed, type AssetRow, type DeviceRow, type NamedRow } from './rows.ts';
import { mapSqlError } from './sqlErrors.ts';
import { canonical, canonicalFields, canonicalLookup, check, jsonParam, NAMED_TEXT } from './validate.ts';

export interface SqlRegistryOptions {
  /** Stamps createdAt and revocation times. Default: the system clock. */
  clock?: Clock;
}

export interface SqlRegistry extends Registry {
  /** The executor underneath, for features that add their own tables (activations) and diagnostics. */
  readonly executor: SqlExecutor;
}

const NETWORK_ID_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const ASSET_NAME_RE = new RegExp(S.ASSET_NAME_PATTERN);
const SUBJECT_TABLES: Record<TokenScope, string> = { device: 'devices', user: 'users', partner: 'partners' };

function requireId(value: unknown, field: string): asserts value is string {
  if (!isId(value)) throw new FleetError('VALIDATION_FAILED', `${field}: not a registry id`, { detail: { field } });
}

/** Migrates the database, then returns the registry over it. */
export async function createSqlRegistry(executor: SqlExecutor, options: SqlRegistryOptions = {}): Promise<SqlRegistry> {
  const clock = options.clock ?? systemClock;
  try {
    await migrate(executor, { clock });
  } catch (error) {
    throw mapSqlError(error);
  }
  let closed = false;

  async function guard<T>(fn: () => Promise<T>): Promise<T> {
    if (closed) throw new FleetError('CLOSED', 'registry is closed');
    try {
      return await fn();
    } catch (error) {
      throw mapSqlError(error);
    }
  }

  async function insertToken(tx: SqlQueryable, scope: TokenScope, subjectId: string): Promise<string> {
    const token = newToken(scope);
    await tx.query('INSERT INTO tokens (hash, scope, subject_id, created_at) VALUES ($1, $2, $3, $4)', [hashToken(token), scope, subjectId, clock.now()]);
    return token;
  }

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

  async function getNamed<T>(table: 'partners' | 'users' | 'grounds', id: string): Promise<T | undefined> {
    if (!isId(id)) return undefined;
    return guard(async () => {
      const { rows } = await executor.query<NamedRow>(`SELECT id, name, created_at FROM ${table} WHERE id = $1`, [id]);
      return rows[0] ? (toNamed(rows[0]) as T) : undefined;
    });
  }

  const registry: SqlRegistry = {
    executor,

    createPartner: (input) => createPrincipal<Partner>('partners', 'partner', input),
    getPartner: (id) => getNamed<Partner>('partners', id),
    createUser: (input) => createPrincipal<User>('users', 'user', input),
    getUser: (id) => getNamed<User>('users', id),

    async createGround(raw: NewGround): Promise<Ground> {
      const input = canonicalFields(raw, { name: 'name' });
      check(S.EntityName, input?.name, 'name');
      if (input.userId !== undefined) requireId(input.userId, 'userId');
      const id = newId();
      return guard(() =>
        executor.transaction(async (tx) => {
          const now = clock.now();
          const { rows } = await tx.query<NamedRow>('INSERT INTO grounds (id, name, created_at) VALUES ($1, $2, $3) RETURNING id, name, created_at', [id, input.name, now]);
          if (input.userId !== undefined) {
            await tx.query('INSERT INTO memberships (ground_id, user_id, created_at) VALUES ($1, $2, $3)', [id, input.userId, now]);
          }
          return toNamed(rows[0]);
        }),
      );
    },
    getGround: (id) => getNamed<Ground>('grounds', id),

    async addMember(groundId, userId) {
      requireId(groundId, 'groundId');
      requireId(userId, 'userId');
      await guard(() =>
        executor.query('INSERT INTO memberships (ground_id, user_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (ground_id, user_id) DO NOTHING', [groundId, userId, clock.now()]),
      );
    },

    async removeMember(groundId, userId) {
      if (!isId(groundId) || !isId(userId)) return false;
      return guard(async () => (await executor.query('DELETE FROM memberships WHERE ground_id = $1 AND user_id = $2', [groundId, userId])).rowCount > 0);
    },

    async isMember(groundId, userId) {
      if (!isId(groundId) || !isId(userId)) return false;
      return guard(async () => (await executor.query('SELECT 1 FROM memberships WHERE ground_id = $1 AND user_id = $2', [groundId, userId])).rows.length > 0);
    },

    async listGrounds(userId) {
      if (!isId(userId)) return [];
      return guard(async () => {
        const { rows } = await executor.query<NamedRow>(
          'SELECT g.id, g.name, g.created_at FROM grounds g JOIN memberships m ON m.ground_id = g.id WHERE m.user_id = $1 ORDER BY g.created_at, g.id',
          [userId],
        );
        return rows.map(toNamed);
      });
    },

    async createDevice(input: NewDevice) {
      return createDevice(input, {
        clock,
        transaction: (fn) => guard(() => executor.transaction(fn)),
        insertToken,
      });
    },

    async getDevice(deviceId): Promise<DeviceWithAssets | undefined> {
      if (!isId(deviceId)) return undefined;
      return guard(async () => {
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
      });
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

    ...deviceTypeOperations({ executor, clock, guard }),
    ...activationOperations({ executor, clock, guard, insertToken }),

    async close() {
      if (closed) return;
      closed = true;
      await executor.close();
    },
  };
  return registry;
}
