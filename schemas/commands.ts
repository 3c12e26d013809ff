/**
 * Records of topic `commands` (DESIGN.md §3), key = device id, value = this object as UTF-8 JSON
 * (JSON rather than CBOR so that applications can publish commands with any Kafka client).
 *
 *   asset command  (spec §2.3, delivered over MQTT):  {id, deviceId, asset, value, at?, issuer, issuedAt}
 *   device command (spec §2.4, delivered over LPWAN): {id, deviceId, assets: {name: value, …}, at?, issuer, issuedAt}
 *
 * Exactly one of `asset` (with `value`) and `assets` is present. `at` is the ISO 8601 time of the
 * command (default: issuedAt). `expiresAt` (epoch ms) bounds how long a command waits for an
 * offline device (default: issuedAt + the engine's configured expiry). Records that do not match
 * are refused with code VALIDATION_FAILED (the device's rejections, channel `command`); values are
 * checked against the asset profiles. `accepted` is written by the edge that checked the command
 * against its device (engine/commands/commandRecords.ts): the reader then delivers it as decided
 * there; a record without it (an application's) is checked by the reader.
 */
import Type, { type Static } from 'typebox';

export const CommandRecord = Type.Object({
  /** Unique command id (idempotency key). */
  id: Type.String({ minLength: 1, maxLength: 64 }),
  deviceId: Type.String({ minLength: 1, maxLength: 64 }),
  asset: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  value: Type.Optional(Type.Unknown()),
  assets: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.Unknown())),
  at: Type.Optional(Type.String({ maxLength: 64 })),
  /** Who issued it: `user:<id>`, `app:<name>`. */
  issuer: Type.String({ minLength: 1, maxLength: 128 }),
  /** Epoch ms. */
  issuedAt: Type.Integer({ minimum: 0 }),
  expiresAt: Type.Optional(Type.Integer({ minimum: 0 })),
  /** The edge's decision: the asset's id (asset commands), and `downlink` when it leaves through the device's LoRaWAN network. */
  accepted: Type.Optional(Type.Object({
    assetId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    via: Type.Optional(Type.Literal('downlink')),
  }, { additionalProperties: false })),
}, { additionalProperties: false });
export type CommandRecord = Static<typeof CommandRecord>;

export const CommandStatus = Type.Union([
  Type.Literal('queued'), Type.Literal('sent'), Type.Literal('delivered'), Type.Literal('expired'), Type.Literal('failed'),
]);
export type CommandStatus = Static<typeof CommandStatus>;

/** One command as `GET /device/{id}/commands` lists it. */
export const CommandView = Type.Object({
  id: Type.String(),
  deviceId: Type.String(),
  kind: Type.Union([Type.Literal('asset'), Type.Literal('device')]),
  asset: Type.Optional(Type.String()),
  value: Type.Unknown(),
  at: Type.String(),
  issuer: Type.String(),
  status: CommandStatus,
  /** Stable error code when expired or failed. */
  code: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
  /** Epoch ms of the last status change. */
  updatedAt: Type.Integer(),
  attempts: Type.Integer(),
});
export type CommandView = Static<typeof CommandView>;

/** One status change of a command. */
export const CommandTransition = Type.Object({
  status: CommandStatus,
  /** Epoch ms of the change. */
  changedAt: Type.Integer(),
  /** Delivery attempts made by then. */
  attempts: Type.Integer(),
  code: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
});
export type CommandTransition = Static<typeof CommandTransition>;

/** A command with its whole lifecycle, as the command history keeps it (`GET /device/{id}/commands`). */
export const CommandLifecycle = Type.Object({
  ...CommandView.properties,
  /** Epoch ms the command was first queued (for one never queued, its device's queue being full: when it failed). */
  queuedAt: Type.Integer(),
  /** Oldest first; the last one is `status`. */
  transitions: Type.Array(CommandTransition),
});
export type CommandLifecycle = Static<typeof CommandLifecycle>;
