/**
 * GET /openapi.json: the OpenAPI 3.1 document of every route registered before it (so it is
 * registered last), built on the first request and kept.
 */
import type { EdgeRouter } from '../../EdgeRouter.ts';
import { openApiDocument } from '../../openApiDocument.ts';

export function openApiRoute(router: EdgeRouter): void {
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
}
