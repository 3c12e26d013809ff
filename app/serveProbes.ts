/**
 * The HTTP listener of a process that runs no HTTP edge (role engine): GET /health (alive) and GET
 * /ready (adapters connected and partitions assigned), on the HTTP host and port settings
 * (HTTP_HOST, HTTP_PORT) the edge would use. GET /metrics is the metrics listener's
 * (app/serveMetrics.ts); here, as on the edge's API port, only with the metrics token when one is
 * set. Plain node:http: fixed paths need no router, and nothing here touches device traffic.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bearerTokenCheck } from '../adapters/http/bearerTokenCheck.ts';

export interface ProbesOptions {
  /** 0: any free port. */
  port: number;
  host: string;
  /** Once false (the engine stopped for good), /health answers 503 too. */
  alive(): boolean;
  ready(): boolean;
  /** GET /metrics for a request bearing `token` (schemas/config.ts `metrics.token`); absent: 404. */
  metrics?: { token: string; scrape(): Promise<{ contentType: string; body: string }> };
}

export interface ServedProbes {
  readonly port: number;
  close(): Promise<void>;
}

export function serveProbes(options: ProbesOptions): Promise<ServedProbes> {
  const metrics = options.metrics;
  const authorized = metrics === undefined ? undefined : bearerTokenCheck(metrics.token);
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (request.method !== 'GET' && request.method !== 'HEAD') return json(405, { status: 'method not allowed' });
    if (path === '/health') return options.alive() ? json(200, { status: 'ok' }) : json(503, { status: 'failed' });
    if (path === '/ready') return options.ready() ? json(200, { status: 'ok' }) : json(503, { status: 'starting' });
    if (path === '/metrics' && metrics !== undefined && authorized !== undefined) {
      if (!authorized(request.headers.authorization)) {
        response.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="fleetstream"' })
          .end(JSON.stringify({ status: 'unauthorized' }));
        return;
      }
      metrics.scrape().then(({ contentType, body }) => {
        response.writeHead(200, { 'content-type': contentType }).end(body);
      }, (error: unknown) => json(500, { status: 'metrics failed', detail: String(error) }));
      return;
    }
    json(404, { status: 'not found' });
  });
  server.keepAliveTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () => new Promise<void>((done, fail) => {
          server.close((error) => (error ? fail(error) : done()));
          server.closeIdleConnections();
        }),
      });
    });
  });
}
