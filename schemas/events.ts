/**
 * Topic `events` (docs/integrations.md): what happened to a device, for applications and
 * integrations. JSON, key = device id. One record holds the events of one source, all of one
 * device, in order: the states one uplink stored followed by its refusals and the alarms its
 * states raised, repeated or cleared, or one command change.
 *
 *     {"events":[{"type":"state","id":"…","deviceId":"…","asset":"t","value":21.5,"at":"…","receivedAt":"…"}, …]}
 *
 * An event's `id` is derived from its source (the uplink's id, the asset, the time and reading; the
 * command's id, status and attempt), so a source replayed after a crash yields the same ids:
 * readers de-duplicate on it. Readers ignore fields they do not know; a new kind of event is a new
 * `type`, which readers skip.
 */
import Type, { type Static } from 'typebox';

export const StateEvent = Type.Object({
  type: Type.Literal('state'),
  id: Type.String(),
  deviceId: Type.String(),
  asset: Type.String(),
  value: Type.Unknown(),
  /** Measurement time, ISO 8601 (ms). */
  at: Type.String(),
  /** When the service received the uplink, ISO 8601 (ms). */
  receivedAt: Type.String(),
  uplinkId: Type.String(),
});
export type StateEvent = Static<typeof StateEvent>;

/** An uplink, or one item or asset of it, the service refused (its dead letter). */
export const RejectionEvent = Type.Object({
  type: Type.Literal('rejection'),
  id: Type.String(),
  deviceId: Type.String(),
  /** The stable error code (docs/errors.md), and why. */
  code: Type.String(),
  reason: Type.String(),
  asset: Type.Optional(Type.String()),
  /** The batch item refused, when one was. */
  item: Type.Optional(Type.Integer({ minimum: 0 })),
  rejectedAt: Type.String(),
  receivedAt: Type.String(),
  uplinkId: Type.String(),
});
export type RejectionEvent = Static<typeof RejectionEvent>;

/** A command's status changed (queued, sent, delivered, expired, failed). */
export const CommandEvent = Type.Object({
  type: Type.Literal('command'),
  id: Type.String(),
  deviceId: Type.String(),
  commandId: Type.String(),
  status: Type.String(),
  asset: Type.Optional(Type.String()),
  attempts: Type.Integer({ minimum: 0 }),
  changedAt: Type.String(),
  code: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
});
export type CommandEvent = Static<typeof CommandEvent>;

/**
 * An alarm of a rule was raised, repeated (its condition held again while active) or cleared by the
 * rule (docs/rules.md), by one of the device's states. An integration receives it when it takes
 * `alarm` events, or when the rule names it in an action (`integrations`).
 */
export const AlarmEvent = Type.Object({
  type: Type.Literal('alarm'),
  id: Type.String(),
  deviceId: Type.String(),
  alarmId: Type.String(),
  ruleId: Type.String(),
  /** What happened: `raised`, `repeated`, `cleared` (by its rule or a member), `acknowledged` (by a member). */
  change: Type.Union([Type.Literal('raised'), Type.Literal('repeated'), Type.Literal('cleared'), Type.Literal('acknowledged')]),
  status: Type.String(),
  severity: Type.String(),
  asset: Type.String(),
  count: Type.Integer({ minimum: 1 }),
  value: Type.Unknown(),
  lastValue: Type.Unknown(),
  /** The measurement time of the state that made the change, ISO 8601 (ms). */
  at: Type.String(),
  /** Integrations the rule's actions deliver it to, whatever events they take. */
  integrations: Type.Optional(Type.Array(Type.String())),
});
export type AlarmEvent = Static<typeof AlarmEvent>;

export const FleetEvent = Type.Union([StateEvent, RejectionEvent, CommandEvent, AlarmEvent]);
export type FleetEvent = Static<typeof FleetEvent>;

/**
 * Where an uplink's events come from: its record on topic `uplinks`. The engine writes them in that
 * order, partition by partition; after a crash it replays the uplinks it had not committed and
 * writes their events again, which a reader recognises by a source it has already passed.
 */
export const EventSource = Type.Object({ partition: Type.Integer({ minimum: 0 }), offset: Type.Integer({ minimum: 0 }) });
export type EventSource = Static<typeof EventSource>;

/** The value of one record of topic `events`; `source` for an uplink's events (not a command change). */
export const EventsRecord = Type.Object({ source: Type.Optional(EventSource), events: Type.Array(FleetEvent, { minItems: 1 }) });
export type EventsRecord = Static<typeof EventsRecord>;
