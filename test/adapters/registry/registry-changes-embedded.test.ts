/**
 * Registry changes in the embedded service (PGlite: every edge and engine in one process): the admin
 * CLI, a process of its own talking to the service's admin socket, revokes a token and the running
 * service refuses it on its very next request, though its caches are set to live 10 minutes.
 */
import { execFile } from 'node:child_process';
import * as assert from 'uvu/assert';
import { createService, type Service } from '../../../app/createService.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { defaultConfig } from '../../../schemas/config.ts';
import { suite } from '../../support/suite.ts';
import { tempDir } from '../../support/tmp.ts';
import { createDeviceOverHttp } from '../../support/embeddedService.ts';

const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;
const test = suite<{ service: Service; base: string; dir: string; remove(): void }>('registry changes: embedded service and admin CLI', {} as never);

test.before(async (context) => {
  const tmp = tempDir('changes-embedded');
  context.dir = tmp.dir;
  context.remove = () => tmp.remove();
  context.service = await createService({
    config: {
      ...defaultConfig,
      dataDir: `${tmp.dir}/data`,
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
      metrics: { host: '127.0.0.1', port: 0 },
      mqtt: { host: '127.0.0.1', port: -1 },
      engine: { ...defaultConfig.engine, partitions: 1 },
      registryCacheTtlMs: 600_000,
    },
    logger: silentLogger,
  });
  context.base = `http://127.0.0.1:${context.service.httpPort}`;
});
test.after(async ({ service, remove }) => {
  await service?.stop();
  remove?.();
});

const get = async (url: string, token: string) => (await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status;

test('revoke-token by the admin CLI is refused on the next request', async ({ service, base, dir }) => {
  const device = await createDeviceOverHttp(service, base, [{ name: 't', is: 'sensor', profile: { type: 'number' } }]);
  const other = await createDeviceOverHttp(service, base, []);
  assert.is(await get(`${base}/device/${device.id}`, device.token), 200);
  assert.is(await get(`${base}/device/${other.id}`, other.token), 200);
  const cli = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [bin, 'admin', 'revoke-token', device.token, '--json', '--data-dir', `${dir}/data`],
      { env: { ...process.env, DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', LOG_LEVEL: 'error' } },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, stdout, stderr }));
  });
  assert.is(cli.code, 0, cli.stderr);
  assert.match(cli.stderr, /running service found/);
  assert.equal(JSON.parse(cli.stdout), { revoked: true });
  assert.is(await get(`${base}/device/${device.id}`, device.token), 401, 'at once');
  assert.is(await get(`${base}/device/${other.id}`, other.token), 200, 'other tokens still served from the cache');
});

test('a device deleted over HTTP: the change is heard before the answer, its token refused at once', async ({ service, base }) => {
  const device = await createDeviceOverHttp(service, base, [{ name: 't', is: 'sensor', profile: { type: 'number' } }]);
  const heard: string[] = [];
  service.changes.subscribe((change) => heard.push(change.kind));
  assert.is(await get(`${base}/device/${device.id}`, device.token), 200);
  const deleted = await fetch(`${base}/device/${device.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${device.userToken}` } });
  assert.is(deleted.status, 204);
  assert.equal(heard, ['device-deleted'], 'published before the answer');
  assert.is(await get(`${base}/device/${device.id}`, device.token), 401);
});

test.run();
