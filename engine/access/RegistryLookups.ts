/**
 * The registry lookups every edge makes per message — a token's principal, a device with its
 * assets, the device of a global asset id, a ground membership — cached for `cacheTtlMs` on the
 * injected Clock. Without it each uplink costs two or three registry queries. Positive answers only
 * are kept; changes made through the same process drop what they touch at once (forget()), changes
 * made elsewhere (another edge, the admin CLI revoking a token) apply within cacheTtlMs.
 * Shared by the HTTP edge (adapters/http/EdgeAccess.ts) and the MQTT edges.
 */
import type { Clock } from '../kernel/clock.ts';
import type { DeviceWithAssets, Principal, Registry } from '../ports/registry.ts';
import { hashToken, tokenScope } from './tokens.ts';
import { TtlCache } from '../kernel/TtlCache.ts';

export interface RegistryLookupsOptions {
  registry: Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'isMember'>;
  clock: Clock;
  /** How long an answer is reused, ms. 0: always ask the registry. */
  cacheTtlMs: number;
}

export class RegistryLookups {
  readonly #registry: RegistryLookupsOptions['registry'];
  readonly #principals: TtlCache<string, Principal>;
  readonly #devices: TtlCache<string, DeviceWithAssets>;
  readonly #members: TtlCache<string, true>;
  /** Asset id → device id: an asset never moves to another device. */
  readonly #assetDevices: TtlCache<string, string>;

  constructor(options: RegistryLookupsOptions) {
    this.#registry = options.registry;
    const cache = { clock: options.clock, ttlMs: options.cacheTtlMs };
    this.#principals = new TtlCache(cache);
    this.#devices = new TtlCache(cache);
    this.#members = new TtlCache(cache);
    this.#assetDevices = new TtlCache(cache);
  }

  /** The principal of a token; undefined for anything that is not a live token (no lookup when not token-shaped). */
  async principal(token: string | undefined): Promise<Principal | undefined> {
    if (token === undefined || tokenScope(token) === undefined) return undefined;
    return this.#principals.getOrLoad(token, () => this.#registry.authenticate(token));
  }

  /** `fresh`: skip the cache (an asset the cached copy does not know may have been added since). */
  async device(deviceId: string, fresh = false): Promise<DeviceWithAssets | undefined> {
    if (fresh) this.#devices.delete(deviceId);
    return this.#devices.getOrLoad(deviceId, () => this.#registry.getDevice(deviceId));
  }

  async deviceIdOfAsset(assetId: string): Promise<string | undefined> {
    return this.#assetDevices.getOrLoad(assetId, async () => (await this.#registry.getAssetById(assetId))?.deviceId);
  }

  async deviceOfAsset(assetId: string): Promise<DeviceWithAssets | undefined> {
    const deviceId = await this.deviceIdOfAsset(assetId);
    return deviceId === undefined ? undefined : this.device(deviceId);
  }

  async isMember(groundId: string, userId: string): Promise<boolean> {
    const key = `${groundId}/${userId}`;
    return (await this.#members.getOrLoad(key, async () => ((await this.#registry.isMember(groundId, userId)) ? true : undefined))) === true;
  }

  /** Drops what is cached about a device; when it was deleted, its tokens' principals too. */
  forget(deviceId: string, deleted = false): void {
    this.#devices.delete(deviceId);
    if (deleted) this.#principals.deleteWhere((p) => p.scope === 'device' && p.subjectId === deviceId);
  }

  /** Drops the principal of a revoked token, known by its hash (engine/ports/registryChanges.ts). */
  forgetToken(tokenHash: string): void {
    this.#principals.deleteWhere((_p, token) => hashToken(token) === tokenHash);
  }

  /** Drops a cached membership (a user left or joined a ground). */
  forgetMembership(groundId: string, userId: string): void {
    this.#members.delete(`${groundId}/${userId}`);
  }
}
