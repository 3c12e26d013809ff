/**
 * Message contracts on the log (DESIGN.md §3). Types derive from these schemas.
 */
import Type, { type Static } from 'typebox';

export const Channel = Type.Union([Type.Literal('http'), Type.Literal('mqtt'), Type.Literal('lpwan')]);
export type Channel = Static<typeof Channel>;

export const ContentType = Type.Union([Type.Literal('json'), Type.Literal('cbor'), Type.Literal('binary')]);
export type ContentType = Static<typeof ContentType>;

/** Network metadata of an LPWAN uplink. */
export const NetworkMeta = Type.Object({
  networkId: Type.String(),
  devEui: Type.Optional(Type.String()),
  fPort: Type.Optional(Type.Integer()),
  /** Network receive time, epoch ms. */
  receivedAt: Type.Optional(Type.Integer()),
  /** Payload format the device type declares (json | cbor | binary | cayenne). */
  format: Type.Optional(Type.String()),
});
export type NetworkMeta = Static<typeof NetworkMeta>;

/**
 * The outcome of admitting an accepted uplink: the states it yields as `[asset, ts, value]` (ts in
 * epoch ms, value a JSON value) and the entries dropped from it as `[asset, code, reason]`, or
 * `[asset, code, reason, item]` when the entry is in a batch item (its index in the array of
 * device states), so the item reaches the dead letter.
 */
export const AdmittedUplink = Type.Object({
  states: Type.Array(Type.Tuple([Type.String(), Type.Integer(), Type.Unknown()])),
  dropped: Type.Array(Type.Union([
    Type.Tuple([Type.String(), Type.String(), Type.String()]),
    Type.Tuple([Type.String(), Type.String(), Type.String(), Type.Integer({ minimum: 0 })]),
  ])),
});
export type AdmittedUplink = Static<typeof AdmittedUplink>;

/** Topic `uplinks`, key = device id. Encoded with CBOR (engine/uplink/envelope.ts). */
export const UplinkEnvelope = Type.Object({
  /** Unique uplink id: the idempotency key of every state it yields. */
  id: Type.String(),
  channel: Channel,
  contentType: ContentType,
  deviceId: Type.String(),
  /** Set when the path named one asset (asset state, spec §2.1). */
  asset: Type.Optional(Type.String()),
  network: Type.Optional(NetworkMeta),
  /** Receive time, epoch ms. */
  receivedAt: Type.Integer(),
  /** Raw body bytes as received. */
  body: Type.Unsafe<Uint8Array>({ description: 'raw bytes' }),
  /**
   * What admission decided at the edge (engine/uplink/admission/admitUplink.ts): the engine stores
   * exactly this and does not decode the body again. Absent on records written without admission;
   * the device actor then admits the body itself.
   */
  admitted: Type.Optional(AdmittedUplink),
  /**
   * The envelope format's version. Absent means 1, the format every release so far has written and
   * still writes: the writer leaves the key out, so the bytes on the log stay as they were. A later
   * format writes its number here, and a reader that does not know it refuses the record
   * (MALFORMED_PAYLOAD, a dead letter) instead of misreading it, as it would by ignoring an unknown
   * key. Read, it is not carried: 1 and absent mean the same.
   */
  version: Type.Optional(Type.Literal(1)),
});
export type UplinkEnvelope = Static<typeof UplinkEnvelope>;

/** A JSON value as a device sent it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** One timestamped asset state, as stored (DESIGN.md §3 "State row"). */
export interface StateRow {
  deviceId: string;
  asset: string;
  /** Measurement time, epoch ms (`at`, else the receive time). */
  ts: number;
  /** Receive time, epoch ms. */
  receivedAt: number;
  value: JsonValue;
  uplinkId: string;
  /**
   * Which reading of its uplink this is among those of the same asset and `ts` (0 for the first,
   * absent means 0): the readings of a batch sent without `at` share the uplink id and the receive
   * time, and this keeps them apart, in item order (engine/uplink/admission/numberReadings.ts).
   * The same uplink yields the same numbers every time, so a replay folds into what is stored.
   */
  seq?: number;
}

/** Topic `dead-letters`, key = device id. */
export const DeadLetter = Type.Object({
  code: Type.String(),
  reason: Type.String(),
  /** The asset the rejection concerns, when it concerns one. */
  asset: Type.Optional(Type.String()),
  /**
   * The batch item (index in the array of device states) the rejection concerns, when it concerns
   * one. Dead letters written before it was carried have none and read as of no item.
   */
  item: Type.Optional(Type.Integer({ minimum: 0 })),
  /** Epoch ms of the rejection. */
  rejectedAt: Type.Integer(),
  envelope: UplinkEnvelope,
});
export type DeadLetter = Static<typeof DeadLetter>;

export const Topics = {
  uplinks: 'uplinks',
  commands: 'commands',
  deadLetters: 'dead-letters',
  /** Stored states, rejections and command changes for live streams and feeds (schemas/live.ts). */
  live: 'live',
  /** Asset commands a device's command owner hands to the edge holding its MQTT session (schemas/commands.ts). */
  commandDeliveries: 'command-deliveries',
  /** Stored states, the engine's refusals and command changes, for applications and integrations (schemas/events.ts). */
  events: 'events',
} as const;
