/**
 * Rules (issue: "rules and alarms"): what a ground watches its devices' states for, as the registry
 * keeps them (engine/ports/ruleRegistry.ts) and the HTTP edge shows them
 * (adapters/http/routes/rules/). A rule watches one asset of the ground's devices (the listed ones,
 * or every device that has the asset, including devices created later) for a condition; `for` is
 * how long the condition must hold before an alarm is raised; `clear` the condition that clears it
 * (by default: the condition no longer holds); `actions` what runs when one is raised.
 *
 * Durations are ISO 8601 durations of days, hours, minutes and seconds (`PT3S`, `PT15M`, `P1D`,
 * `P1DT12H`, `PT0.5S`; weeks `P2W`); years and months, whose length varies, are refused. A rule
 * keeps the text it was given; `engine/rules/duration.ts` reads it.
 */
import Type, { type Static } from 'typebox';
import { Page, PageLimit, pageCursor } from './page.ts';
import { AssetName, EntityName, EpochMs, Id } from './registry.ts';

export const MAX_RULE_DEVICES = 1000;
export const MAX_RULE_ACTIONS = 10;
/** Longest `for` or `silentFor`: a year (a timer further out is a mistake). */
export const MAX_RULE_DURATION_MS = 366 * 86_400_000;

/** An ISO 8601 duration of days, hours, minutes, seconds (or weeks); the range is checked when read. */
export const RuleDuration = Type.String({
  minLength: 2,
  maxLength: 40,
  pattern: '^P(?:\\d+W)?(?:\\d+D)?(?:T(?:\\d+H)?(?:\\d+M)?(?:\\d+(?:\\.\\d{1,3})?S)?)?$',
  description: 'ISO 8601 duration: PT3S, PT15M, P1D, P1DT12H (no years or months)',
});

const FiniteNumber = Type.Number({ minimum: -1e300, maximum: 1e300 });

export const Area = Type.Object({
  latitude: Type.Number({ minimum: -90, maximum: 90 }),
  longitude: Type.Number({ minimum: -180, maximum: 180 }),
  /** Up to half the Earth's circumference. */
  radiusMeters: Type.Number({ exclusiveMinimum: 0, maximum: 20_037_509 }),
}, { additionalProperties: false });
export type Area = Static<typeof Area>;

const Above = Type.Object({ above: FiniteNumber }, { additionalProperties: false });
const Below = Type.Object({ below: FiniteNumber }, { additionalProperties: false });
/** Below the first or above the second (the first is the lower). */
const Outside = Type.Object({ outside: Type.Tuple([FiniteNumber, FiniteNumber]) }, { additionalProperties: false });
/** The value equals this one (deep equality of JSON values). */
const Equals = Type.Object({ equals: Type.Unknown() }, { additionalProperties: false });
/** No state of the asset for that long. */
const SilentFor = Type.Object({ silentFor: RuleDuration }, { additionalProperties: false });
/** A location value ({latitude, longitude}) further than `radiusMeters` from the centre. */
const OutsideArea = Type.Object({ outsideArea: Area }, { additionalProperties: false });

/** What a rule watches for. */
export const RuleCondition = Type.Union([Above, Below, Outside, Equals, SilentFor, OutsideArea]);
export type RuleCondition = Static<typeof RuleCondition>;

/** What clears an alarm instead of the condition no longer holding: a condition on the value (hysteresis). */
export const RuleClear = Type.Union([Above, Below, Outside, Equals, OutsideArea]);
export type RuleClear = Static<typeof RuleClear>;

export const Severity = Type.Union([Type.Literal('critical'), Type.Literal('major'), Type.Literal('minor'), Type.Literal('warning'), Type.Literal('info')]);
export type Severity = Static<typeof Severity>;

/** A command to the alarm's device, through the ordinary command path. */
const CommandAction = Type.Object({ command: Type.Object({ asset: AssetName, value: Type.Unknown() }, { additionalProperties: false }) }, { additionalProperties: false });
/** The alarm event delivered to an integration of the ground. */
const IntegrationAction = Type.Object({ integration: Id }, { additionalProperties: false });
export const RuleAction = Type.Union([CommandAction, IntegrationAction]);
export type RuleAction = Static<typeof RuleAction>;

export const RuleDevices = Type.Array(Id, { minItems: 1, maxItems: MAX_RULE_DEVICES, uniqueItems: true });
export const RuleActions = Type.Array(RuleAction, { maxItems: MAX_RULE_ACTIONS });

export const Rule = Type.Object({
  id: Id,
  groundId: Id,
  name: EntityName,
  asset: AssetName,
  /** Only these devices of the ground; absent: every device that has the asset, now and later. */
  devices: Type.Optional(RuleDevices),
  condition: RuleCondition,
  for: Type.Optional(RuleDuration),
  clear: Type.Optional(RuleClear),
  severity: Severity,
  actions: RuleActions,
  createdAt: EpochMs,
  updatedAt: EpochMs,
});
export type Rule = Static<typeof Rule>;

/** A change; `devices`, `for` or `clear` null removes it (every device again, no delay, the default clearing). */
export const RulePatch = Type.Object({
  name: Type.Optional(EntityName),
  asset: Type.Optional(AssetName),
  devices: Type.Optional(Type.Union([RuleDevices, Type.Null()])),
  condition: Type.Optional(RuleCondition),
  for: Type.Optional(Type.Union([RuleDuration, Type.Null()])),
  clear: Type.Optional(Type.Union([RuleClear, Type.Null()])),
  severity: Type.Optional(Severity),
  actions: Type.Optional(RuleActions),
}, { additionalProperties: false });
export type RulePatch = Static<typeof RulePatch>;

/** A page of a ground's rules, oldest first (created time, then id). */
export const RuleQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1001 })),
  after: Type.Optional(Type.Object({ createdAt: EpochMs, id: Id })),
}, { additionalProperties: false });
export type RuleQuery = Static<typeof RuleQuery>;

/** How an asset of that name is declared on the devices a rule covers (distinct declarations). */
export const AssetDeclaration = Type.Object({
  is: Type.Union([Type.Literal('sensor'), Type.Literal('actuator'), Type.Literal('virtual')]),
  profile: Type.Record(Type.String(), Type.Unknown()),
});
export type AssetDeclaration = Static<typeof AssetDeclaration>;

// ---- the HTTP edge (adapters/http/routes/rules/) ----

/** `POST /ground/{groundId}/rules`. */
export const RuleCreateBody = Type.Object({
  name: EntityName,
  asset: AssetName,
  devices: Type.Optional(RuleDevices),
  condition: RuleCondition,
  for: Type.Optional(RuleDuration),
  clear: Type.Optional(RuleClear),
  severity: Severity,
  actions: Type.Optional(RuleActions),
}, { additionalProperties: false });
export type RuleCreateBody = Static<typeof RuleCreateBody>;

/** What the registry stores: a body of `POST /ground/{groundId}/rules` with its ground, checked already against the ground's devices and profiles (by the edge). */
export const NewRule = Type.Object({ groundId: Id, ...RuleCreateBody.properties }, { additionalProperties: false });
export type NewRule = Static<typeof NewRule>;

export const RuleParams = Type.Object({ id: Id });
export const RuleListQuery = Type.Object({ limit: PageLimit, cursor: pageCursor(128) }, { additionalProperties: false });
export type RuleListQuery = Static<typeof RuleListQuery>;
export const RulePage = Page(Rule);
