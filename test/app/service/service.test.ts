/**
 * The service as a newcomer runs it: `fleetstream start` on embedded defaults, the admin CLI while
 * it runs and while it is stopped, a device created and fed over HTTP, SIGTERM draining to exit 0.
 * The service runs with the Node flags of package.json's start script, as `npm start` runs it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { freePort } from '../../support/freePort.ts';
import { loadConfig } from '../../../app/loadConfig.ts';
import { startFlags } from '../../support/startFlags.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { sendJson } from '../../support/sendJson.ts';

const run = promisify(execFile);
const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;
const tmp = tempDir('service');
const env = { ...process.env, DATA_DIR: `${tmp.dir}/data`, LOG_LEVEL: 'info', MQTT_PORT: '0', MQTT_HOST: '127.0.0.1', METRICS_PORT: '0', DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '' };

async function admin(...args: string[]): Promise<Record<string, string>> {
  const { stdout } = await run(process.execPath, [bin, 'admin', ...args, '--json'], { env });
  return JSON.parse(stdout) as Record<string, string>;
}

let child: ChildProcess | undefined;
let output = '';
let port = 0;
/** The metrics listener's port, from the `fleetstream started` log line. */
let metricsPort = 0;

async function startService(): Promise<void> {
  port = await freePort();
  output = '';
  child = spawn(process.execPath, [...startFlags, bin, 'start', '--port', String(port), '--host', '127.0.0.1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  await waitFor(() => output.includes('fleetstream started'), 30_000, 'service start');
  const started = JSON.parse(output.split('\n').find((line) => line.includes('"msg":"fleetstream started"'))!) as { metrics: string };
  metricsPort = Number(started.metrics.split(':').pop());
}

async function stopService(): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
  child!.kill('SIGTERM');
  const code = await exited;
  child = undefined;
  return code;
}

test.after(async () => {
  if (child) child.kill('SIGKILL');
  tmp.remove();
});

test('configuration: defaults, environment and flags, with clear errors', () => {
  const defaults = loadConfig({}, {});
  assert.is(defaults.http.port, 8080);
  assert.is(defaults.dataDir, './data');
  assert.is(defaults.role, 'all');
  const fromEnv = loadConfig({ port: '9000' }, { HTTP_PORT: '7000', KAFKA_BROKERS: 'a:1, b:2', FLEETSTREAM_ROLE: 'engine' });
  assert.is(fromEnv.http.port, 9000, 'flags win over the environment');
  assert.equal(fromEnv.kafkaBrokers, ['a:1', 'b:2']);
  assert.is(fromEnv.role, 'engine');
  assert.throws(() => loadConfig({ port: 'eighty' }, {}), /port/);
  assert.throws(() => loadConfig({ role: 'boss' }, {}), /invalid configuration/);
  assert.throws(() => loadConfig({}, { HTTP_PORT: '70000' }), /invalid configuration/);
});

test('admin works before the service runs (direct registry) and while it runs (admin socket)', async () => {
  // Before the first start there is no registry: admin refuses to make one unless told (--init).
  try {
    await admin('create-partner', 'acme');
    assert.unreachable('admin created a registry without --init');
  } catch (error) {
    assert.match(String((error as { stderr?: string }).stderr), /no registry in data dir .*--init/s);
  }
  const partner = await admin('create-partner', 'acme', '--init');
  assert.match(partner.token, /^fsp_/);
  await startService();
  const user = await admin('create-user', 'alice');
  assert.match(user.token, /^fsu_/);
  const ground = await admin('create-ground', 'home', '--user', user.id);
  assert.ok(ground.id);

  // A first session: create a device, send a state with its token, read it back.
  const base = `http://127.0.0.1:${port}`;
  const created = await sendJson(`${base}/ground/${ground.id}/devices`, 'POST', user.token, { name: 'thermo', assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }] });
  assert.is(created.status, 201);
  const device = await created.json() as { id: string; token: string };
  const put = await sendJson(`${base}/device/${device.id}/state`, 'PUT', device.token, { temperature: { value: 21.5, at: '2026-11-01T10:00:00Z' } });
  assert.is(put.status, 202);
  let state: { state?: { value: unknown; at: string } } = {};
  await waitFor(async () => {
    const res = await fetch(`${base}/device/${device.id}/asset/temperature/state`, { headers: { authorization: `Bearer ${device.token}` } });
    state = await res.json() as typeof state;
    return res.status === 200 && state.state?.value === 21.5;
  }, 15_000, 'state readable');
  assert.is(state.state?.at, '2026-11-01T10:00:00.000Z');

  const revoked = await admin('revoke-token', device.token);
  assert.equal(revoked, { revoked: true });
  assert.is(await stopService(), 0, 'SIGTERM drains and exits 0');
  assert.match(output, /"msg":"fleetstream stopped"/);
});

test('states accepted before SIGTERM are stored and readable after a restart', async () => {
  await startService();
  const user = await admin('create-user', 'bob');
  const ground = await admin('create-ground', 'lab', '--user', user.id);
  const base = `http://127.0.0.1:${port}`;
  const created = await sendJson(`${base}/ground/${ground.id}/devices`, 'POST', user.token, { name: 'counter', assets: [{ name: 'n', is: 'sensor', profile: { type: 'integer' } }] });
  const device = await created.json() as { id: string; token: string };
  const sent = 50;
  for (let i = 0; i < sent; i++) {
    const res = await sendJson(`${base}/device/${device.id}/asset/n/state`, 'PUT', device.token, { value: i, at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() });
    assert.is(res.status, 202);
  }
  assert.is(await stopService(), 0);
  await startService();
  const res = await fetch(`http://127.0.0.1:${port}/device/${device.id}/asset/n/states?limit=100`, { headers: { authorization: `Bearer ${user.token}` } });
  assert.is(res.status, 200);
  const { items } = await res.json() as { items: Array<{ value: number }> };
  assert.equal(items.map((s) => s.value).sort((a, b) => a - b), Array.from({ length: sent }, (_, i) => i));
  assert.is(await stopService(), 0);
});

test("bin/fleetstream.ts's first line and the Dockerfile run node with the start script's flags, the garbage collector's among them", () => {
  // docs/operations.md, "The embedded deployment": both measured at 256 HTTP uplinks in flight.
  for (const flag of ['--no-allocation-site-pretenuring', '--external-memory-accounted-in-global-limit']) {
    assert.ok(startFlags.includes(flag), `package.json's start script passes ${flag}`);
  }
  const shebang = readFileSync(bin, 'utf8').split('\n')[0];
  assert.equal(shebang.split(/\s+/).filter((word) => word.startsWith('--')), [...startFlags], 'the shebang names the start flags');
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(new URL('../../../Dockerfile', import.meta.url), 'utf8'));
  assert.ok(entrypoint, 'the Dockerfile has an exec-form ENTRYPOINT');
  assert.equal((JSON.parse(entrypoint[1]) as string[]).filter((word) => word.startsWith('--')), [...startFlags], 'the image runs with the start flags');
});

test('once ready, the service collects what starting left behind: the young generation shrinks to a few MB', async () => {
  assert.ok(startFlags.includes('--expose-gc'), "package.json's start script passes --expose-gc");
  await startService();
  const newSpaceMb = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('fleetstream_nodejs_heap_space_size_total_bytes{space="new"}'));
    assert.ok(line, 'the new space size is exported');
    return Number(line.split(' ')[1]) / 2 ** 20;
  };
  // Without the collection it stays at the 32–64 MB that starting grew it to.
  let last = Infinity;
  await waitFor(async () => (last = await newSpaceMb()) <= 8, 10_000, 'young generation shrunk').catch(() => undefined);
  assert.ok(last <= 8, `young generation ${last} MB once ready, expected at most 8`);
  assert.is(await stopService(), 0);
});

test('admin reports clear errors', async () => {
  try {
    await admin('create-ground', 'nowhere');
    assert.unreachable('missing --user accepted');
  } catch (error) {
    assert.match(String((error as { stderr?: string }).stderr), /missing user/);
  }
  try {
    await admin('frobnicate');
    assert.unreachable('unknown command accepted');
  } catch (error) {
    assert.match(String((error as { stderr?: string }).stderr), /unknown admin command/);
  }
});

test.run();
