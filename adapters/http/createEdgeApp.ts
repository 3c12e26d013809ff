/**
 * The HTTP edge for devices, assets and states (DESIGN.md §5) as a Hono app: routes described by
 * TypeBox schemas (schemas/edge.ts), the OpenAPI document generated from them at /openapi.json,
 * /health and /ready for probes, and every error as application/problem+json with a stable code.
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { FleetError } from '../../engine/kernel/errors.ts';
import { consoleRoutes } from './console/consoleRoutes.ts';
import { EdgeAccess } from './EdgeAccess.ts';
import type { EdgeContext } from './EdgeContext.ts';
import { DEFAULT_MAX_BODY_BYTES, type EdgeDeps, type EdgeObserver } from './EdgeDeps.ts';
import { EdgeRouter } from './EdgeRouter.ts';
import { LiveConnections, liveRoutes } from './live/liveRoutes.ts';
import { problemResponse } from './problemResponse.ts';
import { activationEdge } from './routes/activation/activationEdge.ts';
import { commandRoutes } from './routes/commands/commandRoutes.ts';
import { groundRoutes } from './routes/grounds/groundRoutes.ts';
import { keyRoutes } from './routes/grounds/keyRoutes.ts';
import { usageRoutes } from './routes/grounds/usageRoutes.ts';
import { auditRoutes } from './routes/grounds/auditRoutes.ts';
import { memberRoutes } from './routes/grounds/memberRoutes.ts';
import { assetRoutes } from './routes/devices/assetRoutes.ts';
import { integrationRoutes } from './routes/integrations/integrationRoutes.ts';
import { ruleRoutes } from './routes/rules/ruleRoutes.ts';
import { alarmRoutes } from './routes/rules/alarmRoutes.ts';
import { deviceRoutes } from './routes/devices/deviceRoutes.ts';
import { lpwanRoutes } from './routes/lpwan/lpwanRoutes.ts';
import { openApiRoute } from './routes/meta/openApiRoute.ts';
import { probeRoutes } from './routes/meta/probeRoutes.ts';
import { principalRoutes } from './routes/principals/principalRoutes.ts';
import { gatewayRoutes } from './routes/states/gatewayRoutes.ts';
import { historyRoutes } from './routes/states/historyRoutes.ts';
import { exportRoutes } from './routes/states/exportRoutes.ts';
import { rejectionRoutes } from './routes/states/rejectionRoutes.ts';
import { stateRoutes } from './routes/states/stateRoutes.ts';
import { uplinkRoutes } from './routes/states/uplinkRoutes.ts';
import { TokenBuckets } from './TokenBuckets.ts';

export type { EdgeDeps, EdgeLimits, EdgeLogger, EdgeObserver } from './EdgeDeps.ts';

export function createEdgeApp(deps: EdgeDeps): Hono {
  const maxBodyBytes = deps.limits?.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!(Number.isSafeInteger(maxBodyBytes) && maxBodyBytes > 0)) throw new RangeError('limits.maxBodyBytes must be a positive integer');
  const rate = deps.limits?.rateLimit;
  const limiter = rate !== undefined && rate.perSecond > 0
    ? new TokenBuckets({ clock: deps.clock, perSecond: rate.perSecond, burst: rate.burst })
    : undefined;

  const app = new Hono();
  const logInternal = (error: unknown, where: Record<string, unknown>) => {
    deps.logger?.error('http edge internal error', { ...where, error: error instanceof Error ? error : String(error) });
  };
  const access = new EdgeAccess({ registry: deps.registry, clock: deps.clock, cacheTtlMs: deps.cacheTtlMs ?? 2000, lookups: deps.lookups });
  const router = new EdgeRouter({
    app, access, limiter, onInternal: (error, where) => logInternal(error, where),
    audit: deps.audit === undefined ? undefined : { sink: deps.audit, clock: deps.clock },
  });
  const edge: EdgeContext = {
    deps,
    router,
    access,
    maxBodyBytes,
    changed(deviceId, deleted = false) {
      access.forget(deviceId, deleted);
    },
  };
  // The app has no lifetime of its own: the listener goes when the process's changes are closed.
  deps.changes?.subscribe((change) => access.apply(change));

  const onRequest = deps.observe?.onRequest;
  if (onRequest !== undefined) app.use('*', requestTiming(onRequest));
  probeRoutes(router, deps.observe);
  routeGroups(edge, deps);
  if (deps.console !== false) consoleRoutes(app);
  openApiRoute(router);

  app.notFound((c) => problemResponse(new FleetError('NOT_FOUND', `no route ${c.req.method} ${c.req.path}`), c.req.path));
  app.onError((error, c) => problemResponse(error, c.req.path, (e) => logInternal(e, { method: c.req.method, path: c.req.path })));
  return app;
}

/** The API's route groups, in the order they were always registered (the OpenAPI document's order). */
function routeGroups(edge: EdgeContext, deps: EdgeDeps): void {
  deviceRoutes(edge);
  assetRoutes(edge);
  uplinkRoutes(edge);
  gatewayRoutes(edge);
  stateRoutes(edge);
  historyRoutes(edge);
  exportRoutes(edge);
  rejectionRoutes(edge);
  if (deps.lpwan) lpwanRoutes(edge, deps.lpwan);
  if (deps.commands) commandRoutes(edge, deps.commands);
  if (deps.integrations) integrationRoutes(edge, deps.integrations);
  ruleRoutes(edge);
  alarmRoutes(edge);
  if (deps.live) liveRoutes(edge, deps.live, deps.live.connections ?? new LiveConnections(deps.live.maxConnections ?? 10_000));
  activationEdge(edge);
  principalRoutes(edge);
  groundRoutes(edge);
  memberRoutes(edge);
  keyRoutes(edge);
  usageRoutes(edge);
  auditRoutes(edge);
}

/** Times every answered request under the template of the route that answered. */
function requestTiming(onRequest: NonNullable<EdgeObserver['onRequest']>): MiddlewareHandler {
  return async (c, next) => {
    const startedAt = performance.now();
    await next();
    // The template of the route that answered (the last one matched): bounded label values.
    const route = routePath(c, -1);
    onRequest(c.req.method, route === '*' || route === '/*' ? 'unmatched' : route, c.res.status, (performance.now() - startedAt) / 1000);
  };
}
