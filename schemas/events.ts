/**
 * Topic `events` (docs/integrations.md): what happened to a device, for applications and
 * integrations. JSON, key = device id. One record holds the events of one source, all of one
 * device, in order: the states one uplink stored followed by its refusals and the alarms its
 * states raised, repeated or cleared, or one command change.
 *
 * A record is compact (EventsRecord): what its events share (the device, the uplink, its receipt)
 * once, each state a tuple `[asset, at, value]`, times in epoch ms; the events themselves (the
 * shapes below, as integrations deliver them) are expanded from it by the reader
 * (engine/events/eventRecords.ts expandEventsRecord):
 *
 *     {"source":{"partition":3,"offset":1841},"deviceId":"…","uplinkId":"…","receivedAt":1764324000120,"states":[["t",1764324000000,21.5]]}
 *
 * An event's `id` is derived from its source (the uplink's id, the asset, the time and reading; the
 * command's id, status and attempt), so a source replayed after a crash yields the same ids:
 * readers de-duplicate on it. Readers ignore fields they do not know; a new kind of event is a new
 * field (or `type`, in `alarms`), which readers skip.
 *
 * On the embedded service's local log (whose readers are its integrations, never applications), the
 * records of a run of uplinks of one partition of `uplinks` share one record (UplinksRecord), keyed
 * by the first one's device: `{"uplinks":[<an uplink's record>,…]}`, in order, of at most
 * `integrations.batchEvents` events. The topics on Kafka hold one record per source.
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

/**
 * A stored state in a record: `[asset, measurement time (epoch ms), value]`, and the reading's
 * index among the uplink's readings of that asset and time when it is not 0 (schemas/messages.ts
 * StateRow `seq`). Its event: `{"type":"state","id":"<uplinkId>/<asset>/<at>/<seq>", …}`.
 */
export const RecordedState = Type.Union([
  Type.Tuple([Type.String(), Type.Integer(), Type.Unknown()]),
  Type.Tuple([Type.String(), Type.Integer(), Type.Unknown(), Type.Integer({ minimum: 1 })]),
]);
export type RecordedState = Static<typeof RecordedState>;

/** A refusal in a record; its event's id: `<uplinkId>/rejection/<item or ->/<asset or ->/<code>`. */
export const RecordedRejection = Type.Object({
  code: Type.String(),
  reason: Type.String(),
  /** Epoch ms. */
  rejectedAt: Type.Integer(),
  /** An empty one counts in the id only (the event has no asset). */
  asset: Type.Optional(Type.String()),
  item: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type RecordedRejection = Static<typeof RecordedRejection>;

/** A command change in a record; its event's id: `<commandId>/<status>/<attempts>`. */
export const RecordedCommand = Type.Object({
  commandId: Type.String(),
  status: Type.String(),
  attempts: Type.Integer({ minimum: 0 }),
  /** Epoch ms. */
  changedAt: Type.Integer(),
  asset: Type.Optional(Type.String()),
  code: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
});
export type RecordedCommand = Static<typeof RecordedCommand>;

/**
 * The value of one record of topic `events`. An uplink's record: `source` (none for an uplink an
 * edge refused whole), `uplinkId` and `receivedAt` (epoch ms), then its `states`, `rejections` and
 * `alarms` (each absent when empty), whose events come in that order. A command change:
 * `commands`. Alarm changes no uplink made: `alarms` alone. Alarms are written as they are
 * delivered (AlarmEvent), less `groundId`.
 */
export const EventsRecord = Type.Object({
  source: Type.Optional(EventSource),
  deviceId: Type.String(),
  uplinkId: Type.Optional(Type.String({ minLength: 1 })),
  receivedAt: Type.Optional(Type.Integer()),
  states: Type.Optional(Type.Array(RecordedState)),
  rejections: Type.Optional(Type.Array(RecordedRejection)),
  alarms: Type.Optional(Type.Array(AlarmEvent)),
  commands: Type.Optional(Type.Array(RecordedCommand)),
});
export type EventsRecord = Static<typeof EventsRecord>;

/** The records of a run of uplinks, in order (the local log's topic `events` only). */
export const UplinksRecord = Type.Object({
  uplinks: Type.Array(EventsRecord, { minItems: 1 }),
});
export type UplinksRecord = Static<typeof UplinksRecord>;
