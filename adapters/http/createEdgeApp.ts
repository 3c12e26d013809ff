/**
 * The HTTP edge for devices, assets and states (DESIGN.md §5) as a Hono app: routes described by
 * TypeBox schemas (schemas/edge.ts), the OpenAPI document generated from them at /openapi.json,
 * /health and /ready for probes, and every error as application/problem+json with a stable code.
 */
import { Hono } from 'hono';
import { routePath } from 'hono/route';
import { FleetError } from '../../engine/kernel/errors.ts';
import { Health } from '../../schemas/edge.ts';
import { activationEdge } from './routes/activation/activationEdge.ts';
import { assetRoutes } from './routes/devices/assetRoutes.ts';
import { bearerTokenCheck } from './bearerTokenCheck.ts';
import { commandRoutes } from './routes/commands/commandRoutes.ts';
import { consoleRoutes } from './console/consoleRoutes.ts';
import { deviceRoutes } from './routes/devices/deviceRoutes.ts';
import { EdgeAccess } from './EdgeAccess.ts';
import type { EdgeContext } from './EdgeContext.ts';
import { DEFAULT_MAX_BODY_BYTES, type EdgeDeps } from './EdgeDeps.ts';
import { EdgeRouter } from './EdgeRouter.ts';
import { lpwanRoutes } from './routes/lpwan/lpwanRoutes.ts';
import { LiveConnections, liveRoutes } from './liveRoutes.ts';
import { openApiDocument } from './openApiDocument.ts';
import { principalRoutes } from './routes/principals/principalRoutes.ts';
import { problemResponse } from './problemResponse.ts';
import { stateRoutes } from './routes/states/stateRoutes.ts';
import { TokenBuckets } from './TokenBuckets.ts';
import { uplinkRoutes } from './routes/states/uplinkRoutes.ts';
import { gatewayRoutes } from './routes/states/gatewayRoutes.ts';

export type { EdgeDeps, EdgeLimits, EdgeLogger, EdgeObserver } from './EdgeDeps.ts';

const JSON_TYPE = 'application/json';

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
  const router = new EdgeRouter({ app, access, limiter, onInternal: (error, where) => logInternal(error, where) });
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
  if (onRequest !== undefined) {
    app.use('*', async (c, next) => {
      const startedAt = performance.now();
      await next();
      // The template of the route that answered (the last one matched): bounded label values.
      const route = routePath(c, -1);
      onRequest(c.req.method, route === '*' || route === '/*' ? 'unmatched' : route, c.res.status, (performance.now() - startedAt) / 1000);
    });
  }

  router.publicRoute({
    methods: ['get'],
    path: '/health',
    operationId: 'health',
    summary: 'Liveness probe',
    tags: ['meta'],
    responses: { 200: { description: 'the process serves requests', content: { [JSON_TYPE]: Health } } },
  }, (c) => c.json({ status: 'ok' }));

  const observe = deps.observe;
  if (observe !== undefined) {
    router.publicRoute({
      methods: ['get'],
      path: '/ready',
      operationId: 'ready',
      summary: 'Readiness probe: adapters connected and, for an engine, partitions assigned',
      tags: ['meta'],
      responses: {
        200: { description: 'ready for traffic', content: { [JSON_TYPE]: Health } },
        503: { description: 'not ready yet', content: { [JSON_TYPE]: Health } },
      },
    }, (c) => (observe.ready() ? c.json({ status: 'ok' }) : c.json({ status: 'starting' }, 503)));
  }
  const metrics = observe?.metrics;
  if (metrics !== undefined) {
    const authorized = bearerTokenCheck(metrics.token);
    router.publicRoute({
      methods: ['get'],
      path: '/metrics',
      operationId: 'metrics',
      summary: 'Prometheus metrics (text exposition format)',
      description: 'Authorization: `Bearer <metrics token>` (METRICS_TOKEN), not a Fleetstream token.',
      tags: ['meta'],
      responses: { 200: { description: 'metrics' } },
      errors: [401],
    }, async (c) => {
      if (!authorized(c.req.header('authorization'))) throw new FleetError('UNAUTHORIZED', 'GET /metrics needs the metrics token (METRICS_TOKEN)');
      const { contentType, body } = await metrics.scrape();
      return c.body(body, 200, { 'content-type': contentType });
    });
  }

  deviceRoutes(edge);
  assetRoutes(edge);
  uplinkRoutes(edge);
  gatewayRoutes(edge);
  stateRoutes(edge);
  if (deps.lpwan) lpwanRoutes(edge, deps.lpwan);
  if (deps.commands) commandRoutes(edge, deps.commands);
  if (deps.live) liveRoutes(edge, deps.live, deps.live.connections ?? new LiveConnections(deps.live.maxConnections ?? 10_000));
  activationEdge(edge);
  principalRoutes(edge);
  if (deps.console !== false) consoleRoutes(app);

  let document: Record<string, unknown> | undefined;
  router.publicRoute({
    methods: ['get'],
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    tags: ['meta'],
    responses: { 200: { description: 'OpenAPI 3.1 document' } },
  }, (c) => {
    document ??= openApiDocument(router.routes, {
      title: 'Fleetstream device data exchange',
      version: '1',
      description: 'Devices, assets and states (uplink, reads, history). Errors are application/problem+json with a stable `code`.',
    });
    return c.json(document);
  });

  app.notFound((c) => problemResponse(new FleetError('NOT_FOUND', `no route ${c.req.method} ${c.req.path}`), c.req.path));
  app.onError((error, c) => problemResponse(error, c.req.path, (e) => logInternal(e, { method: c.req.method, path: c.req.path })));
  return app;
}
