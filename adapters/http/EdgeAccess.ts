/**
 * Who may do what at the edge (DESIGN.md §5). A bearer token is resolved by the registry into a
 * principal; then:
 *   - a device token reaches only its own device: it reads the device, its assets, states and
 *     rejections, sends states, and creates or updates its assets (the AllThingsTalk SDKs declare
 *     their assets with the device token); it cannot rename or delete the device or delete assets;
 *   - a user token reaches the devices of the grounds the user is a member of, as far as its role
 *     there allows (engine/access/groundRoles.ts): a route names the role it needs (`ground(…,
 *     role)`), a device route its DeviceNeed, which DEVICE_NEED_ROLE turns into a role; a role
 *     too low is 403 FORBIDDEN naming the role needed (`requiredRole`);
 *   - a ground's API key (`fsk_…`) reaches the devices of its one ground as a member holding the
 *     key's role would (RegistryLookups.roleIn); any other ground as a non-member would;
 *   - a partner token reaches none of these routes.
 * Existence is checked before membership (404 before 403): ids are 131 random bits, so answering
 * 404 tells nothing an attacker could enumerate. A device token asking for another device gets 403
 * without a lookup.
 * The lookups themselves (a member's role too) are cached by engine/access/RegistryLookups.ts (shared
 * with the MQTT edges), and dropped by registry changes (apply()): a role changed or a member removed
 * applies to the next request at once.
 * A change request's audit note (auditNote.ts) learns here who asks and, once the caller is known to
 * be a member, the ground and what was checked (the ground, the device, the asset).
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { requireMemberToken, requireRole } from '../../engine/access/groundRoles.ts';
import { tokenScope } from '../../engine/access/tokens.ts';
import type { Asset, DeviceWithAssets, Ground, GroundRole, Principal, Registry } from '../../engine/ports/registry.ts';
import type { RegistryChange } from '../../engine/ports/registryChanges.ts';
import { RegistryLookups } from '../../engine/access/RegistryLookups.ts';
import { noteActor, noteGround, noteTarget } from './auditNote.ts';

/** read: GETs; write: states, commands and asset create/update; manage: device rename/delete, asset delete. */
export type DeviceNeed = 'read' | 'write' | 'manage';

/** The role a user needs in the device's ground for each need (a device token's rights are its own). */
export const DEVICE_NEED_ROLE: Readonly<Record<DeviceNeed, GroundRole>> = { read: 'viewer', write: 'editor', manage: 'editor' };

/** A ground as the member asking sees it: with its role there. */
export interface MemberGround extends Ground {
  role: GroundRole;
}

export interface Authenticated {
  principal: Principal;
  token: string;
}

const BEARER = /^Bearer +(\S+) *$/i;

export interface EdgeAccessOptions {
  registry: Registry;
  clock: Clock;
  /** How long a token's principal, a device and a membership are reused, ms. 0: always ask the registry. */
  cacheTtlMs: number;
  /** The process's registry lookups, kept current by their owner; absent: lookups of this access alone. */
  lookups?: RegistryLookups;
}

export class EdgeAccess {
  readonly #registry: Registry;
  readonly #lookups: RegistryLookups;

  constructor(options: EdgeAccessOptions) {
    this.#registry = options.registry;
    this.#lookups = options.lookups ?? new RegistryLookups({ registry: options.registry, clock: options.clock, cacheTtlMs: options.cacheTtlMs });
  }

  /** Drops what is cached about a device; when it was deleted, its tokens' principals too. */
  forget(deviceId: string, deleted = false): void {
    this.#lookups.forget(deviceId, deleted);
  }

  /** Drops what a registry change touches (engine/ports/registryChanges.ts). */
  apply(change: RegistryChange): void {
    this.#lookups.apply(change);
  }

  /** 401 for a missing, malformed, unknown or revoked token. */
  async authenticate(header: string | undefined): Promise<Authenticated> {
    if (header === undefined || header === '') throw new FleetError('UNAUTHORIZED', 'missing bearer token');
    const match = BEARER.exec(header);
    if (match === null) throw new FleetError('UNAUTHORIZED', 'authorization must be "Bearer <token>"');
    const token = match[1];
    // Not shaped like a token: refuse without a registry lookup.
    if (tokenScope(token) === undefined) throw new FleetError('UNAUTHORIZED', 'invalid token');
    const principal = this.#lookups.cachedPrincipal(token) ?? await this.#lookups.principal(token);
    if (principal === undefined) throw new FleetError('UNAUTHORIZED', 'invalid or revoked token');
    noteActor(principal);
    return { principal, token };
  }

  /** A ground the principal is a member of with at least `needed` (user tokens, and a key in its ground). */
  async ground(principal: Principal, groundId: string, needed: GroundRole = 'viewer'): Promise<MemberGround> {
    requireMemberToken(principal, 'manage grounds');
    const ground = await this.#registry.getGround(groundId);
    if (ground === undefined) throw new FleetError('NOT_FOUND', `ground ${groundId} not found`);
    const role = await this.#lookups.roleIn(principal, groundId);
    if (role === undefined) throw new FleetError('FORBIDDEN', 'not a member of this ground');
    noteGround(groundId, groundId);
    requireRole(role, needed);
    return { ...ground, role };
  }

  /**
   * Who may send states for the devices of a ground in one request (a gateway): a member's user
   * token, or the device token of a device in that ground (the gateway device itself).
   */
  async gateway(principal: Principal, groundId: string): Promise<void> {
    if (principal.scope === 'device') {
      const own = await this.#lookups.device(principal.subjectId);
      if (own === undefined || own.groundId !== groundId) throw new FleetError('FORBIDDEN', 'a device token sends only for the devices of its own ground');
      return;
    }
    await this.ground(principal, groundId, 'editor');
  }

  /** A device of `groundId` for a gateway; undefined when there is none (unknown and foreign look alike). */
  async deviceInGround(groundId: string, deviceId: string): Promise<DeviceWithAssets | undefined> {
    const device = await this.#lookups.device(deviceId);
    return device !== undefined && device.groundId === groundId ? device : undefined;
  }

  /** The device with its assets, when the principal may `need` it. */
  async device(principal: Principal, deviceId: string, need: DeviceNeed): Promise<DeviceWithAssets> {
    this.#precheck(principal, deviceId, need);
    const device = this.#lookups.cachedDevice(deviceId) ?? await this.#lookups.device(deviceId);
    if (device === undefined) throw new FleetError('UNKNOWN_DEVICE', `device ${deviceId} not found`);
    if (principal.scope !== 'device') {
      const role = await this.#lookups.roleIn(principal, device.groundId);
      if (role === undefined) throw new FleetError('FORBIDDEN', 'not a member of the ground of this device');
      noteGround(device.groundId, device.id);
      requireRole(role, DEVICE_NEED_ROLE[need]);
    }
    return device;
  }

  /** An asset by its global id (spec §4.1 `asset/<AssetID>/…`) and its device. */
  async asset(principal: Principal, assetId: string, need: DeviceNeed): Promise<{ device: DeviceWithAssets; asset: Asset }> {
    if (principal.scope === 'partner') throw new FleetError('FORBIDDEN', 'a partner token cannot reach devices');
    const deviceId = await this.#lookups.deviceIdOfAsset(assetId);
    if (deviceId === undefined) {
      // A device token only learns about its own assets.
      if (principal.scope === 'device') throw new FleetError('FORBIDDEN', 'not an asset of this device');
      throw new FleetError('UNKNOWN_ASSET', `asset ${assetId} not found`);
    }
    noteTarget(assetId);
    const device = await this.device(principal, deviceId, need);
    const current = device.assets.find((a) => a.id === assetId);
    // Deleted between the two reads.
    if (current === undefined) throw new FleetError('UNKNOWN_ASSET', `asset ${assetId} not found`);
    return { device, asset: current };
  }

  #precheck(principal: Principal, deviceId: string, need: DeviceNeed): void {
    if (principal.scope === 'partner') throw new FleetError('FORBIDDEN', 'a partner token cannot reach devices');
    if (principal.scope === 'device') {
      if (principal.subjectId !== deviceId) throw new FleetError('FORBIDDEN', 'a device token reaches only its own device');
      if (need === 'manage') throw new FleetError('FORBIDDEN', 'a device token cannot rename or delete its device or delete assets');
    }
  }
}

/** The asset of a device by name, or UNKNOWN_ASSET (404). */
export function assetOf(device: DeviceWithAssets, name: string): Asset {
  const asset = device.assets.find((a) => a.name === name);
  if (asset === undefined) throw new FleetError('UNKNOWN_ASSET', `device ${device.id} has no asset "${name}"`);
  return asset;
}
