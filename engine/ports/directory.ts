/**
 * Device directory port: what a device actor needs to know about its device (assets and their
 * profiles, payload settings). The registry implements it; tests use an in-memory one.
 */

import type { Asset, AssetKind, Device, PayloadSettings } from '../../schemas/registry.ts';

export type { AssetKind, PayloadSettings };

/** Asset profile: plain JSON Schema (the subset in engine/uplink/admission/profile.ts), plus `unit` as a label. */
export type AssetProfile = Asset['profile'];

/** What an actor needs of an asset: the registry's Asset (schemas/registry.ts), narrowed. */
export type AssetInfo = Pick<Asset, 'id' | 'name' | 'is' | 'profile'>;

/**
 * What an actor needs of a device: the registry's Device with its assets, narrowed. `network`
 * decides how its commands leave (engine/commands/lpwanNetworkOf.ts); `groundId` whose quota admits
 * its states (every edge's devices have it).
 */
export interface DeviceInfo extends Pick<Device, 'id' | 'payload' | 'network'>, Partial<Pick<Device, 'groundId'>> {
  assets: readonly AssetInfo[];
}

export interface DeviceDirectory {
  /** The device, or undefined when it does not exist. */
  getDevice(deviceId: string): Promise<DeviceInfo | undefined>;
}

/** A directory held in memory (tests, benchmarks, and a fallback for embedding). */
export class MemoryDirectory implements DeviceDirectory {
  readonly #devices = new Map<string, DeviceInfo>();

  put(device: DeviceInfo): void {
    this.#devices.set(device.id, device);
  }

  delete(deviceId: string): void {
    this.#devices.delete(deviceId);
  }

  async getDevice(deviceId: string): Promise<DeviceInfo | undefined> {
    return this.#devices.get(deviceId);
  }
}
