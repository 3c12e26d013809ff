/**
 * With a metrics token (`--metrics-token`/`METRICS_TOKEN`) the HTTP port serves GET /metrics too,
 * only to a request bearing `Authorization: Bearer <token>`: the right token is served, a missing,
 * wrong or forged one (another length, other bytes, another scheme, a Fleetstream token) is 401
 * problem+json without a metric. The same rule on the probes port of role engine; the settings
 * and a metrics port in use (its own file: chDB allows one data directory per process).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { createService, type Service } from '../../../app/createService.ts';
import { loadConfig } from '../../../app/loadConfig.ts';
import { createMetrics } from '../../../app/metrics.ts';
import { serveProbes } from '../../../app/serveProbes.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { defaultConfig } from '../../../schemas/config.ts';
import { sample } from '../../support/prometheusText.ts';
import { tempDir } from '../../support/tmp.ts';

const TOKEN = 'b3f1c2d4e5a6978812ab34cd56ef7890';
const tmp = tempDir('metrics-token');
let service: Service;
let base = '';

/** GET /metrics on the API port with this Authorization header (none when undefined). */
const scrape = (authorization?: string) => fetch(`${base}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
/** A header value carrying these UTF-8 bytes as they go on the wire (header values are bytes, one character each). */
const utf8Header = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

async function refused(res: Response, what: string): Promise<void> {
  const body = await res.text();
  assert.is(res.status, 401, what);
  assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/, what);
  assert.is(JSON.parse(body).code, 'UNAUTHORIZED', what);
  assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/, what);
  assert.not.match(body, /fleetstream_/, `${what}: no metric`);
}

test.before(async () => {
  service = await createService({
    logger: silentLogger,
    config: {
      ...defaultConfig,
      dataDir: `${tmp.dir}/data`,
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
      mqtt: { host: '127.0.0.1', port: -1 },
      metrics: { host: '127.0.0.1', port: 0, token: TOKEN },
      engine: { ...defaultConfig.engine, partitions: 1 },
    },
  });
  base = `http://127.0.0.1:${service.httpPort}`;
});

test.after(async () => {
  await service?.stop();
  tmp.remove();
});

test('settings: --metrics-host, --metrics-port, --metrics-token and their variables; a weak or malformed token is refused without being echoed', () => {
  const defaults = loadConfig({}, {});
  assert.equal(defaults.metrics, { host: '127.0.0.1', port: 9464 });
  const fromEnv = loadConfig({}, { METRICS_HOST: '0.0.0.0', METRICS_PORT: '9100', METRICS_TOKEN: TOKEN });
  assert.equal(fromEnv.metrics, { host: '0.0.0.0', port: 9100, token: TOKEN });
  assert.is(loadConfig({ 'metrics-port': '9200' }, { METRICS_PORT: '9100' }).metrics.port, 9200, 'flags win');
  assert.is(loadConfig({ 'metrics-port': '-1' }, {}).metrics.port, -1, '-1: no metrics listener');
  assert.throws(() => loadConfig({ 'metrics-port': '70000' }, {}), /invalid configuration/);
  for (const token of ['short-token', `${TOKEN} x`, `${TOKEN}é`, `${TOKEN}\u0000`]) {
    try {
      loadConfig({}, { METRICS_TOKEN: token });
      assert.unreachable(`token ${JSON.stringify(token)} accepted`);
    } catch (error) {
      assert.instance(error, FleetError);
      assert.match((error as Error).message, /\/metrics\/token/);
      assert.not.match((error as Error).message, new RegExp(TOKEN), 'the token is not echoed');
    }
  }
});

test('the right token is served the metrics on the API port (scheme in any case)', async () => {
  const res = await scrape(`Bearer ${TOKEN}`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
  assert.is(sample(await res.text(), 'fleetstream_partitions_assigned'), 1);
  assert.is((await scrape(`bearer ${TOKEN}`)).status, 200, 'RFC 7235: the scheme is case-insensitive');
});

test('a missing, wrong or forged token is 401 problem+json without a metric', async () => {
  await refused(await scrape(), 'missing');
  await refused(await scrape(''), 'empty');
  await refused(await scrape('Bearer'), 'scheme only');
  await refused(await scrape(`Bearer ${TOKEN.slice(0, -1)}1`), 'wrong, same length');
  await refused(await scrape(`Bearer ${TOKEN.slice(0, -1)}`), 'a prefix');
  await refused(await scrape(`Bearer ${TOKEN.slice(0, 1)}`), 'one character');
  await refused(await scrape(`Bearer ${TOKEN}0`), 'the token and more');
  await refused(await scrape(`Bearer ${TOKEN}${TOKEN}`), 'the token twice');
  await refused(await scrape(`Bearer ${TOKEN.toUpperCase()}`), 'another case');
  await refused(await scrape(`Bearer ${TOKEN} ${TOKEN}`), 'two tokens');
  await refused(await scrape(TOKEN), 'no scheme');
  await refused(await scrape(`Basic ${TOKEN}`), 'another scheme');
  await refused(await scrape(`Basic ${Buffer.from(`metrics:${TOKEN}`).toString('base64')}`), 'basic credentials');
  await refused(await scrape(utf8Header(`Bearer ${TOKEN.slice(0, -2)}é`)), 'unicode: the same byte length');
  await refused(await scrape(utf8Header(`Bearer ${TOKEN.slice(0, -1)}é`)), 'unicode: the same character count');
  await refused(await scrape(utf8Header(`Bearer ${TOKEN}\u200b`)), 'the token and a zero-width space');
  await refused(await scrape(utf8Header('Bearer 🔑🔑🔑🔑🔑🔑🔑🔑')), 'emoji');
  await refused(await scrape(`Bearer ${'x'.repeat(8000)}`), 'a long guess');
  const user = await service.registry.createUser({ name: 'u' });
  await refused(await scrape(`Bearer ${user.token}`), 'a Fleetstream user token');
});

test('the OpenAPI document describes /metrics with its 401; the metrics listener serves without the token', async () => {
  const document = await (await fetch(`${base}/openapi.json`)).json() as { paths: Record<string, { get: { responses: Record<string, unknown> } }> };
  assert.ok(document.paths['/metrics']?.get.responses['401'], '401 documented');
  const res = await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`);
  assert.is(res.status, 200);
  assert.is(sample(await res.text(), 'fleetstream_partitions_assigned'), 1);
});

test('the probes port of role engine: /metrics only with the token, 404 without one configured', async () => {
  const metrics = createMetrics({ defaultMetrics: false });
  const withToken = await serveProbes({ port: 0, host: '127.0.0.1', alive: () => true, ready: () => true, metrics: { token: TOKEN, scrape: () => metrics.scrape() } });
  const without = await serveProbes({ port: 0, host: '127.0.0.1', alive: () => true, ready: () => true });
  try {
    const at = (port: number, authorization?: string) => fetch(`http://127.0.0.1:${port}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
    const served = await at(withToken.port, `Bearer ${TOKEN}`);
    assert.is(served.status, 200);
    assert.match(await served.text(), /fleetstream_/);
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, utf8Header(`Bearer ${TOKEN.slice(0, -2)}é`)]) {
      const res = await at(withToken.port, authorization);
      assert.is(res.status, 401, String(authorization));
      assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      assert.not.match(await res.text(), /fleetstream_/);
    }
    assert.is((await at(without.port, `Bearer ${TOKEN}`)).status, 404);
    assert.is((await fetch(`http://127.0.0.1:${withToken.port}/ready`)).status, 200, 'probes answer without a token');
  } finally {
    await withToken.close();
    await without.close();
  }
});

/** A plain TCP listener holding a loopback port. */
async function holdPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

test('a metrics port in use fails the start with a FleetError naming the setting, before anything opens', async () => {
  const held = await holdPort();
  try {
    const dataDir = `${tmp.dir}/held`;
    const error = await createService({
      logger: silentLogger,
      config: { ...defaultConfig, dataDir, http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 }, mqtt: { host: '127.0.0.1', port: -1 }, metrics: { host: '127.0.0.1', port: held.port } },
    }).then(() => undefined, (e: unknown) => e);
    assert.instance(error, FleetError);
    assert.is((error as FleetError).code, 'PORT_IN_USE');
    assert.match((error as Error).message, new RegExp(`metrics port ${held.port} is in use \\(wanted on 127\\.0\\.0\\.1\\).*--metrics-port <port> \\(environment variable METRICS_PORT\\)`));
    assert.is(((error as Error).cause as { code?: string }).code, 'EADDRINUSE', 'the listen error is kept as the cause');

    const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, [bin, 'start', '--data-dir', `${tmp.dir}/held-bin`, '--host', '127.0.0.1', '--port', '0', '--mqtt-port=-1'], {
        env: { ...process.env, METRICS_HOST: '127.0.0.1', METRICS_PORT: String(held.port), DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '' },
      }, (e, _stdout, stderr) => resolve({ code: e ? (e as { code?: number }).code ?? null : 0, stderr }));
    });
    assert.is(run.code, 2, run.stderr);
    assert.match(run.stderr, /METRICS_PORT/);
    assert.not.match(run.stderr, /^\s+at /m, 'no stack trace');
  } finally {
    held.server.close();
  }
});

test.run();
