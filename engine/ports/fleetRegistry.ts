/**
 * Fleet port, a part of the registry (engine/ports/registry.ts): grounds and their members, devices
 * and their assets. SQL in adapters/sql-registry/grounds.ts, devices.ts, assets.ts; contract in
 * test/contracts/fleet.contract.ts.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing referenced entity, CONFLICT for a duplicate, UNAVAILABLE/TIMEOUT (retriable) when
 * the database cannot be reached, CLOSED after close() (engine/ports/registry.ts).
 */
import type { Asset, AssetFields, Device, DevicePatch, DeviceQuery, Ground, NewDevice, NewGround } from '../../schemas/registry.ts';

/** A device with its assets (ordered by name); structurally a DeviceInfo of the directory port. */
export interface DeviceWithAssets extends Device {
  assets: Asset[];
}

export interface CreatedDevice {
  device: DeviceWithAssets;
  /** Device token (`fsd_…`), shown once. */
  token: string;
}

export interface UpsertedAsset {
  asset: Asset;
  /** True when this call created the asset, false when it updated an existing one. */
  created: boolean;
}

export interface FleetRegistry {
  // ---- grounds and membership ----
  /**
   * Creates a ground; `userId`, when given, becomes its first member in the same transaction, with
   * `role` (default owner; NOT_FOUND if the user is missing).
   */
  createGround(input: NewGround): Promise<Ground>;
  getGround(groundId: string): Promise<Ground | undefined>;
  /**
   * Adds the user as an editor; a member keeps its role (idempotent). NOT_FOUND when the ground or
   * the user does not exist. Roles are the grounds port's (groundRegistry.ts setMemberRole).
   */
  addMember(groundId: string, userId: string): Promise<void>;
  /**
   * True when a membership was removed. CONFLICT when the user is the ground's last owner (a ground
   * keeps one: groundRegistry.ts).
   */
  removeMember(groundId: string, userId: string): Promise<boolean>;
  /** Whatever the role. */
  isMember(groundId: string, userId: string): Promise<boolean>;
  /** Grounds the user belongs to, oldest first. */
  listGrounds(userId: string): Promise<Ground[]>;

  // ---- devices ----
  /**
   * Creates the device, its assets and a device token in one transaction. NOT_FOUND when the ground
   * does not exist; CONFLICT when the ground already has a device of that name or the network binding
   * (networkId + devEui) is taken; VALIDATION_FAILED for two assets of the same name.
   */
  createDevice(input: NewDevice): Promise<CreatedDevice>;
  /** The device with its assets; also the DeviceDirectory lookup (see registryDirectory). */
  getDevice(deviceId: string): Promise<DeviceWithAssets | undefined>;
  /** Devices of a ground, oldest first (created time, then id), without assets; a page when `query` says so. */
  listDevices(groundId: string, query?: DeviceQuery): Promise<Device[]>;
  /** Changes name/title/description. NOT_FOUND when missing; CONFLICT on a duplicate name in the ground. */
  updateDevice(deviceId: string, patch: DevicePatch): Promise<Device>;
  /** Deletes the device and its assets and revokes its tokens. False when it did not exist. */
  deleteDevice(deviceId: string): Promise<boolean>;
  /** The device bound to a LoRaWAN devEui on a network (any case, `-`/`:` separators ignored). */
  findDeviceByNetwork(networkId: string, devEui: string): Promise<Device | undefined>;

  // ---- assets ----
  getAsset(deviceId: string, name: string): Promise<Asset | undefined>;
  getAssetById(assetId: string): Promise<Asset | undefined>;
  /** Assets of a device ordered by name. */
  listAssets(deviceId: string): Promise<Asset[]>;
  /**
   * Creates the asset or updates the given fields of an existing one (the name never changes; `is`
   * may change). Creating requires `is` (VALIDATION_FAILED otherwise); NOT_FOUND when the device is
   * missing. Concurrent upserts of one name yield one asset: exactly one caller sees created = true.
   */
  upsertAsset(deviceId: string, name: string, fields: AssetFields): Promise<UpsertedAsset>;
  /** False when it did not exist. */
  deleteAsset(deviceId: string, name: string): Promise<boolean>;
}
