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
 *
 * With several edges (Kafka) the topic also carries, keyed by the same device id so that the
 * device's command owner reads them in the device's order, what edges say about its deliveries
 * (docs/scaling.md): `{presence: {edge, at}}` when a device's MQTT session on that edge listens on
 * a command topic, and `{outcome: {deliveryId, commandId, edge, result, …}}` answering a delivery
 * request of topic `command-deliveries` (DeliveryRequest).
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

const EdgeId = Type.String({ minLength: 1, maxLength: 128 });
const DeliveryId = Type.String({ minLength: 1, maxLength: 64 });

/** An edge holds an MQTT session of the device that listens on a command topic. */
export const PresenceRecord = Type.Object({
  presence: Type.Object({
    edge: EdgeId,
    /** Epoch ms. */
    at: Type.Integer({ minimum: 0 }),
  }, { additionalProperties: false }),
}, { additionalProperties: false });
export type PresenceRecord = Static<typeof PresenceRecord>;

/** What became of a delivery request on the edge that answers it. */
export const OutcomeRecord = Type.Object({
  outcome: Type.Object({
    deliveryId: DeliveryId,
    commandId: Type.String({ minLength: 1, maxLength: 64 }),
    edge: EdgeId,
    result: Type.Union([Type.Literal('delivered'), Type.Literal('unacknowledged'), Type.Literal('offline'), Type.Literal('failed')]),
    /** With `failed`: the error code and reason, and whether a later attempt may succeed. */
    code: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    reason: Type.Optional(Type.String({ maxLength: 1024 })),
    retriable: Type.Optional(Type.Boolean()),
  }, { additionalProperties: false }),
}, { additionalProperties: false });
export type OutcomeRecord = Static<typeof OutcomeRecord>;

/**
 * Topic `command-deliveries` (key = device id, UTF-8 JSON): a device's command owner asks the edges
 * to deliver an asset command over MQTT. `to` names the edge that last said it holds the device's
 * session; without it, any edge that holds one answers.
 */
export const DeliveryRequest = Type.Object({
  deliveryId: DeliveryId,
  commandId: Type.String({ minLength: 1, maxLength: 64 }),
  deviceId: Type.String({ minLength: 1, maxLength: 64 }),
  asset: Type.Object({ id: Type.String({ maxLength: 256 }), name: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
  /** The MQTT payload, JSON `{value, at}` (spec §2.3). */
  payload: Type.String({ maxLength: 1_048_576 }),
  to: Type.Optional(EdgeId),
}, { additionalProperties: false });
export type DeliveryRequest = Static<typeof DeliveryRequest>;

/**
 * Topic `command-deliveries`: an owner that took over partitions of topic `commands` asks every
 * edge to say again (presence records) which devices of those partitions have a session there.
 */
export const RollCall = Type.Object({
  rollCall: Type.Object({
    partitions: Type.Array(Type.Integer({ minimum: 0, maximum: 100_000 }), { minItems: 1, maxItems: 100_000 }),
    /** The partition count of topic `commands` the partitions are of. */
    count: Type.Integer({ minimum: 1, maximum: 100_000 }),
  }, { additionalProperties: false }),
}, { additionalProperties: false });
export type RollCall = Static<typeof RollCall>;

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
