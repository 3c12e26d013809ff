/**
 * Alarm changes on the live streams of the embedded service (docs/live.md, docs/rules.md): a rule
 * raising and clearing an alarm, and a member acknowledging and clearing one, reach the ground's
 * SSE stream and a WebSocket subscription as `alarm` events, filtered by `kinds`, resumable from
 * their cursor; a non-member is refused; the member's changes also reach an integration taking
 * alarm events. Real MQTT clients (3.1.1 and 5) follow the alarm topics of the embedded edge: a
 * member and the device itself, each on the topic shape it subscribed to; a stranger is refused.
 */
import { test } from 'uvu';
import mqtt from 'mqtt';
import * as assert from 'uvu/assert';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { openSse, openWs, type SseStream } from '../../support/liveClients.ts';
import { sendJson } from '../../support/sendJson.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhookReceiver.ts';

const tmp = tempDir('alarms-live');
let service: Service;
let base = '';
let userToken = '';
let strangerToken = '';
let groundId = '';
let device = { id: '', token: '' };
let receiver: WebhookReceiver;

async function call(method: string, path: string, body?: unknown, token = userToken): Promise<{ status: number; json: any }> {
  const res = await sendJson(base + path, method, token, body);
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
}

async function send(value: number): Promise<void> {
  const res = await call('PUT', `/device/${device.id}/asset/temperature/state`, { value, at: new Date().toISOString() }, device.token);
  assert.is(res.status, 202, JSON.stringify(res.json));
}

const alarmsOf = (stream: SseStream) => stream.events.filter((e) => e.event === 'alarm').map((e) => ({ id: e.id, ...JSON.parse(e.data) }));

test.before(async () => {
  ({ service, base } = await startEmbeddedService({ dir: tmp.dir, integrationsAllowHosts: ['127.0.0.2'], integrations: { batchLingerMs: 50 } }));
  receiver = await startWebhookReceiver((_req, res) => res.writeHead(204).end(), '127.0.0.2');
  const user = await service.registry.createUser({ name: 'u' });
  userToken = user.token;
  strangerToken = (await service.registry.createUser({ name: 'stranger' })).token;
  groundId = (await service.registry.createGround({ name: 'g', userId: user.entity.id })).id;
  const made = await call('POST', `/ground/${groundId}/devices`, { name: 'fridge', assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }] });
  assert.is(made.status, 201);
  device = made.json;
  assert.is((await call('POST', `/ground/${groundId}/integrations`, { name: 'alarms', kind: 'webhook', url: receiver.url, events: ['alarm'] })).status, 201);
});

test.after(async () => {
  await service?.stop();
  await receiver?.close();
  tmp.remove();
});

test('raised and cleared by the rule, acknowledged and cleared by a member: on the ground stream and a WebSocket, kinds=alarm only', async () => {
  const sse = await openSse(`${base}/ground/${groundId}/live?kinds=alarm`, userToken);
  assert.is(sse.status, 200);
  const ws = await openWs(`${base.replace('http', 'ws')}/live`);
  ws.send({ type: 'auth', token: userToken });
  await ws.next((f) => f.type === 'ready');
  ws.send({ type: 'subscribe', device: device.id, kinds: ['alarm'] });
  await ws.next((f) => f.type === 'subscribed');
  const rule = await call('POST', `/ground/${groundId}/rules`, { name: 'warm', asset: 'temperature', condition: { above: 8 }, severity: 'major' });
  assert.is(rule.status, 201, JSON.stringify(rule.json));

  await send(9);
  await waitFor(() => alarmsOf(sse).length >= 1, 10_000, 'the raised alarm on the stream');
  await send(3);
  await waitFor(() => alarmsOf(sse).length >= 2, 10_000, 'the cleared alarm on the stream');
  await send(10);
  await waitFor(() => alarmsOf(sse).length >= 3, 10_000, 'a second alarm raised');
  const [first, , second] = alarmsOf(sse);
  // Members acting at once: each change is published once, by the call that made it.
  const acks = await Promise.all([0, 1, 2, 3].map(() => call('POST', `/alarms/${second.alarmId}/acknowledge`)));
  assert.equal(acks.map((r) => r.status), [200, 200, 200, 200]);
  assert.is((await call('POST', `/alarms/${second.alarmId}/acknowledge`)).status, 200, 'again: nothing changes');
  const clears = await Promise.all([0, 1, 2].map(() => call('POST', `/alarms/${second.alarmId}/clear`)));
  assert.equal(clears.map((r) => r.status), [200, 200, 200]);
  await waitFor(() => alarmsOf(sse).length >= 5, 10_000, 'the member\'s changes on the stream');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const alarms = alarmsOf(sse);
  assert.equal(alarms.map((a) => [a.change, a.status, a.acknowledged, a.value, a.by === undefined ? '-' : 'member']), [
    ['raised', 'active', false, 9, '-'],
    ['cleared', 'cleared', false, 9, '-'],
    ['raised', 'active', false, 10, '-'],
    ['acknowledged', 'active', true, 10, 'member'],
    ['cleared', 'cleared', true, 10, 'member'],
  ], 'each change once, in order; an acknowledgement repeated is not a change');
  assert.equal([first.ruleId, first.groundId, first.deviceId, first.asset, first.severity, first.count], [rule.json.id, groundId, device.id, 'temperature', 'major', 1]);
  assert.ok(sse.events.every((e) => e.event === 'alarm'), 'kinds=alarm: no state events');

  const frames = await ws.next((f) => f.type === 'alarm' && (f.data as any).change === 'cleared' && (f.data as any).by !== undefined);
  assert.is((frames.data as any).alarmId, second.alarmId);
  assert.equal(ws.frames.filter((f) => f.type === 'alarm').map((f) => (f.data as any).change), ['raised', 'cleared', 'raised', 'acknowledged', 'cleared']);

  // Resumed after the first event: the others, once.
  const resumed = await openSse(`${base}/ground/${groundId}/live?kinds=alarm`, userToken, { 'last-event-id': alarms[0].id! });
  await waitFor(() => alarmsOf(resumed).length >= 4, 10_000, 'the resumed events');
  assert.equal(alarmsOf(resumed).map((a) => a.change), ['cleared', 'raised', 'acknowledged', 'cleared']);

  // The member's changes reach the integration taking alarm events too.
  await waitFor(() => receiver.received.flatMap((r) => JSON.parse(r.body).events).filter((e: any) => e.alarmId === second.alarmId).length >= 3, 15_000, 'the integration\'s events');
  const delivered = receiver.received.flatMap((r) => JSON.parse(r.body).events).filter((e: any) => e.alarmId === second.alarmId).map((e: any) => e.change);
  assert.equal(delivered, ['raised', 'acknowledged', 'cleared']);
  sse.close();
  resumed.close();
  ws.ws.close();
  await call('DELETE', `/rules/${rule.json.id}`);
});

test('MQTT alarm topics: a member (MQTT 5) and the device (3.1.1) follow the asset\'s alarm changes; a stranger is refused', async () => {
  const url = `mqtt://127.0.0.1:${service.mqttPort}`;
  const member = await mqtt.connectAsync(url, { username: userToken, password: userToken, protocolVersion: 5, reconnectPeriod: 0 });
  const own = await mqtt.connectAsync(url, { username: device.token, password: device.token, protocolVersion: 4, reconnectPeriod: 0 });
  const stranger = await mqtt.connectAsync(url, { username: strangerToken, password: strangerToken, protocolVersion: 5, reconnectPeriod: 0 });
  try {
    const received: { client: string; topic: string; body: any }[] = [];
    member.on('message', (topic, payload) => received.push({ client: 'member', topic, body: JSON.parse(payload.toString()) }));
    own.on('message', (topic, payload) => received.push({ client: 'device', topic, body: JSON.parse(payload.toString()) }));
    const granted = await member.subscribeAsync(`device/${device.id}/asset/temperature/alarm`, { qos: 1 });
    assert.is(granted[0].qos, 1);
    const assetId = (await call('GET', `/device/${device.id}`)).json.assets.find((a: any) => a.name === 'temperature').id;
    assert.is((await own.subscribeAsync(`asset/${assetId}/alarm`, { qos: 0 }))[0].qos, 0);
    // MQTT 5 SUBACK reason 0x87 (not authorized): mqtt.js rejects the subscription.
    const refused = await stranger.subscribeAsync(`device/${device.id}/asset/temperature/alarm`, { qos: 1 }).then(() => 'granted', (error: Error) => error.message);
    assert.match(refused, /Not authorized/);
    const rule = await call('POST', `/ground/${groundId}/rules`, { name: 'hot', asset: 'temperature', condition: { above: 30 }, severity: 'critical' });
    assert.is(rule.status, 201);
    await send(31);
    await send(20);
    await waitFor(() => received.length >= 4, 10_000, 'both clients told of both changes');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const of = (client: string) => received.filter((m) => m.client === client).map((m) => [m.topic, m.body.change, m.body.value, m.body.ruleId]);
    assert.equal(of('member'), [
      [`device/${device.id}/asset/temperature/alarm`, 'raised', 31, rule.json.id],
      [`device/${device.id}/asset/temperature/alarm`, 'cleared', 31, rule.json.id],
    ], 'each change once, in order, on the topic it subscribed to');
    assert.equal(of('device'), [
      [`asset/${assetId}/alarm`, 'raised', 31, rule.json.id],
      [`asset/${assetId}/alarm`, 'cleared', 31, rule.json.id],
    ]);
    await call('DELETE', `/rules/${rule.json.id}`);
  } finally {
    await Promise.all([member.endAsync(), own.endAsync(), stranger.endAsync()]);
  }
});

test('refused: a stranger\'s stream (403), an unknown kind (422)', async () => {
  const stranger = await openSse(`${base}/ground/${groundId}/live?kinds=alarm`, strangerToken);
  assert.is(stranger.status, 403);
  assert.is(stranger.problem?.code, 'FORBIDDEN');
  const bogus = await openSse(`${base}/ground/${groundId}/live?kinds=alarm,alarms`, userToken);
  assert.is(bogus.status, 422);
  assert.is(bogus.problem?.code, 'VALIDATION_FAILED');
  // Over the WebSocket, entries that are not strings — one that answers toString, too — are refused, not a 500.
  const ws = await openWs(`${base.replace('http', 'ws')}/live`);
  ws.send({ type: 'auth', token: userToken });
  await ws.next((f) => f.type === 'ready');
  for (const kinds of [[{ toString: 'alarm' }], [null], [['alarm']], [7]]) {
    const from = ws.frames.length;
    ws.send({ type: 'subscribe', ground: groundId, kinds });
    const error = await ws.next((f) => f.type === 'error', 5000, from);
    assert.is(error.code, 'VALIDATION_FAILED', JSON.stringify(kinds));
  }
  assert.equal(ws.frames.filter((f) => f.type === 'error').map((f) => f.code), ['VALIDATION_FAILED', 'VALIDATION_FAILED', 'VALIDATION_FAILED', 'VALIDATION_FAILED']);
  ws.ws.close();
});

test.run();
