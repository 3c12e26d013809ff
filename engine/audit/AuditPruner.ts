/**
 * Prunes the grounds' audit logs (engine/ports/auditLog.ts): once per interval (the retention
 * sweep's, an hour by default), run by every engine process, the entries recorded more than
 * `retentionDays` ago (default 90) are deleted. Idempotent: each run deletes what is older than its
 * own cutoff, so several engines pruning at once delete each entry once and the others nothing.
 */
import type { Clock } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import { Periodic } from '../kernel/Periodic.ts';
import type { AuditLog } from '../ports/auditLog.ts';

const DAY_MS = 86_400_000;
export const DEFAULT_AUDIT_RETENTION_DAYS = 90;

export interface AuditPrunerOptions {
  log: Pick<AuditLog, 'pruneAudit'>;
  clock: Clock;
  /** Days an entry is kept. Default 90. */
  retentionDays?: number;
  /** Time between runs, ms. Default 3 600 000 (an hour). */
  intervalMs?: number;
  onError?(error: FleetError): void;
}

export class AuditPruner {
  readonly #o: AuditPrunerOptions;
  readonly #periodic: Periodic;

  constructor(options: AuditPrunerOptions) {
    this.#o = options;
    this.#periodic = new Periodic({ clock: options.clock, intervalMs: options.intervalMs ?? 3_600_000, run: () => this.prune(), onError: options.onError });
  }

  start(): void {
    this.#periodic.start();
  }

  stop(): Promise<void> {
    return this.#periodic.stop();
  }

  /** One run: how many entries it deleted. */
  prune(): Promise<number> {
    return this.#o.log.pruneAudit(this.#o.clock.now() - (this.#o.retentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS) * DAY_MS);
  }
}
