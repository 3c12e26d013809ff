/**
 * Expiry of states by ground (docs/grounds.md "Quotas", `retention-days`), beside the state store:
 * the states table is ordered by device, and holds no ground, so no TTL of the table can tell one
 * ground's rows from another's; the engine's RetentionSweep (engine/quotas/RetentionSweep.ts) asks
 * here for the devices of each ground with a retention. SQL in adapters/clickhouse-sql/stateRetention.ts.
 *
 * Idempotent: deleting what is already gone deletes nothing, so two engines sweeping at once, or
 * one sweeping again after a crash, is safe. Errors: UNAVAILABLE/TIMEOUT when the store cannot be
 * reached, CLOSED after close().
 */
export interface StateRetention {
  /**
   * Deletes the states of `deviceIds` measured (`ts`) before `before` (epoch ms), and their minute
   * and hour rollups wholly before it. Resolves once the deletion is applied (chDB and current
   * servers: a lightweight DELETE) or queued (ClickHouse 18.16: a mutation, applied in the background).
   */
  expireStates(deviceIds: readonly string[], before: number): Promise<void>;
  /**
   * The state rows of `deviceIds` stored now (physical rows: a replayed uplink counts until merges
   * fold it), and an estimate of their compressed bytes: those rows times the states table's
   * compressed bytes per row (its active parts), as no part holds one ground alone.
   */
  storedOf(deviceIds: readonly string[]): Promise<StoredSize>;
}

export interface StoredSize {
  rows: number;
  compressedBytes: number;
}
