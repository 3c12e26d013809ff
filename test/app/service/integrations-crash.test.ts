/**
 * kill -9 during delivery (docs/integrations.md, "Deliveries"): `fleetstream start` on its embedded
 * defaults delivers an integration to a receiver on loopback that answers slowly, so requests are
 * under way; devices keep sending states over HTTP; the service is SIGKILLed while a request is in
 * flight, twice, and started again on the same data dir. Afterwards every state that was answered
 * 202 has been delivered at least once; an event delivered twice came under the same `webhook-id`
 * both times; and once the repeated `webhook-id`s are set aside (as a receiver de-duplicating on
 * them does), each device's states arrived exactly once and in the order it sent them.
 */
import * as assert from 'uvu/assert';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { suite } from '../../support/suite.ts';
import { freePort } from '../../support/fleetCluster.ts';
import { sendJson } from '../../support/sendJson.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhookReceiver.ts';

const run = promisify(execFile);
const bin = new URL('../../../bin/fleetstream.ts', import.meta.url).pathname;
const HOST = '127.0.0.2';
const DEVICES = 4;

interface Delivered { webhookId: string; events: { id: string; deviceId: string; value: number }[] }

const test = suite('integrations: kill -9 during delivery');
const tmp = tempDir('integrations-crash');
let child: ChildProcess | undefined;
let receiver: WebhookReceiver | undefined;
let inFlight = 0;

test.after(async () => {
  child?.kill('SIGKILL');
  await receiver?.close();
  tmp.remove();
});

test('every acknowledged state is delivered at least once, repeats under the same webhook-id, each device in order', async () => {
  const port = await freePort();
  const env = {
    ...process.env, DATA_DIR: `${tmp.dir}/data`, LOG_LEVEL: 'info', MQTT_PORT: '-1', METRICS_PORT: '0', DATABASE_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '',
    BATCH_DELAY_MS: '10', INTEGRATIONS_ALLOW_HOSTS: HOST, INTEGRATIONS_BATCH_EVENTS: '10', INTEGRATIONS_BATCH_LINGER_MS: '50',
  };
  const admin = async (...args: string[]) => JSON.parse((await run(process.execPath, [bin, 'admin', ...args, '--json'], { env })).stdout) as Record<string, string>;
  let output = '';
  const start = async () => {
    child = spawn(process.execPath, [bin, 'start', '--port', String(port), '--host', '127.0.0.1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const started = output.length;
    child.stdout!.on('data', (d) => { output += d; });
    child.stderr!.on('data', (d) => { output += d; });
    await waitFor(() => output.slice(started).includes('fleetstream started'), 60_000, 'service start');
  };
  const kill = async () => {
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child!.kill('SIGKILL');
    await exited;
    child = undefined;
  };
  // Slow answers: a request is under way most of the time, so the kills land during one.
  receiver = await startWebhookReceiver((_req, res) => {
    inFlight++;
    setTimeout(() => { inFlight--; res.writeHead(200).end(); }, 150);
  }, HOST);

  await admin('create-partner', 'acme', '--init');
  await start();
  const user = await admin('create-user', 'alice');
  const ground = await admin('create-ground', 'home', '--user', user.id);
  const base = `http://127.0.0.1:${port}`;
  const created = await sendJson(`${base}/ground/${ground.id}/integrations`, 'POST', user.token, { name: 'app', kind: 'webhook', url: receiver.url, events: ['state'] });
  assert.is(created.status, 201);
  const devices: { id: string; token: string }[] = [];
  for (let i = 0; i < DEVICES; i++) {
    const res = await sendJson(`${base}/ground/${ground.id}/devices`, 'POST', user.token, { name: `d${i}`, assets: [{ name: 'n', is: 'sensor', profile: { type: 'number' } }] });
    devices.push(await res.json() as { id: string; token: string });
  }

  const acknowledged = new Map<string, number[]>(devices.map((d) => [d.id, []]));
  let next = 0;
  /** Sends states until `until` says stop; one device after another, values rising. */
  const produce = async (until: () => boolean) => {
    while (!until()) {
      const value = next++;
      const d = devices[value % DEVICES];
      const res = await sendJson(`${base}/device/${d.id}/asset/n/state`, 'PUT', d.token, { value }).catch(() => undefined);
      if (res === undefined) return;
      if (res.status === 202) acknowledged.get(d.id)!.push(value);
      await res.text();
    }
  };
  for (const round of [1, 2]) {
    const requestsBefore = receiver.received.length;
    let killed = false;
    const producing = produce(() => killed);
    await waitFor(() => receiver!.received.length >= requestsBefore + 8 && inFlight > 0, 30_000, `deliveries under way (round ${round})`);
    killed = true;
    await kill();
    await producing;
    await start();
  }
  await produce(() => next % DEVICES === 0 && [...acknowledged.values()].every((values) => values.length >= 60));

  const total = [...acknowledged.values()].reduce((sum, values) => sum + values.length, 0);
  const delivered = () => receiver!.received.map((r) => ({ webhookId: String(r.headers['webhook-id']), events: (JSON.parse(r.body) as Delivered).events }));
  const missing = () => {
    const got = new Set(delivered().flatMap((d) => d.events.map((e) => `${e.deviceId}/${e.value}`)));
    return [...acknowledged].flatMap(([deviceId, values]) => values.filter((v) => !got.has(`${deviceId}/${v}`)));
  };
  await waitFor(() => missing().length === 0, 60_000, `all ${total} acknowledged states delivered`);

  const requests = delivered();
  const idsOfEvent = new Map<string, Set<string>>();
  for (const request of requests) for (const event of request.events) {
    const ids = idsOfEvent.get(event.id) ?? new Set<string>();
    ids.add(request.webhookId);
    idsOfEvent.set(event.id, ids);
  }
  const repeated = [...idsOfEvent.values()].filter((ids) => ids.size > 1);
  assert.equal(repeated.length, 0, 'an event delivered twice came under one webhook-id');
  const seen = new Set<string>();
  const perDevice = new Map<string, number[]>(devices.map((d) => [d.id, []]));
  for (const request of requests) {
    if (seen.has(request.webhookId)) continue;
    seen.add(request.webhookId);
    for (const event of request.events) perDevice.get(event.deviceId)!.push(event.value);
  }
  for (const [deviceId, values] of acknowledged) {
    const got = perDevice.get(deviceId)!;
    assert.equal(got.filter((v) => values.includes(v)), values, `device ${deviceId}: every acknowledged state once, in order`);
    assert.equal(got, [...got].sort((a, b) => a - b), `device ${deviceId}: in order`);
  }
  await kill();
});

test.run();
