/**
 * Device creation: the device, its assets and its device token in one transaction, so a device
 * never exists half made (no assets, or no way to authenticate).
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { newId } from '../../engine/kernel/ids.ts';
import type { CreatedDevice, NewAsset, NewDevice, TokenScope } from '../../engine/ports/registry.ts';
import * as S from '../../schemas/registry.ts';
import type { NetworkBinding } from '../../schemas/registry.ts';
import type { SqlQueryable } from './executor.ts';
import { ASSET_COLUMNS, DEVICE_COLUMNS, toAsset, toDevice, type AssetRow, type DeviceRow } from './rows.ts';
import { canonicalAssets, canonicalFields, check, jsonParam, NAMED_TEXT, normaliseDevEui } from './validate.ts';

/** Network data holds a handful of identifiers and keys (DESIGN.md §6). */
const MAX_NETWORK_DATA_BYTES = 4096;
const ASSET_PARAMS = 8;

export interface CreateDeviceContext {
  clock: Clock;
  /** Runs `fn` in a transaction with errors already mapped. */
  transaction<T>(fn: (tx: SqlQueryable) => Promise<T>): Promise<T>;
  insertToken(tx: SqlQueryable, scope: TokenScope, subjectId: string): Promise<string>;
}

/** A NewDevice checked and turned into query parameters. */
export interface PreparedDevice {
  input: NewDevice;
  networkData: string | null;
  devEui: string | null;
  payload: string | null;
  profiles: string[];
}

/** The LoRaWAN devEui of a binding normalised into `data`, and the data as a jsonb parameter. */
export function prepareNetwork(network: NetworkBinding, field: string): { data: string; devEui: string | null } {
  const data = { ...network.data };
  let devEui: string | null = null;
  if ('devEui' in data) {
    const eui = normaliseDevEui(data.devEui);
    if (!eui) throw new FleetError('VALIDATION_FAILED', `${field}.data.devEui: must be 16 hex digits`, { detail: { field: `${field}.data.devEui` } });
    data.devEui = eui;
    devEui = eui;
  }
  return { data: jsonParam(data, `${field}.data`, MAX_NETWORK_DATA_BYTES), devEui };
}

/** Asset names unique, profiles as bounded jsonb parameters (schema already checked). */
export function prepareAssets(assets: readonly NewAsset[], field: string): string[] {
  const seen = new Set<string>();
  for (const asset of assets) {
    if (seen.has(asset.name)) {
      throw new FleetError('VALIDATION_FAILED', `${field}: the name ${asset.name} appears twice`, { detail: { field } });
    }
    seen.add(asset.name);
  }
  return assets.map((a, i) => jsonParam(a.profile ?? {}, `${field}.${i}.profile`));
}

/** A NewDevice with its name, title, description and assets' text canonical (validate.ts). */
export function canonicalDevice(input: NewDevice): NewDevice {
  const device = canonicalFields(input, NAMED_TEXT);
  return device?.assets === undefined ? device : { ...device, assets: canonicalAssets(device.assets, 'assets') };
}

export function prepareDevice(raw: NewDevice): PreparedDevice {
  const input = canonicalDevice(raw);
  check(S.NewDevice, input, '');
  const profiles = prepareAssets(input.assets ?? [], 'assets');
  const network = input.network ? prepareNetwork(input.network, 'network') : undefined;
  return {
    input,
    networkData: network?.data ?? null,
    devEui: network?.devEui ?? null,
    payload: input.payload === undefined ? null : jsonParam(input.payload, 'payload'),
    profiles,
  };
}

/** Inserts a prepared device, its assets and a device token inside the caller's transaction. */
export async function insertDevice(tx: SqlQueryable, prepared: PreparedDevice, ctx: Omit<CreateDeviceContext, 'transaction'>): Promise<CreatedDevice> {
  const { input, networkData, devEui, payload, profiles } = prepared;
  const assets = input.assets ?? [];
  const id = newId();
  const now = ctx.clock.now();
  const device = await tx.query<DeviceRow>(
    `INSERT INTO devices (id, ground_id, name, title, description, device_type, network_id, network_data, dev_eui, payload, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::jsonb, $11) RETURNING ${DEVICE_COLUMNS}`,
    [id, input.groundId, input.name, input.title ?? input.name, input.description ?? '', input.deviceType ?? null, input.network?.networkId ?? null, networkData, devEui, payload, now],
  );
  let assetRows: AssetRow[] = [];
  if (assets.length > 0) {
    const values: string[] = [];
    const params: unknown[] = [];
    assets.forEach((a, i) => {
      const p = i * ASSET_PARAMS;
      values.push(`($${p + 1}, $${p + 2}, $${p + 3}, $${p + 4}, $${p + 5}, $${p + 6}, $${p + 7}::jsonb, $${p + 8})`);
      params.push(newId(), id, a.name, a.title ?? a.name, a.description ?? '', a.is, profiles[i], now);
    });
    const inserted = await tx.query<AssetRow>(
      `INSERT INTO assets (id, device_id, name, title, description, kind, profile, created_at) VALUES ${values.join(', ')} RETURNING ${ASSET_COLUMNS}`,
      params,
    );
    assetRows = inserted.rows;
    // The ground's silence rules over every device that has the asset watch this one from now on.
    await tx.query(
      `INSERT INTO rule_standings (rule_id, device_id, holding, due_at)
       SELECT r.id, $1, false, $3::bigint + r.silent_ms FROM rules r
       WHERE r.ground_id = $2 AND r.silent_ms IS NOT NULL AND r.devices IS NULL AND r.asset = ANY($4::text[])`,
      [id, input.groundId, now, assets.map((a) => a.name)],
    );
  }
  const token = await ctx.insertToken(tx, 'device', id);
  const byName = assetRows.map(toAsset).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { device: { ...toDevice(device.rows[0]), assets: byName }, token };
}

export async function createDevice(input: NewDevice, ctx: CreateDeviceContext): Promise<CreatedDevice> {
  const prepared = prepareDevice(input);
  return ctx.transaction((tx) => insertDevice(tx, prepared, ctx));
}
