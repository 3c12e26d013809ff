/**
 * Audit log port, a part of the registry (engine/ports/registry.ts): the changes made to each
 * ground, who made them (a user, a key or an operator), when, the operation, its target and its
 * result (docs/grounds.md "Audit log"). The HTTP edge records through
 * engine/audit/AuditRecorder.ts (a few hundred ms of entries per write), the admin CLI one entry
 * per command; engines prune what is older than the retention (engine/audit/AuditPruner.ts). SQL
 * in adapters/sql-registry/audit.ts; contract in test/contracts/audit.contract.ts.
 *
 * Entries outlive what they name: a deleted ground's, member's or key's entries stay until they
 * are pruned. Errors: VALIDATION_FAILED for malformed input (nothing of the batch is written),
 * UNAVAILABLE/TIMEOUT when the database cannot be reached, CLOSED after close().
 */
import type { AuditEntry, AuditQuery, ListedAuditEntry } from '../../schemas/audit.ts';

export type { AuditActor, AuditEntry, AuditQuery, AuditResult, ListedAuditEntry } from '../../schemas/audit.ts';

export interface AuditLog {
  /** Appends the entries, all or none. */
  recordAudit(entries: readonly AuditEntry[]): Promise<void>;
  /** The ground's entries newest first (by `at`, then `seq`), `before` excluded; [] for a malformed id. */
  listAudit(groundId: string, query: AuditQuery): Promise<ListedAuditEntry[]>;
  /** Deletes every entry with `at` before `olderThan` (epoch ms); how many. Idempotent. */
  pruneAudit(olderThan: number): Promise<number>;
}
