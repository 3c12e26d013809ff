/**
 * Usage port, a part of the registry (engine/ports/registry.ts): how many states each ground stored
 * and how many commands it issued, per UTC day, for GET /ground/{id}/usage (docs/grounds.md
 * "Usage"). The engines count them as they store states and queue commands
 * (engine/usage/UsageRecorder.ts) and add them here every few seconds, by device: the registry
 * finds each device's ground. SQL in adapters/sql-registry/usage.ts; contract in
 * test/contracts/usage.contract.ts.
 *
 * Counts are added, never set: a flush an engine could not write is retried, and one written just
 * before a crash is not taken back, while the uplinks its engine had not committed are stored and
 * counted again (the store keeps them once): a count may exceed what is stored by what an engine
 * stored in its last seconds. Errors: VALIDATION_FAILED for malformed input, UNAVAILABLE/TIMEOUT
 * when the database cannot be reached, CLOSED after close().
 */
export interface DeviceUsage {
  deviceId: string;
  /** The UTC day, as days since the epoch (floor of epoch ms / 86 400 000). */
  day: number;
  states: number;
  commands: number;
}

export interface GroundUsageCounts {
  statesToday: number;
  statesThisMonth: number;
  commandsToday: number;
  commandsThisMonth: number;
}

export interface UsageRegistry {
  /** Adds these counts to the days of the devices' grounds; devices deleted meanwhile are skipped. */
  recordUsage(entries: readonly DeviceUsage[]): Promise<void>;
  /** The ground's counts of `today` and of the month from `monthStart` (both UTC day numbers). */
  usageOf(groundId: string, today: number, monthStart: number): Promise<GroundUsageCounts>;
}

/** The UTC day number of an epoch-ms time. */
export const dayOf = (ms: number): number => Math.floor(ms / 86_400_000);

/** The UTC day number of the first day of the month of `day`. */
export function monthStartOf(day: number): number {
  const date = new Date(day * 86_400_000);
  return dayOf(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));
}
