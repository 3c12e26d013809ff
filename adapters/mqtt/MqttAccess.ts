/**
 * Registry lookups of the MQTT edges, cached for `cacheTtlMs` (every publish needs the device's
 * assets; a registry query per message would cost more than the message). Failed lookups are never
 * cached, so a device created a moment ago is found on the next try.
 */
import type { Clock } from '../../engine/clock.ts';
import type { DeviceWithAssets, Principal, Registry } from '../../engine/ports/registry.ts';
import { tokenScope } from '../../engine/tokens.ts';
import { TtlCache } from '../http/TtlCache.ts';

export interface MqttAccessOptions {
  registry: Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'isMember'>;
  clock: Clock;
  cacheTtlMs: number;
}

export class MqttAccess {
  readonly #registry: MqttAccessOptions['registry'];
  readonly #principals: TtlCache<string, Principal>;
  readonly #devices: TtlCache<string, DeviceWithAssets>;
  readonly #members: TtlCache<string, true>;
  readonly #assetDevices: TtlCache<string, string>;

  constructor(options: MqttAccessOptions) {
    this.#registry = options.registry;
    const cache = { clock: options.clock, ttlMs: options.cacheTtlMs };
    this.#principals = new TtlCache(cache);
    this.#devices = new TtlCache(cache);
    this.#members = new TtlCache(cache);
    this.#assetDevices = new TtlCache(cache);
  }

  /** The principal of a token, undefined for anything that is not a live token. */
  async principal(token: string | undefined): Promise<Principal | undefined> {
    if (token === undefined || tokenScope(token) === undefined) return undefined;
    let principal = this.#principals.get(token);
    if (principal === undefined) {
      principal = await this.#registry.authenticate(token);
      if (principal !== undefined) this.#principals.set(token, principal);
    }
    return principal;
  }

  /** `fresh`: skip the cache (an asset the cached copy does not know may have been added since). */
  async device(deviceId: string, fresh = false): Promise<DeviceWithAssets | undefined> {
    let device = fresh ? undefined : this.#devices.get(deviceId);
    if (device === undefined) {
      device = await this.#registry.getDevice(deviceId);
      if (device !== undefined) this.#devices.set(deviceId, device);
    }
    return device;
  }

  async deviceOfAsset(assetId: string): Promise<DeviceWithAssets | undefined> {
    let deviceId = this.#assetDevices.get(assetId);
    if (deviceId === undefined) {
      const asset = await this.#registry.getAssetById(assetId);
      if (asset === undefined) return undefined;
      deviceId = asset.deviceId;
      this.#assetDevices.set(assetId, deviceId);
    }
    return this.device(deviceId);
  }

  async isMember(groundId: string, userId: string): Promise<boolean> {
    const key = `${groundId}/${userId}`;
    if (this.#members.get(key)) return true;
    const member = await this.#registry.isMember(groundId, userId);
    if (member) this.#members.set(key, true);
    return member;
  }
}
