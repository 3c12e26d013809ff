/**
 * The registry lookups every edge makes per message — a token's principal, a device with its
 * assets, the device of a global asset id, a member's role in a ground — cached for `cacheTtlMs` on the
 * injected Clock. Without it each uplink costs two or three registry queries. Positive answers only
 * are kept. Registry changes (engine/ports/registryChanges.ts: made here, on another edge or by the
 * admin CLI) drop what they touch through apply(); cacheTtlMs bounds how long an answer outlives a
 * change the feed did not carry (a process that died between commit and publish).
 * Shared by the HTTP edge (adapters/http/EdgeAccess.ts) and the MQTT edges.
 */
import type { Clock } from '../kernel/clock.ts';
import type { DeviceWithAssets, GroundRole, Principal, Registry } from '../ports/registry.ts';
import type { RegistryChange } from '../ports/registryChanges.ts';
import { hashToken, tokenScope } from './tokens.ts';
import { TtlCache } from '../kernel/TtlCache.ts';

export interface RegistryLookupsOptions {
  registry: Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'memberRole'>;
  clock: Clock;
  /** How long an answer is reused, ms. 0: always ask the registry. */
  cacheTtlMs: number;
}

export class RegistryLookups {
  readonly #registry: RegistryLookupsOptions['registry'];
  readonly #clock: Clock;
  /** Token → its principal and hash (computed on a miss, so a revocation compares strings only). */
  readonly #principals: TtlCache<string, { principal: Principal; tokenHash: string }>;
  readonly #devices: TtlCache<string, DeviceWithAssets>;
  /** `groundId/userId` → the member's role. */
  readonly #members: TtlCache<string, GroundRole>;
  /** Asset id → device id: an asset never moves to another device. */
  readonly #assetDevices: TtlCache<string, string>;

  constructor(options: RegistryLookupsOptions) {
    this.#registry = options.registry;
    this.#clock = options.clock;
    const cache = { clock: options.clock, ttlMs: options.cacheTtlMs };
    this.#principals = new TtlCache(cache);
    this.#devices = new TtlCache(cache);
    this.#members = new TtlCache(cache);
    this.#assetDevices = new TtlCache(cache);
  }

  /** The principal of a token; undefined for anything that is not a live token (no lookup when not token-shaped). */
  async principal(token: string | undefined): Promise<Principal | undefined> {
    if (token === undefined || tokenScope(token) === undefined) return undefined;
    const entry = await this.#principals.getOrLoad(token, async () => {
      const principal = await this.#registry.authenticate(token);
      return principal === undefined ? undefined : { principal, tokenHash: hashToken(token) };
    });
    return this.#unexpired(token, entry?.principal);
  }

  /** The cached principal of a token, without a lookup (the edges' per-request path: no promise when it is there). */
  cachedPrincipal(token: string): Principal | undefined {
    return this.#unexpired(token, this.#principals.get(token)?.principal);
  }

  /** A key expires while cached: from its `expiresAt` on it is no principal, whatever the cache holds. */
  #unexpired(token: string, principal: Principal | undefined): Principal | undefined {
    const expiresAt = principal?.key?.expiresAt;
    if (expiresAt === undefined || expiresAt > this.#clock.now()) return principal;
    this.#principals.delete(token);
    return undefined;
  }

  /**
   * The role the principal holds in the ground: a user's membership, a key's own role in its one
   * ground (docs/grounds.md "API keys"); undefined for anyone else and for any other ground.
   */
  async roleIn(principal: Principal, groundId: string): Promise<GroundRole | undefined> {
    if (principal.scope === 'user') return this.memberRole(groundId, principal.subjectId);
    if (principal.scope === 'key' && principal.key?.groundId === groundId) return principal.key.role;
    return undefined;
  }

  /** The cached device, without a lookup. */
  cachedDevice(deviceId: string): DeviceWithAssets | undefined {
    return this.#devices.get(deviceId);
  }

  /** The ground a device is in (undefined: no such device): at once when the device is cached, else once looked up. */
  groundOf(deviceId: string): string | undefined | Promise<string | undefined> {
    const cached = this.#devices.get(deviceId);
    return cached !== undefined ? cached.groundId : this.device(deviceId).then((device) => device?.groundId);
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

  /** The user's role in the ground; undefined when it is not a member. */
  async memberRole(groundId: string, userId: string): Promise<GroundRole | undefined> {
    return this.#members.getOrLoad(`${groundId}/${userId}`, () => this.#registry.memberRole(groundId, userId));
  }

  async isMember(groundId: string, userId: string): Promise<boolean> {
    return (await this.memberRole(groundId, userId)) !== undefined;
  }

  /** Drops what is cached about a device; when it was deleted, its tokens' principals too. */
  forget(deviceId: string, deleted = false): void {
    this.#devices.delete(deviceId);
    if (deleted) this.#principals.deleteWhere(({ principal }) => principal.scope === 'device' && principal.subjectId === deviceId);
  }

  /** Drops what a registry change touches (subscribe it to the process's RegistryChanges). */
  apply(change: RegistryChange): void {
    switch (change.kind) {
      case 'token-revoked':
        this.#principals.deleteWhere((entry) => entry.tokenHash === change.tokenHash);
        return;
      case 'device-deleted':
        this.forget(change.deviceId, true);
        this.#assetDevices.deleteWhere((deviceId) => deviceId === change.deviceId);
        return;
      case 'device-changed':
        this.forget(change.deviceId);
        return;
      case 'membership-changed':
        this.#members.delete(`${change.groundId}/${change.userId}`);
        return;
      case 'resync':
        for (const cache of [this.#principals, this.#devices, this.#members, this.#assetDevices] as TtlCache<string, unknown>[]) cache.deleteWhere(() => true);
        return;
    }
  }

}
