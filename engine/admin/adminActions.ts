/**
 * Operator actions on the registry (creating partners, users and grounds, granting membership,
 * revoking tokens), as plain functions returning plain JSON objects, so the CLI and any admin
 * endpoint print or serialise them as they are. Plaintext tokens appear here once, at creation
 * (DESIGN.md §5: tokens are stored hashed and cannot be shown again).
 */
import type { Registry } from '../ports/registry.ts';

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

/** Creates a ground with `userId` as its first member (NOT_FOUND when the user does not exist). */
export async function createGround(registry: Registry, name: string, userId: string): Promise<{ id: string }> {
  const ground = await registry.createGround({ name, userId });
  return { id: ground.id };
}

/** Idempotent: adding an existing member succeeds. */
export async function addMember(registry: Registry, groundId: string, userId: string): Promise<Record<string, never>> {
  await registry.addMember(groundId, userId);
  return {};
}

/** `revoked` is false when the token is unknown, malformed or already revoked. */
export async function revokeToken(registry: Registry, token: string): Promise<{ revoked: boolean }> {
  return { revoked: await registry.revokeToken(token) };
}
