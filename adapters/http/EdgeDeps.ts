/**
 * What the HTTP edge is built from (one options object, DESIGN.md conventions): the options every
 * route group reads (EdgeContext.ts) and the optional groups, each with what it needs.
 */
import type { EdgeCoreDeps } from './EdgeContext.ts';
import type { EdgeCommands } from './routes/commands/commandRoutes.ts';
import type { EdgeIntegrations } from './routes/integrations/integrationRoutes.ts';
import type { LpwanEdgeDeps } from './routes/lpwan/lpwanRoutes.ts';
import type { EdgeProbes } from './routes/meta/probeRoutes.ts';
import type { EdgeLive } from './live/liveRoutes.ts';

export type { EdgeLimits, EdgeLogger } from './EdgeContext.ts';

export interface EdgeDeps extends EdgeCoreDeps {
  /** LPWAN network-server webhooks (routes/lpwan/); absent: no /lpwan routes. */
  lpwan?: LpwanEdgeDeps;
  /** Commands (routes/commands/); absent: no command routes. */
  commands?: EdgeCommands;
  /** Integrations (routes/integrations/): the destination check and the sender; absent: no integration routes. */
  integrations?: EdgeIntegrations;
  /** Live streams (live/liveRoutes.ts, docs/live.md); absent: no /live routes. */
  live?: EdgeLive;
  /** Readiness, request timing and metrics (app/metrics.ts); absent: no /ready nor /metrics. */
  observe?: EdgeObserver;
  /** The web console at /console (console/). Default true; false: no /console routes. */
  console?: boolean;
}

export interface EdgeObserver extends EdgeProbes {
  /** Every answered request, with its route template (`/device/:id`), `unmatched` for none. */
  onRequest?(method: string, route: string, status: number, seconds: number): void;
}

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
