/**
 * The edge's probes, open to anyone: GET /health (liveness) always, GET /ready (readiness) and
 * GET /metrics (for a request bearing the metrics token) when the process observes the edge.
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import { Health } from '../../../../schemas/edge.ts';
import { bearerTokenCheck } from '../../bearerTokenCheck.ts';
import type { EdgeRouter } from '../../EdgeRouter.ts';

const JSON_TYPE = 'application/json';

/** What the probes ask of the process (EdgeDeps `observe`). */
export interface EdgeProbes {
  /** GET /ready answers 200 when true, 503 when not (adapters away, no partitions yet). */
  ready(): boolean;
  /**
   * GET /metrics, the Prometheus exposition, for a request bearing `token` (schemas/config.ts
   * `metrics.token`). Absent: no /metrics route (404): metrics are the metrics listener's
   * (app/serveMetrics.ts), not the public API's.
   */
  metrics?: { token: string; scrape(): Promise<{ contentType: string; body: string }> };
}

export function probeRoutes(router: EdgeRouter, observe: EdgeProbes | undefined): void {
  router.publicRoute({
    methods: ['get'],
    path: '/health',
    operationId: 'health',
    summary: 'Liveness probe',
    tags: ['meta'],
    responses: { 200: { description: 'the process serves requests', content: { [JSON_TYPE]: Health } } },
  }, (c) => c.json({ status: 'ok' }));
  if (observe === undefined) return;
  readyRoute(router, observe);
  if (observe.metrics !== undefined) metricsRoute(router, observe.metrics);
}

function readyRoute(router: EdgeRouter, observe: EdgeProbes): void {
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

function metricsRoute(router: EdgeRouter, metrics: NonNullable<EdgeProbes['metrics']>): void {
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
