/**
 * The first run: `fleetstream start` writes JSON logs off a terminal and lines for a
 * person with --log-format text (where the console, HTTP and MQTT listen, and the next command);
 * `admin quickstart` creates a user, a ground and a demo device through the running service and
 * prints the console link and the token apart; `--demo` keeps the device sending real states and
 * answering its commands: in Chromium, the light switched and the set point moved from the console
 * come back as the device's states.
 */
import * as assert from 'uvu/assert';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { test } from '../../support/suite.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { startupLines } from '../../../app/startupLines.ts';
import { createTextLogger } from '../../../engine/kernel/logger.ts';
import { defaultConfig } from '../../../schemas/config.ts';
import { accessibilityProblems, launchChromium, pageErrors, screenshot, withChromium } from '../../support/browser.ts';

const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;
const tmp = tempDir('quickstart');
const env = { ...process.env, DATA_DIR: '', DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', LOG_LEVEL: 'info', LOG_FORMAT: '' };
const children: ChildProcess[] = [];

test.after(() => {
  for (const child of children) child.kill('SIGKILL');
  tmp.remove();
});

/** Starts the service; resolves with its stderr so far once `ready` matches it. */
function start(dataDir: string, extra: string[], ready: RegExp): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [bin, 'start', '--data-dir', dataDir, '--port', '0', '--mqtt-port', '0', '--host', '127.0.0.1', '--mqtt-host', '127.0.0.1', '--metrics-port', '0', ...extra], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stderr!.on('data', (d) => { output += d; });
  return waitFor(() => ready.test(output) || child.exitCode !== null, 90_000, 'the service to start')
    .then(() => {
      if (child.exitCode !== null) throw new Error(`service exited: ${output}`);
      return { child, output: () => output };
    });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, 'admin', ...args], { env }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test('startup lines name the console, the HTTP API, MQTT and the next command; an external broker\'s password is hidden', () => {
  const config = { ...defaultConfig, dataDir: '/srv/fleet' };
  const lines = startupLines({ config, httpPort: 8080, mqttPort: 1883, probesPort: undefined, dataDir: '/srv/fleet' }).join('\n');
  assert.match(lines, /Console +http:\/\/localhost:8080\/console\//);
  assert.match(lines, /HTTP API +http:\/\/localhost:8080 /);
  assert.match(lines, /MQTT +mqtt:\/\/localhost:1883/);
  assert.match(lines, /npm run quickstart -- --data-dir \/srv\/fleet/);
  const external = startupLines({ config: { ...config, mqtt: { ...config.mqtt, url: 'mqtts://fleet:s3cret@broker.example:8883' } }, httpPort: 8080, mqttPort: undefined, probesPort: undefined, dataDir: '/d' }).join('\n');
  assert.match(external, /external broker mqtts:\/\/fleet:\*\*\*@broker\.example:8883/);
  assert.not.match(external, /s3cret/);
  const engine = startupLines({ config: { ...config, role: 'engine' }, httpPort: undefined, mqttPort: undefined, probesPort: 9090, dataDir: '/d' }).join('\n');
  assert.match(engine, /Probes +http:\/\/localhost:9090\/ready/);
  assert.not.match(engine, /Console|quickstart/);
});

test('the text logger: time, level, message, then fields; levels below the configured one are dropped', () => {
  const lines: string[] = [];
  const logger = createTextLogger({ level: 'info', write: (l) => lines.push(l), now: () => Date.UTC(2026, 0, 2, 3, 4, 5), fields: { role: 'all' } });
  logger.debug('hidden');
  logger.info('started', { http: '0.0.0.0:8080', note: 'two words', n: 3, gone: undefined });
  logger.child({ component: 'mqtt' }).error('failed', { error: Object.assign(new Error('boom'), { code: 'UNAVAILABLE' }) });
  assert.equal(lines, [
    '03:04:05 info  started role=all http=0.0.0.0:8080 note="two words" n=3\n',
    '03:04:05 error failed role=all component=mqtt error="UNAVAILABLE: boom"\n',
  ]);
});

test('off a terminal the service logs JSON lines only; --log-format text prints the startup lines', async () => {
  const json = await start(join(tmp.dir, 'json'), [], /fleetstream started/);
  await stop(json.child);
  const lines = json.output().trim().split('\n');
  for (const line of lines) assert.ok(JSON.parse(line).msg, line);
  assert.not.match(json.output(), /Fleetstream is running/);

  const text = await start(join(tmp.dir, 'text'), ['--log-format', 'text'], /Stop with Ctrl-C/);
  await stop(text.child);
  const port = /HTTP API +http:\/\/127\.0\.0\.1:(\d+)/.exec(text.output())?.[1];
  assert.ok(port && Number(port) > 0, text.output());
  assert.match(text.output(), new RegExp(`Console +http://127\\.0\\.0\\.1:${port}/console/`));
  assert.match(text.output(), /MQTT +mqtt:\/\/127\.0\.0\.1:\d+/);
  assert.match(text.output(), /npm run quickstart -- --data-dir /);
  assert.match(text.output(), /^\d\d:\d\d:\d\d info  fleetstream started /m);
});

test('quickstart through the running service: user, ground and demo device; link and token apart; --demo sends states', async () => {
  const dataDir = join(tmp.dir, 'qs');
  const service = await start(dataDir, ['--log-format', 'text'], /Stop with Ctrl-C/);
  try {
    const base = /HTTP API +(http:\/\/127\.0\.0\.1:\d+)/.exec(service.output())![1];
    const run = await admin('quickstart', '--json', '--data-dir', dataDir);
    assert.is(run.code, 0, run.stderr);
    const r = JSON.parse(run.stdout) as { userToken: string; groundId: string; deviceId: string; deviceToken: string; console: string; mqtt: string };
    assert.is(r.console, `${base}/console/`);
    const mqttPort = /MQTT +mqtt:\/\/127\.0\.0\.1:(\d+)/.exec(service.output())![1];
    assert.is(r.mqtt, `mqtt://127.0.0.1:${mqttPort}`, 'where the demo device hears its commands');
    assert.not.ok(r.console.includes(r.userToken), 'the token is not in the link');
    const me = await (await fetch(`${base}/me`, { headers: { authorization: `Bearer ${r.userToken}` } })).json() as { scope: string; name: string };
    assert.is(me.scope, 'user');
    assert.is(me.name, 'demo', 'the default name');
    const grounds = await (await fetch(`${base}/grounds`, { headers: { authorization: `Bearer ${r.userToken}` } })).json() as { items: Array<{ id: string }> };
    assert.equal(grounds.items.map((g) => g.id), [r.groundId]);
    const device = await (await fetch(`${base}/device/${r.deviceId}`, { headers: { authorization: `Bearer ${r.userToken}` } })).json() as { assets: Array<{ name: string; is: string }> };
    assert.equal(device.assets.map((a) => `${a.name}:${a.is}`).sort(), ['humidity:sensor', 'light:actuator', 'setpoint:actuator', 'temperature:sensor']);

    const human = await admin('quickstart', 'bea', '--data-dir', dataDir);
    assert.is(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`Console +${base}/console/\\n`));
    assert.match(human.stdout, /User token +fsu_\S+\n/);
    assert.match(human.stdout, new RegExp(`MQTT +mqtt://127\\.0\\.0\\.1:${mqttPort} `));

    const demo = spawn(process.execPath, [bin, 'admin', 'quickstart', 'cy', '--demo', '--json', '--data-dir', dataDir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(demo);
    let out = '';
    let err = '';
    demo.stdout!.on('data', (d) => { out += d; });
    demo.stderr!.on('data', (d) => { err += d; });
    await waitFor(() => out.includes('\n') && err.includes('states accepted'), 30_000, 'the demo device sending');
    const created = JSON.parse(out) as { userToken: string; deviceId: string };
    await waitFor(async () => {
      const state = await (await fetch(`${base}/device/${created.deviceId}/state`, { headers: { authorization: `Bearer ${created.userToken}` } })).json() as Record<string, { value: number }>;
      return typeof state.temperature?.value === 'number' && typeof state.humidity?.value === 'number';
    }, 20_000, 'demo states stored');
    const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
    demo.kill('SIGINT');
    assert.is(await exited, 0, 'Ctrl-C stops the demo cleanly');
  } finally {
    await stop(service.child);
  }
});

test('quickstart --demo without a running service says to start it first', async () => {
  const dataDir = join(tmp.dir, 'cold');
  const init = await admin('create-user', 'x', '--init', '--data-dir', dataDir);
  assert.is(init.code, 0, init.stderr);
  const run = await admin('quickstart', '--demo', '--data-dir', dataDir);
  assert.is.not(run.code, 0);
  assert.match(run.stderr, /none runs on data dir .*start it first \(npm start\)/);
  const users = await admin('quickstart', '--json', '--data-dir', dataDir);
  assert.is(users.code, 0, 'without --demo it works on the registry directly');
  assert.match(JSON.parse(users.stdout).console, /^http:\/\/localhost:8080\/console\/$/);
});

/** The service and `quickstart --demo` as a person runs them; the demo's JSON and its stderr so far. */
async function demoRunning(dataDir: string): Promise<{ service: ChildProcess; demo: ChildProcess; created: { userToken: string; deviceId: string; console: string }; said: () => string }> {
  const service = await start(dataDir, ['--log-format', 'text'], /Stop with Ctrl-C/);
  const demo = spawn(process.execPath, [bin, 'admin', 'quickstart', '--demo', '--json', '--data-dir', dataDir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(demo);
  let out = '';
  let err = '';
  demo.stdout!.on('data', (d) => { out += d; });
  demo.stderr!.on('data', (d) => { err += d; });
  await waitFor(() => out.includes('\n') && err.includes('states accepted'), 30_000, 'the demo device sending');
  assert.match(err, /answers commands to its light and set point \(MQTT mqtt:\/\/127\.0\.0\.1:\d+\)/);
  return { service: service.child, demo, created: JSON.parse(out), said: () => err };
}

withChromium('quickstart in the console', (chromiumPath) => {
  test('in Chromium, the demo device answers the console: the light switched and the set point moved come back as its states', async () => {
    const { service, demo, created, said } = await demoRunning(join(tmp.dir, 'browser'));
    const browser = await launchChromium(chromiumPath);
    try {
      const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
      await context.addInitScript((token: string) => sessionStorage.setItem('fleetstream.token', token), created.userToken);
      const page = await context.newPage();
      const errors = pageErrors(page);
      const consoleUrl = created.console;
      await page.goto(`${consoleUrl}#/device/${created.deviceId}/asset/light`);
      await page.getByText('● live').waitFor({ timeout: 10_000 });
      const lastLight = page.locator('[data-testid=history] tbody tr').first().locator('td').nth(1);
      await lastLight.filter({ hasText: 'false' }).waitFor({ timeout: 10_000 });
      await page.getByLabel('Value (on / off)').check();
      await page.getByRole('button', { name: 'Send' }).click();
      await waitFor(async () => (await page.getByTestId('command-status').innerText()) === 'delivered', 15_000, 'the light command delivered');
      await lastLight.filter({ hasText: 'true' }).waitFor({ timeout: 10_000 });
      await waitFor(() => /command to light: applied/.test(said()), 5000, 'the demo saying so');
      assert.equal(await accessibilityProblems(page), [], 'light page: labels, names and contrast');

      await page.goto(`${consoleUrl}#/device/${created.deviceId}/asset/setpoint`);
      await page.getByLabel('Value').fill('30');
      await page.getByRole('button', { name: 'Send' }).click();
      await waitFor(async () => (await page.getByTestId('command-status').innerText()) === 'delivered', 15_000, 'the set point command delivered');
      await page.goto(`${consoleUrl}#/device/${created.deviceId}`);
      await page.locator('td.value[data-asset=setpoint]', { hasText: '30' }).waitFor({ timeout: 10_000 });
      const temperature = page.locator('td.value[data-asset=temperature]');
      // From about 21 °C the room goes half way to 30 at each state (every 2 s); waves add ±1.7.
      await waitFor(async () => Number(await temperature.innerText()) >= 27, 30_000, 'the reported temperature drawn to the set point');
      assert.is(await page.locator('td.value[data-asset=light]').innerText(), 'true');
      await page.goto(`${consoleUrl}#/device/${created.deviceId}/asset/temperature`);
      await page.locator('[data-testid=chart] canvas').waitFor();
      await screenshot(page, 'console-quickstart-temperature');
      assert.equal(errors, []);
      await context.close();
    } finally {
      await browser.close();
      const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
      demo.kill('SIGINT');
      assert.is(await exited, 0, 'Ctrl-C stops the demo cleanly');
      await stop(service);
    }
  });
});

test.run();
