/**
 * Prometheus metrics and probes of the composed service: an uplink over HTTP moves the admission
 * counters of its channel, a refused one its code, stored data points and store inserts follow, HTTP
 * requests are counted by route template; /health and /ready answer; lag shows a paused consumer;
 * an engine is not ready before it holds partitions.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { buildEngine } from '../../../app/buildEngine.ts';
import { engineReady, type Service } from '../../../app/createService.ts';
import { createMetrics } from '../../../app/metrics.ts';
import { serveMetrics } from '../../../app/serveMetrics.ts';
import { serveProbes } from '../../../app/serveProbes.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { MemoryDirectory } from '../../../engine/ports/directory.ts';
import { encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { Topics, type StateRow } from '../../../schemas/messages.ts';
import { createDeviceOverHttp, startEmbeddedService } from '../../support/embeddedService.ts';
import { sample } from '../../support/prometheusText.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const tmp = tempDir('metrics');
let service: Service;
let base = '';

/** GET /metrics on the service's metrics listener. */
const scrape = async () => {
  const res = await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
  return res.text();
};

test.before(async () => {
  ({ service, base } = await startEmbeddedService(`${tmp.dir}/all`));
});

test.after(async () => {
  await service.stop();
  tmp.remove();
});

test('an uplink over HTTP moves the counters of its channel, its data points and the store; a refusal its code', async () => {
  const device = await createDeviceOverHttp(service, base, [{ name: 'temperature', is: 'sensor', profile: { type: 'number', maximum: 100 } }]);
  const before = await scrape();
  assert.is(sample(before, 'fleetstream_uplinks_received_total', { channel: 'http' }) ?? 0, 0);

  const put = (value: number) => fetch(`${base}/device/${device.id}/asset/temperature/state`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ value, at: '2026-11-01T08:00:00Z' }),
  });
  assert.is((await put(21.5)).status, 202);
  const refused = await put(500);
  assert.ok(refused.status >= 400 && refused.status < 500, `refused with ${refused.status}`);
  const code = ((await refused.json()) as { code: string }).code;

  await waitFor(async () => sample(await scrape(), 'fleetstream_data_points_stored_total') === 1, 15_000, 'stored data point counted');
  const text = await scrape();
  assert.is(sample(text, 'fleetstream_uplinks_received_total', { channel: 'http' }), 2);
  assert.is(sample(text, 'fleetstream_uplinks_admitted_total', { channel: 'http' }), 1);
  assert.is(sample(text, 'fleetstream_uplinks_refused_total', { channel: 'http', code }), 1, `refused with code ${code}`);
  assert.is(sample(text, 'fleetstream_dead_letters_total', { code }), 1);
  assert.is(sample(text, 'fleetstream_engine_uplinks_total'), 1);
  assert.ok((sample(text, 'fleetstream_store_insert_duration_seconds_count') ?? 0) >= 1, 'store inserts timed');
  assert.ok((sample(text, 'fleetstream_store_insert_rows_sum') ?? 0) >= 1, 'batch sizes observed');
  assert.ok((sample(text, 'fleetstream_log_append_duration_seconds_count', { topic: Topics.uplinks }) ?? 0) >= 1, 'log appends timed');
  assert.is(sample(text, 'fleetstream_http_requests_total', { method: 'PUT', route: '/device/:id/asset/:name/state', status: '202' }), 1);
  assert.ok(!text.includes(device.id), 'no raw path (device id) in any label');
  // Admitted at the edge, the uplink needs no device actor in the engine.
  assert.is(sample(text, 'fleetstream_engine_admitted_direct_total'), 1);
  assert.is(sample(text, 'fleetstream_actors'), 0);
  assert.is(sample(text, 'fleetstream_actors_created_total'), 0);
  assert.is(sample(text, 'fleetstream_actor_mailbox_depth'), 0);
  assert.is(sample(text, 'fleetstream_uplinks_in_flight'), 0);
  assert.is(sample(text, 'fleetstream_engine_up'), 1);
  assert.is(sample(text, 'fleetstream_partitions_assigned'), 2);
  assert.is(sample(text, 'fleetstream_mqtt_connections'), 0);
  assert.ok(sample(text, 'fleetstream_process_resident_memory_bytes') !== undefined, 'process metrics');
  await waitFor(async () => {
    const lag = await scrape();
    return sample(lag, 'fleetstream_consumer_lag', { topic: Topics.uplinks, partition: '0' }) === 0
      && sample(lag, 'fleetstream_consumer_lag', { topic: Topics.uplinks, partition: '1' }) === 0;
  }, 5_000, 'no lag once stored');
});

test('/health and /ready answer; an unknown path is counted as unmatched', async () => {
  assert.is((await fetch(`${base}/health`)).status, 200);
  const ready = await fetch(`${base}/ready`);
  assert.is(ready.status, 200);
  assert.equal(await ready.json(), { status: 'ok' });
  assert.is((await fetch(`${base}/no/such/path`)).status, 404);
  assert.is(sample(await scrape(), 'fleetstream_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
});

test('MQTT connections and refusals, uplinks by channel, command transitions and delivery latency are counted', async () => {
  const device = await createDeviceOverHttp(service, base, [
    { name: 'light', is: 'actuator', profile: { type: 'boolean' } },
    { name: 'temperature', is: 'sensor', profile: { type: 'number', maximum: 100 } },
  ]);
  const refusedConnection = await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: 'no-such-token', password: 'x', reconnectPeriod: 0 })
    .then(async (c) => { await c.endAsync(); return false; }, () => true);
  assert.ok(refusedConnection, 'an unknown token is refused at CONNECT');
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: device.token, password: device.token, reconnectPeriod: 0 });
  try {
    await client.subscribeAsync(`device/${device.id}/asset/+/command`, { qos: 1 });
    let text = await scrape();
    assert.is(sample(text, 'fleetstream_mqtt_connections'), 1);
    assert.is(sample(text, 'fleetstream_mqtt_connections_refused_total'), 1);
    const command = await fetch(`${base}/device/${device.id}/asset/light/command`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${device.userToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ value: true }),
    });
    assert.is(command.status, 202);
    await waitFor(async () => sample(await scrape(), 'fleetstream_command_transitions_total', { status: 'delivered' }) === 1, 10_000, 'command delivered');
    text = await scrape();
    assert.is(sample(text, 'fleetstream_command_transitions_total', { status: 'queued' }), 1);
    assert.is(sample(text, 'fleetstream_command_transitions_total', { status: 'sent' }), 1);
    assert.is(sample(text, 'fleetstream_command_delivery_seconds_count'), 1, 'queued → delivered observed once');
    assert.is(sample(text, 'fleetstream_log_append_duration_seconds_count', { topic: Topics.commands }), 1, 'the command append timed');
    // Uplinks over MQTT: admitted and refused, counted under their channel.
    await client.publishAsync(`device/${device.id}/asset/temperature/state`, '{"value": 21.5}', { qos: 1 });
    await client.publishAsync(`device/${device.id}/asset/temperature/state`, '{"value": 500}', { qos: 1 });
    await waitFor(async () => sample(await scrape(), 'fleetstream_uplinks_received_total', { channel: 'mqtt' }) === 2, 5_000, 'mqtt uplinks counted');
    text = await scrape();
    assert.is(sample(text, 'fleetstream_uplinks_admitted_total', { channel: 'mqtt' }), 1);
    assert.is(sample(text, 'fleetstream_uplinks_refused_total', { channel: 'mqtt', code: 'PROFILE_VIOLATION' }), 1);
  } finally {
    await client.endAsync();
  }
  await waitFor(async () => sample(await scrape(), 'fleetstream_mqtt_connections') === 0, 5_000, 'disconnected');
});

test('an engine is not ready before it holds partitions; lag shows records a paused engine has not stored', async () => {
  const log = createLocalLog({ dir: `${tmp.dir}/engine-log`, clock: systemClock });
  await log.ensureTopics([{ name: Topics.uplinks, partitions: 2 }, { name: Topics.deadLetters, partitions: 2 }]);
  // A store that holds every insert until released: the engine pauses with records in flight.
  let release!: () => void;
  const held = new Promise<void>((resolve) => { release = resolve; });
  const stored: StateRow[] = [];
  const metrics = createMetrics({ defaultMetrics: false });
  const directory = new MemoryDirectory();
  directory.put({ id: 'd1', assets: [{ id: 'a1', name: 'temperature', is: 'sensor', profile: { type: 'number' } }] });
  const engine = buildEngine({
    log,
    store: metrics.store({ async append(rows) { await held; stored.push(...rows); } }),
    rejections: { async append() {} },
    directory,
    clock: systemClock,
    settings: { batchDelayMs: 5 },
  });
  metrics.watchEngine(engine.pipeline, log, 'fleetstream-engine');
  const probes = await serveProbes({ port: 0, host: '127.0.0.1', alive: () => true, ready: () => engineReady(engine.pipeline) });
  const probe = `http://127.0.0.1:${probes.port}`;
  const listener = await serveMetrics({ port: 0, host: '127.0.0.1', scrape: () => metrics.scrape() });
  const metricsBase = `http://127.0.0.1:${listener.port}`;
  try {
    assert.is((await fetch(`${probe}/ready`)).status, 503, 'not ready before joining the group');
    assert.is((await fetch(`${probe}/health`)).status, 200, 'alive meanwhile');
    await engine.start();
    await waitFor(async () => (await fetch(`${probe}/ready`)).status === 200, 5_000, 'ready once partitions are assigned');

    const envelope = (i: number) => encodeEnvelope({
      id: `u${i}`, channel: 'http', contentType: 'json', deviceId: 'd1', asset: 'temperature', receivedAt: Date.now(),
      body: new TextEncoder().encode(JSON.stringify({ value: i, at: '2026-11-01T08:00:00Z' })),
    });
    const positions = await log.append(Topics.uplinks, Array.from({ length: 5 }, (_, i) => ({ key: 'd1', value: envelope(i) })));
    const partition = String(positions[0].partition);
    const lagOf = async () => sample(await (await fetch(`${metricsBase}/metrics`)).text(), 'fleetstream_consumer_lag', { topic: Topics.uplinks, partition });
    await waitFor(async () => (await lagOf()) === 5, 5_000, 'lag of 5 while the store holds the batch');
    await log.append(Topics.uplinks, [{ key: 'd1', value: envelope(5) }]);
    await waitFor(async () => (await lagOf()) === 6, 5_000, 'lag grows with appends');
    release();
    await waitFor(async () => (await lagOf()) === 0, 5_000, 'lag back to 0 once stored');
    assert.is(stored.length, 6);
    const text = await (await fetch(`${metricsBase}/metrics`)).text();
    assert.is(sample(text, 'fleetstream_actors_created_total'), 1, 'uplinks not admitted at an edge go through a device actor');
    assert.is(sample(text, 'fleetstream_actors'), 1);
    assert.is(sample(text, 'fleetstream_data_points_stored_total'), 6);
  } finally {
    release();
    await engine.stop();
    await probes.close();
    await listener.close();
    await log.close();
  }
});

test.run();
