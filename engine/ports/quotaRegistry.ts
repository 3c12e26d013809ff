/**
 * Quotas port, a part of the registry (engine/ports/registry.ts): each ground's limits — devices it
 * may hold, states per second admitted into it, days its states are kept — set by the operator.
 * SQL in adapters/sql-registry/quotas.ts; contract in test/contracts/quotas.contract.ts.
 *
 * The devices limit is kept by the registry itself: inserting a device into a ground at its limit
 * (createDevice, activation) fails with QUOTA_EXCEEDED in the transaction that would exceed it, with
 * the ground's row locked, so two creations at the limit cannot both pass. The rate is kept by the
 * edges (engine/quotas/GroundRates.ts), which read every quota (`listQuotas`) and share each
 * ground's rate among the live edges (`liveEdges`); retention by the store and the engine
 * (engine/quotas/RetentionSweep.ts).
 *
 * Changes are announced as `quota-changed` (publishingRegistry, and on PostgreSQL the table's
 * trigger, migration 15). Errors: VALIDATION_FAILED for malformed input (detail.field names it),
 * NOT_FOUND for a missing ground, UNAVAILABLE/TIMEOUT when the database cannot be reached, CLOSED
 * after close(). Lookups answer undefined for a malformed id without querying.
 */
import type { GroundQuota, QuotaPatch } from '../../schemas/quotas.ts';

export type { GroundQuota, QuotaLimits, QuotaPatch } from '../../schemas/quotas.ts';

export interface QuotaRegistry {
  /** The ground's quota; undefined when it has none (no limit of any kind). */
  getQuota(groundId: string): Promise<GroundQuota | undefined>;
  /**
   * Sets the limits `patch` names (null removes one), keeping the others. A quota left with no limit
   * is removed: answers undefined then. NOT_FOUND when the ground does not exist.
   */
  setQuota(groundId: string, patch: QuotaPatch): Promise<GroundQuota | undefined>;
  /** Removes every limit of the ground. False when it had none. */
  removeQuota(groundId: string): Promise<boolean>;
  /** Every ground's quota, by ground id (an edge loads them all: a row per limited ground). */
  listQuotas(): Promise<GroundQuota[]>;
  /** Edges whose lease (ConnectivityRegistry.renewEdge) is alive at `now`: the rates' shares. */
  liveEdges(now: number): Promise<number>;
}
