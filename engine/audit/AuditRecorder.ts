/**
 * Writes the HTTP edge's audit entries (engine/ports/auditLog.ts) in batches on the kernel's
 * Batcher: an entry waits at most `flushIntervalMs` (default 200) and is written with those of the
 * same interval in one insert, so recording costs a request a push onto a buffer, not a round trip
 * (bench/audit.bench.ts). A batch the registry could not take is retried with the one backoff while
 * the registry is down (retriable errors), up to `maxRetries`; stop() writes what waits, one last try.
 *
 * Memory: at most `maxPending` entries (default 100 000) buffered or being written; past that an
 * entry is refused and told to `onDropped` (the registry has been unreachable for that long).
 */
import { Batcher } from '../kernel/Batcher.ts';
import { exponentialBackoff } from '../kernel/backoff.ts';
import type { Clock } from '../kernel/clock.ts';
import type { FleetError } from '../kernel/errors.ts';
import type { AuditEntry, AuditLog } from '../ports/auditLog.ts';

export interface AuditRecorderOptions {
  log: Pick<AuditLog, 'recordAudit'>;
  clock: Clock;
  /** Longest an entry waits before it is written, ms. Default 200. */
  flushIntervalMs?: number;
  /** Entries buffered or being written at most. Default 100 000. */
  maxPending?: number;
  /** Retries of a batch the registry could not take (retriable errors). Default 20 (about eight minutes: 1, 2, 4, 8, 16, then 30 s apart). */
  maxRetries?: number;
  /** Entries not written: refused when full (`error` undefined), or their batch failed for good. */
  onDropped?(entries: number, error?: FleetError): void;
}

/** Where an edge records what it changed: the recorder, or nothing when the log is off. */
export interface AuditSink {
  record(entry: AuditEntry): void;
}

export class AuditRecorder implements AuditSink {
  readonly #batcher: Batcher<AuditEntry>;
  readonly #onDropped: AuditRecorderOptions['onDropped'];

  constructor(options: AuditRecorderOptions) {
    this.#onDropped = options.onDropped;
    this.#batcher = new Batcher<AuditEntry>({
      name: 'audit log',
      clock: options.clock,
      write: (entries) => options.log.recordAudit(entries),
      maxItems: 1000,
      maxDelayMs: options.flushIntervalMs ?? 200,
      maxPending: options.maxPending ?? 100_000,
      overflow: 'refuse',
      retry: { backoff: exponentialBackoff({ initialMs: 1000, maxMs: 30_000 }), maxRetries: options.maxRetries ?? 20 },
      onFailed: (entries, error) => this.#onDropped?.(entries.length, error),
    });
  }

  record(entry: AuditEntry): void {
    if (!this.#batcher.offer(entry)) this.#onDropped?.(1);
  }

  /** Entries buffered or being written. */
  get pending(): number {
    return this.#batcher.pending;
  }

  /** Resolves once every entry recorded so far is written (or dropped). */
  flush(): Promise<void> {
    return this.#batcher.flush();
  }

  /** Writes what waits (one last try for a batch waiting to be retried), then records nothing more. */
  stop(): Promise<void> {
    return this.#batcher.close({ retries: false });
  }
}
