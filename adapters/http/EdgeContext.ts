/**
 * The context the route modules share: what every route group reads of the edge's options
 * (EdgeDeps.ts adds the optional groups: LPWAN, commands, live, probes, console), the router, and
 * access. Route modules import this file, never EdgeDeps.ts, so the options may name their deps
 * types without an import running back.
 */
import type { AuditSink } from '../../engine/audit/AuditRecorder.ts';
import type { Clock } from '../../engine/kernel/clock.ts';
import type { Alarm } from '../../engine/ports/alarmRegistry.ts';
import type { RegistryLookups } from '../../engine/access/RegistryLookups.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { RegistryChanges } from '../../engine/ports/registryChanges.ts';
import type { RejectionStore } from '../../engine/ports/rejections.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { StateExport } from '../../engine/ports/stateExport.ts';
import type { StateRetention } from '../../engine/ports/stateRetention.ts';
import type { UplinkAdmissionPort } from '../../engine/ports/uplinkAdmission.ts';
import type { EdgeAccess } from './EdgeAccess.ts';
import type { EdgeRouter } from './EdgeRouter.ts';

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

/** The edge's options every route group reads. */
export interface EdgeCoreDeps {
  registry: Registry;
  /** The engine's admission step (engine/uplink/UplinkAdmission.ts): decides, records refusals, appends. */
  admission: UplinkAdmissionPort;
  /** State reads: latest, history, aggregates. */
  /** storedOf: the service's store has it (GET /ground/{id}/usage); a test's may not. */
  store: Pick<StateStore, 'latest' | 'history' | 'aggregate'> & Partial<Pick<StateRetention, 'storedOf'>>;
  rejections: Pick<RejectionStore, 'recent'>;
  /**
   * State exports (routes/states/exportRoutes.ts): the store's, or in an embedded edge worker the
   * primary's through its relay (app/exportRelay.ts). Absent: exports are answered 503 EXPORT_UNAVAILABLE.
   */
  exports?: StateExport;
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
  /**
   * Whether the service sees the devices' MQTT sessions (its own MQTT edges record them): GET
   * /device/{id} then tells `connected`. False with an external broker, which holds the sessions.
   * Default true.
   */
  sessionsSeen?: boolean;
  /**
   * A member acknowledged or cleared an alarm (it changed): told to the live streams and the
   * integrations. Absent: nobody is told.
   */
  alarmChanged?(change: 'acknowledged' | 'cleared', alarm: Alarm, by: string): void;
  /**
   * Where the changes made through this edge are recorded (engine/audit/AuditRecorder.ts, docs/grounds.md
   * "Audit log"). Absent: not recorded.
   */
  audit?: AuditSink;
}

export interface EdgeContext {
  deps: EdgeCoreDeps;
  router: EdgeRouter;
  access: EdgeAccess;
  maxBodyBytes: number;
  /**
   * Drops this edge's cached access data of a device it just changed: at once even without a
   * change feed (other processes and the engine hear of it through `deps.changes`).
   */
  changed(deviceId: string, deleted?: boolean): void;
}
