/**
 * Device directory port: what a device actor needs to know about its device (assets and their
 * profiles, payload settings). The registry implements it; tests use an in-memory one.
 */

export type AssetKind = 'sensor' | 'actuator' | 'virtual';

/** Asset profile: plain JSON Schema (the subset in engine/uplink/admission/profile.ts), plus `unit` as a label. */
export type AssetProfile = Record<string, unknown>;

export interface AssetInfo {
  /** Global asset id (spec §4.1 `asset/<AssetID>/state`). */
  id: string;
  /** Unique per device, immutable. */
  name: string;
  is: AssetKind;
  profile: AssetProfile;
}

export interface PayloadSettings {
  /** How binary uplinks of this device are decoded. */
  format: 'json' | 'cbor' | 'binary' | 'cayenne';
  /** Binary conversion script (format 'binary'). */
  conversion?: unknown;
}

export interface DeviceInfo {
  id: string;
  assets: readonly AssetInfo[];
  payload?: PayloadSettings;
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
