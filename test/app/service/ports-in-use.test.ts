/**
 * A port that another program holds stops `fleetstream start` with a message a person can act on:
 * which port and listener, what holds it (where this machine shows it), and the flag and variable
 * that move it; exit code 2 and no stack trace. (With Mosquitto on 1883, `npm start` died with
 * `INTERNAL: listen EADDRINUSE … 0.0.0.0:1883`.) The holder here is a plain TCP listener of this
 * test process, so the message must name this process.
 */
import * as assert from 'uvu/assert';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { test } from '../../support/suite.ts';
import { startUntilExit } from '../../support/startUntilExit.ts';
import { tempDir } from '../../support/tmp.ts';

const env = { ...process.env, DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', DATA_DIR: '', HTTP_PORT: '', MQTT_PORT: '', METRICS_PORT: '0', LOG_LEVEL: 'error', LOG_FORMAT: 'json' };
const tmp = tempDir('ports-in-use');
let held: Server | undefined;

/** A plain TCP listener on a free port of 127.0.0.1. */
async function holdPort(): Promise<number> {
  held = createServer();
  await new Promise<void>((resolve) => held!.listen(0, '127.0.0.1', resolve));
  return (held.address() as AddressInfo).port;
}

/** `fleetstream start` with `args`; its exit code and everything it wrote (killed if still running after 60 s). */
function start(name: string, args: string[]): Promise<{ code: number | null | 'running'; output: string }> {
  return startUntilExit({ args: ['--data-dir', join(tmp.dir, name), '--host', '127.0.0.1', '--mqtt-host', '127.0.0.1', ...args], env, timeoutMs: 60_000 });
}

test.after.each(() => new Promise<void>((resolve) => (held === undefined ? resolve() : held.close(() => resolve()))));
test.after(() => tmp.remove());

test('HTTP port held by another listener: exit code 2, the port, this process as its holder, --port and HTTP_PORT named, no stack trace', async () => {
  const port = await holdPort();
  const { code, output } = await start('http', ['--port', String(port), '--mqtt-port', '0']);
  assert.is(code, 2, output);
  assert.ok(output.includes(`fleetstream: PORT_IN_USE: HTTP port ${port} is in use`), output);
  assert.ok(output.includes(`(pid ${process.pid})`), `names the holder: ${output}`);
  assert.ok(output.includes('--port') && output.includes('HTTP_PORT'), output);
  assert.not.match(output, /\n\s+at /, 'no stack trace');
});

test('MQTT port held by another listener: exit code 2, the port, this process as its holder, --mqtt-port and MQTT_PORT named, no stack trace', async () => {
  const port = await holdPort();
  const { code, output } = await start('mqtt', ['--port', '0', '--mqtt-port', String(port)]);
  assert.is(code, 2, output);
  assert.ok(output.includes(`fleetstream: PORT_IN_USE: MQTT port ${port} is in use`), output);
  assert.ok(output.includes(`(pid ${process.pid})`), `names the holder: ${output}`);
  assert.ok(output.includes('--mqtt-port') && output.includes('MQTT_PORT'), output);
  assert.not.match(output, /\n\s+at /, 'no stack trace');
});

test.run();
