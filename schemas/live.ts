/**
 * Live data (docs/live.md): what engines and edges publish on topic `live` (key = device id) and
 * what SSE and WebSocket subscribers receive as an event's `data`. A record's value is the UTF-8
 * JSON of a LiveRecord: the events of one device from one batch, in the order they happened. JSON
 * rather than CBOR, as on `commands`: any Kafka client can follow the topic.
 */
import Type, { type Static } from 'typebox';
import { CommandStatus } from './commands.ts';

/** A state once durable in the store. */
export const LiveState = Type.Object({
  deviceId: Type.String(),
  /** Asset name. */
  asset: Type.String(),
  value: Type.Unknown(),
  /** Measurement time, ISO 8601. */
  at: Type.String(),
  /** Receive time, epoch ms. */
  receivedAt: Type.Integer(),
  uplinkId: Type.String(),
});
export type LiveState = Static<typeof LiveState>;

/** An uplink (or part of one) refused, once its dead letter is durable. */
export const LiveRejection = Type.Object({
  deviceId: Type.String(),
  code: Type.String(),
  reason: Type.String(),
  asset: Type.Optional(Type.String()),
  /** Epoch ms. */
  rejectedAt: Type.Integer(),
  uplinkId: Type.Optional(Type.String()),
});
export type LiveRejection = Static<typeof LiveRejection>;

/** A command lifecycle change. */
export const LiveCommand = Type.Object({
  deviceId: Type.String(),
  commandId: Type.String(),
  status: CommandStatus,
  asset: Type.Optional(Type.String()),
  attempts: Type.Integer(),
  /** Epoch ms. */
  changedAt: Type.Integer(),
  code: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
});
export type LiveCommand = Static<typeof LiveCommand>;

/**
 * An alarm's change (docs/rules.md): raised, repeated or cleared by its rule (a state or a timer),
 * acknowledged or cleared by a member (`by`: the member's user id).
 */
export const LiveAlarm = Type.Object({
  deviceId: Type.String(),
  alarmId: Type.String(),
  ruleId: Type.String(),
  groundId: Type.String(),
  asset: Type.String(),
  severity: Type.String(),
  change: Type.Union([Type.Literal('raised'), Type.Literal('repeated'), Type.Literal('cleared'), Type.Literal('acknowledged')]),
  status: Type.String(),
  acknowledged: Type.Boolean(),
  count: Type.Integer(),
  value: Type.Unknown(),
  lastValue: Type.Unknown(),
  /** Epoch ms. */
  startedAt: Type.Integer(),
  clearedAt: Type.Optional(Type.Integer()),
  acknowledgedAt: Type.Optional(Type.Integer()),
  acknowledgedBy: Type.Optional(Type.String()),
  by: Type.Optional(Type.String()),
  /** Epoch ms. */
  changedAt: Type.Integer(),
});
export type LiveAlarm = Static<typeof LiveAlarm>;

export const LiveKind = Type.Union([Type.Literal('state'), Type.Literal('rejection'), Type.Literal('command'), Type.Literal('alarm')]);
export type LiveKind = Static<typeof LiveKind>;
export const LIVE_KINDS: readonly LiveKind[] = ['state', 'rejection', 'command', 'alarm'];

export type LiveEvent =
  | { kind: 'state'; data: LiveState }
  | { kind: 'rejection'; data: LiveRejection }
  | { kind: 'command'; data: LiveCommand }
  | { kind: 'alarm'; data: LiveAlarm };

/**
 * One record of topic `live`: `e` is a list of [kind, data]. Version 1. `n`, the length of `e`,
 * comes right after `v` as this service writes it, so an edge with nobody to send the events to can
 * count them without reading the record (LiveHub); a record without it is read whole.
 */
export const LiveRecord = Type.Object({
  v: Type.Literal(1),
  n: Type.Optional(Type.Integer({ minimum: 0 })),
  e: Type.Array(Type.Tuple([LiveKind, Type.Unknown()])),
});
export type LiveRecord = Static<typeof LiveRecord>;
