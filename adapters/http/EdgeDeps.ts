/**
 * What the HTTP edge is built from (one options object, DESIGN.md conventions), and the context the
 * route modules share.
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import type { RegistryLookups } from '../../engine/access/RegistryLookups.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { RegistryChanges } from '../../engine/ports/registryChanges.ts';
import type { RejectionStore } from '../../engine/ports/rejections.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { UplinkAdmissionPort } from '../../engine/ports/uplinkAdmission.ts';
import type { EdgeAccess } from './EdgeAccess.ts';
import type { EdgeRouter } from './EdgeRouter.ts';
import type { EdgeCommands } from './commandRoutes.ts';
import type { LpwanEdgeDeps } from './lpwanRoutes.ts';
import type { EdgeLive } from './liveRoutes.ts';

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

export interface EdgeDeps {
  registry: Registry;
  /** The engine's admission step (engine/uplink/UplinkAdmission.ts): decides, records refusals, appends. */
  admission: UplinkAdmissionPort;
  /** State reads: latest, history, aggregates. */
  store: Pick<StateStore, 'latest' | 'history' | 'aggregate'>;
  rejections: Pick<RejectionStore, 'recent'>;
  clock: Clock;
  /**
   * The process's registry changes (engine/ports/registryChanges.ts): what they touch is dropped from
   * the cached lookups at once, whichever edge or admin CLI made the change. Absent: changes made
   * elsewhere apply within cacheTtlMs.
   */
  changes?: Pick<RegistryChanges, 'subscribe'>;
  limits?: EdgeLimits;
  /**
   * How long a token's principal, a device with its assets and a ground membership are reused
   * before the registry is asked again, ms. Default 2000; 0 disables. Changes made through this edge,
   * and those `changes` carries, apply at once; this bounds how long any other change takes.
   */
  cacheTtlMs?: number;
  /**
   * The process's registry lookups, shared with its other edges and kept current by their owner
   * (then `changes` is left out). Absent: the edge caches its own, for `cacheTtlMs`.
   */
  lookups?: RegistryLookups;
  /** Internal errors (500) are logged here; the client sees only "internal error". */
  logger?: EdgeLogger;
  /** LPWAN network-server webhooks (lpwanRoutes.ts); absent: no /lpwan routes. */
  lpwan?: LpwanEdgeDeps;
  /** Commands (commandRoutes.ts); absent: no command routes. */
  commands?: EdgeCommands;
  /** Live streams (liveRoutes.ts, docs/live.md); absent: no /live routes. */
  live?: EdgeLive;
  /** Readiness, request timing and metrics (app/metrics.ts); absent: no /ready nor /metrics. */
  observe?: EdgeObserver;
  /** The web console at /console (consoleRoutes.ts). Default true; false: no /console routes. */
  console?: boolean;
}

export interface EdgeObserver {
  /** GET /ready answers 200 when true, 503 when not (adapters away, no partitions yet). */
  ready(): boolean;
  /**
   * GET /metrics, the Prometheus exposition, for a request bearing `token` (schemas/config.ts
   * `metrics.token`). Absent: no /metrics route (404): metrics are the metrics listener's
   * (app/serveMetrics.ts), not the public API's.
   */
  metrics?: { token: string; scrape(): Promise<{ contentType: string; body: string }> };
  /** Every answered request, with its route template (`/device/:id`), `unmatched` for none. */
  onRequest?(method: string, route: string, status: number, seconds: number): void;
}

export interface EdgeContext {
  deps: EdgeDeps;
  router: EdgeRouter;
  access: EdgeAccess;
  maxBodyBytes: number;
  /**
   * Drops this edge's cached access data of a device it just changed: at once even without a
   * change feed (other processes and the engine hear of it through `deps.changes`).
   */
  changed(deviceId: string, deleted?: boolean): void;
}

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
