/**
 * Quotas of grounds (docs/grounds.md "Quotas"): set by the operator (`fleetstream admin set-quota`),
 * with defaults for new grounds in the configuration (schemas/config.ts `quotas`). Types of
 * engine/ports/quotaRegistry.ts derive from these.
 */
import Type, { type Static } from 'typebox';
import { EpochMs, Id } from './registry.ts';

/** Highest limits taken: above them a quota is a typo, not a limit (the CLI says so). */
export const QUOTA_MAXIMUMS = { devices: 10_000_000, statesPerSecond: 1_000_000, retentionDays: 36_500 } as const;

export type QuotaName = keyof typeof QUOTA_MAXIMUMS;
export const QUOTA_NAMES = Object.keys(QUOTA_MAXIMUMS) as QuotaName[];

const limit = (maximum: number, description: string) => Type.Integer({ minimum: 1, maximum, description });

export const QuotaDevices = limit(QUOTA_MAXIMUMS.devices, 'devices the ground may hold');
export const QuotaStatesPerSecond = limit(QUOTA_MAXIMUMS.statesPerSecond, 'states per second admitted into the ground, over every edge (a burst of twice that)');
export const QuotaRetentionDays = limit(QUOTA_MAXIMUMS.retentionDays, 'days the ground\'s states are kept');

/** Limits to set: a number sets one, null removes it, an absent one is left as it is. */
export const QuotaPatch = Type.Object({
  devices: Type.Optional(Type.Union([QuotaDevices, Type.Null()])),
  statesPerSecond: Type.Optional(Type.Union([QuotaStatesPerSecond, Type.Null()])),
  retentionDays: Type.Optional(Type.Union([QuotaRetentionDays, Type.Null()])),
}, { additionalProperties: false });
export type QuotaPatch = Static<typeof QuotaPatch>;

/** Limits without a ground: the configuration's defaults for new grounds. */
export const QuotaLimits = Type.Object({
  devices: Type.Optional(QuotaDevices),
  statesPerSecond: Type.Optional(QuotaStatesPerSecond),
  retentionDays: Type.Optional(QuotaRetentionDays),
}, { additionalProperties: false });
export type QuotaLimits = Static<typeof QuotaLimits>;

/** A ground's quota: each limit absent when the ground has none of that kind. */
export const GroundQuota = Type.Object({
  groundId: Id,
  ...QuotaLimits.properties,
  updatedAt: EpochMs,
});
export type GroundQuota = Static<typeof GroundQuota>;

const Quota = Type.Union([Type.Integer(), Type.Null()], { description: 'the ground\'s limit; null: none' });

/** GET /ground/{id}/usage: what the ground uses, each against its quota (docs/grounds.md "Usage"). */
export const GroundUsage = Type.Object({
  groundId: Type.String(),
  /** When this was read, ISO 8601; days and months are UTC. */
  at: Type.String({ format: 'date-time' }),
  devices: Type.Object({ count: Type.Integer(), quota: Quota }),
  states: Type.Object({
    today: Type.Integer(),
    thisMonth: Type.Integer(),
    /** The states-per-second quota. */
    perSecondQuota: Quota,
  }),
  commands: Type.Object({ today: Type.Integer(), thisMonth: Type.Integer() }),
  stored: Type.Object({
    /** State rows stored now (a replayed uplink counts until merges fold it). */
    rows: Type.Integer(),
    /** An estimate: the rows times the states table's compressed bytes per row. */
    compressedBytes: Type.Integer(),
    retentionDays: Quota,
  }),
});
export type GroundUsage = Static<typeof GroundUsage>;
