/**
 * What the HTTP edge is built from (one options object, DESIGN.md conventions), and the context the
 * route modules share.
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { RejectionStore } from '../../engine/ports/rejections.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { UplinkReceipt, UplinkSubmission } from '../../engine/uplink/UplinkIngest.ts';
import type { EdgeAccess } from './EdgeAccess.ts';
import type { EdgeRouter } from './EdgeRouter.ts';
import type { EdgeCommands } from './commandRoutes.ts';
import type { LpwanEdgeDeps } from './lpwanRoutes.ts';

export interface EdgeLimits {
  /** Largest request body, bytes (with or without Content-Length). Default 65 536. */
  maxBodyBytes?: number;
  /**
   * Per bearer token: a bucket of `burst` requests refilled at `perSecond` (Clock-driven).
   * Absent, or perSecond 0: no limit.
   */
  rateLimit?: { perSecond: number; burst: number };
}

export interface EdgeLogger {
  error(message: string, fields?: Record<string, unknown>): void;
}

/** engine/uplink/UplinkIngest.ts, or anything that resolves once the uplink is durable in the log. */
export interface UplinkIngestPort {
  /** Rejects with FleetError BACKPRESSURE/UNAVAILABLE (→ 503 + Retry-After) when it cannot take more. */
  append(submission: UplinkSubmission): Promise<UplinkReceipt | void>;
}

export interface EdgeDeps {
  registry: Registry;
  ingest: UplinkIngestPort;
  /** State reads: latest, history, aggregates. */
  store: Pick<StateStore, 'latest' | 'history' | 'aggregate'>;
  rejections: Pick<RejectionStore, 'recent'>;
  clock: Clock;
  /** Called after a device or its assets changed or it was deleted, so the engine re-reads profiles. */
  onDeviceChanged?(deviceId: string): void;
  limits?: EdgeLimits;
  /**
   * How long a token's principal, a device with its assets and a ground membership are reused
   * before the registry is asked again, ms. Default 2000; 0 disables. Changes made through this edge
   * apply at once; revocations and changes made elsewhere apply within this time.
   */
  cacheTtlMs?: number;
  /** Internal errors (500) are logged here; the client sees only "internal error". */
  logger?: EdgeLogger;
  /** LPWAN network-server webhooks (lpwanRoutes.ts); absent: no /lpwan routes. */
  lpwan?: LpwanEdgeDeps;
  /** Commands (commandRoutes.ts); absent: no command routes. */
  commands?: EdgeCommands;
}

export interface EdgeContext {
  deps: EdgeDeps;
  router: EdgeRouter;
  access: EdgeAccess;
  maxBodyBytes: number;
  /** Drops cached access data of the device, then onDeviceChanged (shielded from its errors). */
  changed(deviceId: string, deleted?: boolean): void;
}

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
