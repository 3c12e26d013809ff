/**
 * Metrics are not served to anyone who reaches the API: GET /metrics answers on the metrics
 * listener (`--metrics-host`/`--metrics-port`, loopback by default), and the API port answers it
 * 404 like any unknown path while no metrics token is set (its own file: chDB allows one data
 * directory per process).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import type { Service } from '../../../app/createService.ts';
import { startupLines } from '../../../app/startupLines.ts';
import { defaultConfig } from '../../../schemas/config.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { sample } from '../../support/prometheusText.ts';
import { tempDir } from '../../support/tmp.ts';

const tmp = tempDir('metrics-listener');
let service: Service;
let base = '';

test.before(async () => {
  ({ service, base } = await startEmbeddedService(tmp.dir));
});

test.after(async () => {
  await service?.stop();
  tmp.remove();
});

test('GET /metrics on the API port without credentials answers 404 problem+json, not the metrics', async () => {
  const res = await fetch(`${base}/metrics`);
  const body = await res.text();
  assert.is(res.status, 404);
  assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  assert.is(JSON.parse(body).code, 'NOT_FOUND');
  assert.not.match(body, /fleetstream_/, 'no metric leaks');
  const document = await (await fetch(`${base}/openapi.json`)).json() as { paths: Record<string, unknown> };
  assert.is(document.paths['/metrics'], undefined, 'the API does not describe /metrics');
  // The probes stay where orchestrators look for them.
  assert.is((await fetch(`${base}/health`)).status, 200);
  assert.is((await fetch(`${base}/ready`)).status, 200);
});

test('by default the API listens on every interface and the metrics listener on loopback only, port 9464', () => {
  assert.is(defaultConfig.http.host, '0.0.0.0');
  assert.equal(defaultConfig.metrics, { host: '127.0.0.1', port: 9464 });
});

test('the metrics listener serves the exposition at GET /metrics, and nothing else', async () => {
  assert.ok(service.metricsPort !== undefined && service.metricsPort > 0, 'bound port exposed');
  assert.is.not(service.metricsPort, service.httpPort);
  const metrics = `http://127.0.0.1:${service.metricsPort}`;
  await fetch(`${base}/health`);
  const res = await fetch(`${metrics}/metrics`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
  const text = await res.text();
  assert.ok((sample(text, 'fleetstream_http_requests_total', { method: 'GET', route: '/health', status: '200' }) ?? 0) >= 1, 'the API\'s requests counted');
  assert.ok(sample(text, 'fleetstream_partitions_assigned') === 2, 'engine figures');
  assert.is((await fetch(`${metrics}/metrics?x=1`)).status, 200, 'a query string is ignored');
  assert.is((await fetch(`${metrics}/metrics`, { method: 'HEAD' })).status, 200);
  assert.is((await fetch(`${metrics}/device/x`)).status, 404, 'no API there');
  assert.is((await fetch(`${metrics}/console/`)).status, 404, 'no console there');
  assert.is((await fetch(`${metrics}/metrics`, { method: 'POST', body: 'x' })).status, 405);
});

test('the compose stack: Prometheus scrapes the metrics listener of every process, which is published nowhere', () => {
  const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
  const prometheus = read('deploy/prometheus/prometheus.yml');
  const port = String(defaultConfig.metrics.port);
  assert.equal([...prometheus.matchAll(/targets: \[([^\]]*)\]/g)].map((m) => m[1]), [`'edge-a:${port}', 'edge-b:${port}'`, `'haproxy:8404'`], 'both edges, and HAProxy\'s exporter');
  assert.equal([...prometheus.matchAll(/^\s+port: (\d+)$/gm)].map((m) => m[1]), [port], 'the engine replicas');
  assert.not.match(prometheus, /:8080|port: 8080/, 'not the API port');
  const compose = read('compose.yaml');
  // On loopback inside a container the listener is out of Prometheus' reach: the shared environment opens it to the compose network.
  assert.match(compose, /environment: &fleetstream\n(?: {6}.*\n)* {6}METRICS_HOST: 0\.0\.0\.0\n/);
  assert.not.match(compose, new RegExp(`"${port}:|:${port}"`), 'the metrics port is not published');
});

test('a person starting the service at a terminal is told where the metrics are', () => {
  const lines = startupLines({ config: defaultConfig, httpPort: 8080, mqttPort: 1883, probesPort: undefined, metricsPort: 9464, dataDir: '/srv/fleet' }).join('\n');
  assert.match(lines, /Metrics +http:\/\/127\.0\.0\.1:9464\/metrics/);
  const none = startupLines({ config: defaultConfig, httpPort: 8080, mqttPort: 1883, probesPort: undefined, metricsPort: undefined, dataDir: '/srv/fleet' }).join('\n');
  assert.not.match(none, /Metrics/, 'none with --metrics-port -1');
});

test.run();
