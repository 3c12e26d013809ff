/**
 * Operator actions on the registry (creating partners, users and grounds, granting membership and roles,
 * revoking tokens), as plain functions returning plain JSON objects, so the CLI and any admin
 * endpoint print or serialise them as they are. Plaintext tokens appear here once, at creation
 * (DESIGN.md §5: tokens are stored hashed and cannot be shown again).
 */
import type { GroundRole, Registry } from '../ports/registry.ts';

export interface CreatedPrincipal {
  id: string;
  /** Bearer token, shown once. */
  token: string;
}

export async function createPartner(registry: Registry, name: string): Promise<CreatedPrincipal> {
  const { entity, token } = await registry.createPartner({ name });
  return { id: entity.id, token };
}

export async function createUser(registry: Registry, name: string): Promise<CreatedPrincipal> {
  const { entity, token } = await registry.createUser({ name });
  return { id: entity.id, token };
}

/**
 * Creates a ground with `userId` as its first member with `role` (NOT_FOUND when the user does not
 * exist). The operator may make it an editor or a viewer: the ground then has no owner until one is
 * added (add-member --role owner).
 */
export async function createGround(registry: Registry, name: string, userId: string, role: GroundRole = 'owner'): Promise<{ id: string; role: GroundRole }> {
  const ground = await registry.createGround({ name, userId, role });
  return { id: ground.id, role };
}

/**
 * Adds the user with `role`, or gives a member that role (idempotent); CONFLICT when it would demote
 * the ground's last owner.
 */
export async function addMember(registry: Registry, groundId: string, userId: string, role: GroundRole = 'editor'): Promise<{ role: GroundRole; created: boolean }> {
  const set = await registry.setMemberRole(groundId, userId, role);
  return { role: set.member.role, created: set.created };
}

/** `revoked` is false when the token is unknown, malformed or already revoked. */
export async function revokeToken(registry: Registry, token: string): Promise<{ revoked: boolean }> {
  return { revoked: await registry.revokeToken(token) };
}

/** The demo device of `quickstart`: two sensors the demo keeps moving and two actuators to command. */
export const DEMO_ASSETS = [
  { name: 'temperature', is: 'sensor', title: 'Temperature (°C)', profile: { type: 'number', minimum: -40, maximum: 85 } },
  { name: 'humidity', is: 'sensor', title: 'Relative humidity (%)', profile: { type: 'number', minimum: 0, maximum: 100 } },
  { name: 'light', is: 'actuator', title: 'Light', profile: { type: 'boolean' } },
  { name: 'setpoint', is: 'actuator', title: 'Set point (°C)', profile: { type: 'number', minimum: 5, maximum: 30 } },
] as const;

export interface Quickstart {
  userId: string;
  /** Signs in to the console; shown once. */
  userToken: string;
  groundId: string;
  deviceId: string;
  /** Sends the demo device's states (HTTP bearer, MQTT username); shown once. */
  deviceToken: string;
}

/** A user, a ground it belongs to, and a demo device with a few assets in it: a first run in one step. */
export async function quickstart(registry: Registry, name: string): Promise<Quickstart> {
  const user = await registry.createUser({ name });
  const ground = await registry.createGround({ name: 'Demo ground', userId: user.entity.id });
  const created = await registry.createDevice({
    groundId: ground.id,
    name: 'demo-thermostat',
    title: 'Demo thermostat',
    assets: DEMO_ASSETS.map((a) => ({ ...a, profile: { ...a.profile } })),
  });
  return { userId: user.entity.id, userToken: user.token, groundId: ground.id, deviceId: created.device.id, deviceToken: created.token };
}
