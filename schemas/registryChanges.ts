/**
 * Registry changes (engine/ports/registryChanges.ts) and the notification that carries one between
 * processes (adapters/registry-changes/PostgresRegistryChanges.ts). Every field is bounded, so a
 * notification fits well under PostgreSQL's 8000-byte NOTIFY payload limit.
 */
import Type, { type Static } from 'typebox';
import { Id } from './registry.ts';

/** engine/access/tokens.ts hashToken(token): lower-case hex SHA-256. */
export const TokenHash = Type.String({ pattern: '^[0-9a-f]{64}$' });

export const RegistryChange = Type.Union([
  /** Connections keep the hash of the token they authenticated with. */
  Type.Object({ kind: Type.Literal('token-revoked'), tokenHash: TokenHash }, { additionalProperties: false }),
  /** The device and its tokens are gone. */
  Type.Object({ kind: Type.Literal('device-deleted'), deviceId: Id }, { additionalProperties: false }),
  /** Its name, assets, profiles or ground changed. */
  Type.Object({ kind: Type.Literal('device-changed'), deviceId: Id }, { additionalProperties: false }),
  /** A user joined or left a ground (feeds and ground streams follow memberships). */
  Type.Object({ kind: Type.Literal('membership-changed'), groundId: Id, userId: Id }, { additionalProperties: false }),
  /** An integration was created, changed or had its secret rotated (its deliveries follow the new settings). */
  Type.Object({ kind: Type.Literal('integration-changed'), integrationId: Id, groundId: Id }, { additionalProperties: false }),
  /** An integration is gone: nothing more is delivered to it. */
  Type.Object({ kind: Type.Literal('integration-deleted'), integrationId: Id, groundId: Id }, { additionalProperties: false }),
  /** A rule was created or changed (engines judge the ground's devices by its new settings). */
  Type.Object({ kind: Type.Literal('rule-changed'), ruleId: Id, groundId: Id }, { additionalProperties: false }),
  /** A rule is gone: nothing more is judged by it. */
  Type.Object({ kind: Type.Literal('rule-deleted'), ruleId: Id, groundId: Id }, { additionalProperties: false }),
  /** A ground's quota was set, changed or removed (edges admit its states at the new rate). */
  Type.Object({ kind: Type.Literal('quota-changed'), groundId: Id }, { additionalProperties: false }),
  /**
   * Changes may have been missed (the feed was cut off from the other processes and is back):
   * drop every cached answer, and re-check the token of every open connection.
   */
  Type.Object({ kind: Type.Literal('resync') }, { additionalProperties: false }),
]);
export type RegistryChange = Static<typeof RegistryChange>;

/** Between processes: `origin` names the publishing process, which skips its own echo. */
export const RegistryChangeNotification = Type.Object({
  v: Type.Literal(1),
  origin: Type.String({ pattern: '^[0-9A-Za-z]{1,32}$' }),
  change: RegistryChange,
}, { additionalProperties: false });
export type RegistryChangeNotification = Static<typeof RegistryChangeNotification>;
