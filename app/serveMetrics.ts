/**
 * The metrics listener: GET /metrics (Prometheus text exposition) and nothing else, on its own
 * host and port (`--metrics-host`, `--metrics-port`; loopback by default), apart from the API that
 * devices and users reach. Plain node:http, as app/serveProbes.ts: one fixed path needs no router.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MetricsListenerOptions {
  /** 0: any free port. */
  port: number;
  host: string;
  scrape(): Promise<{ contentType: string; body: string }>;
}

export interface ServedMetrics {
  /** The port bound (the one asked for, or the free one picked for 0). */
  readonly port: number;
  close(): Promise<void>;
}

export function serveMetrics(options: MetricsListenerOptions): Promise<ServedMetrics> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (path !== '/metrics') return json(404, { status: 'not found' });
    if (request.method !== 'GET' && request.method !== 'HEAD') return json(405, { status: 'method not allowed' });
    options.scrape().then(({ contentType, body }) => {
      response.writeHead(200, { 'content-type': contentType }).end(body);
    }, (error: unknown) => json(500, { status: 'metrics failed', detail: String(error) }));
  });
  server.keepAliveTimeout = 5_000;
  return new Promise((resolve, reject) => {
    // The raw listen error: the caller names the setting that moves the port (app/portInUse.ts).
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.removeAllListeners('error');
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
