/**
 * An engine that stops for good makes `fleetstream start` exit non-zero with its reason, so a
 * supervisor restarts it (it replays from the last commit) instead of leaving a process that
 * accepts uplinks and never stores them. The failure is a real one: a column the engine inserts
 * into is dropped under the running service, so every insert fails with a data error that retrying
 * cannot mend (a dropped table would not do: the store waits that out as a server going away).
 */
import * as assert from 'uvu/assert';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { suite, withEnv } from '../../support/suite.ts';
import { freePort } from '../../support/fleetCluster.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { sendJson } from '../../support/sendJson.ts';

const run = promisify(execFile);
const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;

withEnv('engine exit', ['CLICKHOUSE_URL'], 'bash scripts/clickhouse.sh install && bash scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(bash scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL }) => {
  const test = suite('engine exit');
  const tmp = tempDir('engine-exit');
  const database = `fleetstream_exit_${randomBytes(4).toString('hex')}`;
  const env = {
    ...process.env, DATA_DIR: `${tmp.dir}/data`, LOG_LEVEL: 'info', MQTT_PORT: '-1', METRICS_PORT: '0', DATABASE_URL: '', KAFKA_BROKERS: '',
    CLICKHOUSE_URL, CLICKHOUSE_DATABASE: database, BATCH_DELAY_MS: '10',
  };
  let child: ChildProcess | undefined;
  const clickhouse = async (query: string) => {
    const res = await fetch(CLICKHOUSE_URL, { method: 'POST', body: query });
    if (!res.ok) throw new Error(`ClickHouse: ${await res.text()}`);
  };
  const admin = async (...args: string[]) => JSON.parse((await run(process.execPath, [bin, 'admin', ...args, '--json'], { env })).stdout) as Record<string, string>;

  test.after(async () => {
    child?.kill('SIGKILL');
    await clickhouse(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    tmp.remove();
  });

  test('the store failing for good stops the service: exit code 1 and the reason logged', async () => {
    await admin('create-partner', 'acme', '--init');
    const port = await freePort();
    let output = '';
    child = spawn(process.execPath, [bin, 'start', '--port', String(port), '--host', '127.0.0.1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d) => { output += d; });
    child.stderr!.on('data', (d) => { output += d; });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    await waitFor(() => output.includes('fleetstream started'), 30_000, 'service start');

    const user = await admin('create-user', 'alice');
    const ground = await admin('create-ground', 'home', '--user', user.id);
    const base = `http://127.0.0.1:${port}`;
    const created = await sendJson(`${base}/ground/${ground.id}/devices`, 'POST', user.token, { name: 'thermo', assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }] });
    assert.is(created.status, 201);
    const device = await created.json() as { id: string; token: string };

    await clickhouse(`ALTER TABLE ${database}.states DROP COLUMN value_string`);
    const put = await sendJson(`${base}/device/${device.id}/asset/temperature/state`, 'PUT', device.token, { value: 21.5, at: '2026-11-01T10:00:00Z' });
    assert.is(put.status, 202, 'accepted: durable in the log, stored on the next start');

    const code = await Promise.race([exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 30_000))]);
    child = undefined;
    assert.is(code, 1, `exit code (output: ${output.slice(-2000)})`);
    assert.match(output, /uplink pipeline stopped making progress/);
    assert.match(output, /exiting: the engine stopped for good/);
    assert.match(output, /"msg":"fleetstream stopped"/);
  });

  test.run();
});
