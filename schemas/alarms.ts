/**
 * Alarms (docs/rules.md): what a rule raised for a device. At most one alarm of a (rule, device)
 * is active at a time; a condition that holds again while it is active raises its `count`. Members
 * acknowledge and clear alarms; the engine clears one when the rule's clear condition holds.
 */
import Type, { type Static } from 'typebox';
import { Page, PageLimit, pageCursor } from './page.ts';
import { AssetName, EpochMs, Id } from './registry.ts';
import { Severity } from './rules.ts';

export const AlarmStatus = Type.Union([Type.Literal('active'), Type.Literal('cleared')]);
export type AlarmStatus = Static<typeof AlarmStatus>;

export const Alarm = Type.Object({
  id: Id,
  ruleId: Id,
  groundId: Id,
  deviceId: Id,
  asset: AssetName,
  severity: Severity,
  status: AlarmStatus,
  acknowledged: Type.Boolean(),
  /** The measurement time of the state that raised it. */
  startedAt: EpochMs,
  clearedAt: Type.Optional(EpochMs),
  acknowledgedAt: Type.Optional(EpochMs),
  /** The user who acknowledged it. */
  acknowledgedBy: Type.Optional(Id),
  /** The value that raised it, and the last value for which the condition held. */
  value: Type.Unknown(),
  lastValue: Type.Unknown(),
  /** Times the condition began to hold while it was active (1 when raised). */
  count: Type.Integer({ minimum: 1 }),
  updatedAt: EpochMs,
});
export type Alarm = Static<typeof Alarm>;

/** A page of a ground's alarms, newest first (started time, then id, both descending). */
export const AlarmQuery = Type.Object({
  status: Type.Optional(AlarmStatus),
  acknowledged: Type.Optional(Type.Boolean()),
  deviceId: Type.Optional(Id),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1001 })),
  before: Type.Optional(Type.Object({ startedAt: EpochMs, id: Id })),
}, { additionalProperties: false });
export type AlarmQuery = Static<typeof AlarmQuery>;

/** One state of a device judged by one rule (engine/rules/RuleEvaluator.ts), applied by the registry at once. */
export const RuleEvaluation = Type.Object({
  ruleId: Id,
  groundId: Id,
  deviceId: Id,
  asset: AssetName,
  severity: Severity,
  /** The state's measurement time and id (`<uplink id>/<asset>/<ts>/<reading>`): an evaluation at or before the last one applied for (rule, device) is stale. */
  at: EpochMs,
  stateId: Type.String({ minLength: 1, maxLength: 512 }),
  value: Type.Unknown(),
  /** The rule's condition holds for this state. */
  holds: Type.Boolean(),
  /** Its clear condition holds (without one: the condition does not). */
  clears: Type.Boolean(),
}, { additionalProperties: false });
export type RuleEvaluation = Static<typeof RuleEvaluation>;

/** A state of a silence rule's asset: when it was received. */
export const SilenceSighting = Type.Object({
  ruleId: Id,
  deviceId: Id,
  receivedAt: EpochMs,
}, { additionalProperties: false });
export type SilenceSighting = Static<typeof SilenceSighting>;
export const SilenceSightings = Type.Array(SilenceSighting, { maxItems: 100_000 });

/** Per partition of topic uplinks, the receive time through which every uplink is judged. */
export const RuleProgress = Type.Array(Type.Object({
  partition: Type.Integer({ minimum: 0, maximum: 99_999 }),
  through: EpochMs,
}, { additionalProperties: false }), { maxItems: 100_000 });
export type RuleProgress = Static<typeof RuleProgress>;

// ---- the HTTP edge (adapters/http/routes/rules/alarmRoutes.ts) ----

export const AlarmParams = Type.Object({ id: Id });
export const AlarmListQuery = Type.Object({
  status: Type.Optional(AlarmStatus),
  acknowledged: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  deviceId: Type.Optional(Id),
  limit: PageLimit,
  cursor: pageCursor(128),
}, { additionalProperties: false });
export type AlarmListQuery = Static<typeof AlarmListQuery>;
export const AlarmPage = Page(Alarm);
