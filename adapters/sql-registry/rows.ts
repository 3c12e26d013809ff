/**
 * Database rows → port entities. Drivers differ in how they hand back bigint (node-postgres: string;
 * PGlite: number or bigint) and jsonb (parsed, or text), so every column is normalised here.
 */
import type { Asset, Device, Ground, Partner, User } from '../../engine/ports/registry.ts';
import type { AssetKind, NetworkBinding, PayloadSettings } from '../../schemas/registry.ts';

export interface NamedRow {
  id: string;
  name: string;
  created_at: unknown;
}

export interface DeviceRow {
  id: string;
  ground_id: string;
  name: string;
  title: string;
  description: string;
  device_type: string | null;
  network_id: string | null;
  network_data: unknown;
  payload: unknown;
  created_at: unknown;
}

export interface AssetRow {
  id: string;
  device_id: string;
  name: string;
  title: string;
  description: string;
  kind: string;
  profile: unknown;
  created_at: unknown;
}

export const DEVICE_COLUMNS = 'id, ground_id, name, title, description, device_type, network_id, network_data, payload, created_at';
export const ASSET_COLUMNS = 'id, device_id, name, title, description, kind, profile, created_at';

function ms(value: unknown): number {
  return Number(value);
}

function json(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}

export function toNamed(row: NamedRow): Partner & User & Ground {
  return { id: row.id, name: row.name, createdAt: ms(row.created_at) };
}

export function toDevice(row: DeviceRow): Device {
  const device: Device = {
    id: row.id,
    groundId: row.ground_id,
    name: row.name,
    title: row.title,
    description: row.description,
    createdAt: ms(row.created_at),
  };
  if (row.device_type !== null) device.deviceType = row.device_type;
  if (row.network_id !== null) device.network = { networkId: row.network_id, data: json(row.network_data) as NetworkBinding['data'] };
  if (row.payload !== null && row.payload !== undefined) device.payload = json(row.payload) as PayloadSettings;
  return device;
}

export function toAsset(row: AssetRow): Asset {
  return {
    id: row.id,
    deviceId: row.device_id,
    name: row.name,
    title: row.title,
    description: row.description,
    is: row.kind as AssetKind,
    profile: json(row.profile) as Asset['profile'],
    createdAt: ms(row.created_at),
  };
}
