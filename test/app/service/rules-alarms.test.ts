/**
 * Rules raise alarms on the embedded service (docs/rules.md): states sent over HTTP are judged once
 * stored, in each device's order — raised, updated, repeated while active (the condition held
 * again), cleared by the clear condition (hysteresis) or when the condition ends, raised anew after;
 * a late state changes nothing; members list, read, acknowledge and clear alarms; another ground's
 * member finds none. Each change reaches, as an `alarm` event after the state that made it, the
 * integrations taking alarm events and those the rule's actions name. A raised alarm's command
 * action reaches the device's MQTT subscription, once.
 */
import { test } from 'uvu';
import mqtt from 'mqtt';
import * as assert from 'uvu/assert';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { sendJson } from '../../support/sendJson.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhookReceiver.ts';

const tmp = tempDir('rules-alarms');
let service: Service;
let base = '';
let userToken = '';
let groundId = '';
let device = { id: '', token: '' };
let allAlarms: WebhookReceiver;
let named: WebhookReceiver;
let namedId = '';

const eventsOf = (receiver: WebhookReceiver) => receiver.received.flatMap((r) => (JSON.parse(r.body) as { events: any[] }).events);

async function call(method: string, path: string, body?: unknown, token = userToken): Promise<{ status: number; json: any }> {
  const res = await sendJson(base + path, method, token, body);
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
}

const t0 = Date.now() - 3_600_000;
const at = (minute: number) => new Date(t0 + minute * 60_000).toISOString();

async function send(state: Record<string, { value: unknown; at: string }>): Promise<void> {
  const res = await call('PUT', `/device/${device.id}/state`, state, device.token);
  assert.is(res.status, 202, JSON.stringify(res.json));
}

async function alarms(query = ''): Promise<any[]> {
  const res = await call('GET', `/ground/${groundId}/alarms${query}`);
  assert.is(res.status, 200, JSON.stringify(res.json));
  return res.json.items;
}

test.before(async () => {
  ({ service, base } = await startEmbeddedService({ dir: tmp.dir, integrationsAllowHosts: ['127.0.0.2'], integrations: { batchLingerMs: 50 } }));
  allAlarms = await startWebhookReceiver((_req, res) => res.writeHead(204).end(), '127.0.0.2');
  named = await startWebhookReceiver((_req, res) => res.writeHead(204).end(), '127.0.0.2');
  const user = await service.registry.createUser({ name: 'u' });
  userToken = user.token;
  groundId = (await service.registry.createGround({ name: 'g', userId: user.entity.id })).id;
  const made = await call('POST', `/ground/${groundId}/devices`, { name: 'freezer', assets: [
    { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
    { name: 'door', is: 'sensor', profile: { type: 'boolean' } },
  ] });
  assert.is(made.status, 201);
  device = made.json;
  assert.is((await call('POST', `/ground/${groundId}/integrations`, { name: 'alarms', kind: 'webhook', url: allAlarms.url, events: ['state', 'alarm'] })).status, 201);
  const other = await call('POST', `/ground/${groundId}/integrations`, { name: 'on call', kind: 'webhook', url: named.url, events: ['rejection'] });
  assert.is(other.status, 201);
  namedId = other.json.id;
});

test.after(async () => {
  await service?.stop();
  await allAlarms?.close();
  await named?.close();
  tmp.remove();
});

test('a threshold with hysteresis: raised, updated, repeated, cleared, raised anew; a late state changes nothing', async () => {
  const rule = await call('POST', `/ground/${groundId}/rules`, { name: 'warm', asset: 'temperature', condition: { above: 8 }, clear: { below: 6 }, severity: 'major', actions: [{ integration: namedId }] });
  assert.is(rule.status, 201, JSON.stringify(rule.json));
  await send({ temperature: { value: 5, at: at(0) } });
  await send({ temperature: { value: 9, at: at(1) } });
  await waitFor(async () => (await alarms()).length === 1, 10_000, 'raised');
  let [alarm] = await alarms();
  assert.equal([alarm.status, alarm.count, alarm.value, alarm.lastValue, alarm.severity, alarm.asset, alarm.deviceId, alarm.ruleId, alarm.acknowledged, alarm.startedAt],
    ['active', 1, 9, 9, 'major', 'temperature', device.id, rule.json.id, false, Date.parse(at(1))]);
  await send({ temperature: { value: 10, at: at(2) } });
  await waitFor(async () => (await alarms())[0].lastValue === 10, 10_000, 'last value');
  await send({ temperature: { value: 7, at: at(3) } }); // between 6 and 8: no longer holding, not cleared
  await send({ temperature: { value: 9.5, at: at(4) } });
  await waitFor(async () => (await alarms())[0].count === 2, 10_000, 'repeated');
  await send({ temperature: { value: 20, at: at(3.5) } }); // late: measured before the last state judged
  await send({ temperature: { value: 5, at: at(5) } });
  await waitFor(async () => (await alarms())[0].status === 'cleared', 10_000, 'cleared');
  [alarm] = await alarms();
  assert.equal([alarm.count, alarm.lastValue, alarm.clearedAt], [2, 9.5, Date.parse(at(5))], 'the late 20 changed nothing');
  await send({ temperature: { value: 11, at: at(6) } });
  await waitFor(async () => (await alarms()).length === 2, 10_000, 'raised anew');
  const [newest, first] = await alarms();
  assert.equal([newest.status, newest.value, newest.count, first.id], ['active', 11, 1, alarm.id], 'newest first');
  assert.equal((await alarms('?status=active')).map((a) => a.id), [newest.id]);
  assert.equal((await alarms('?status=cleared')).map((a) => a.id), [alarm.id]);
  const page = await call('GET', `/ground/${groundId}/alarms?limit=1`);
  assert.equal(page.json.items.map((a: { id: string }) => a.id), [newest.id]);
  const rest = await call('GET', `/ground/${groundId}/alarms?limit=1&cursor=${page.json.next}`);
  assert.equal([rest.json.items.map((a: { id: string }) => a.id), rest.json.next], [[alarm.id], undefined], 'the next page, then no more');
  assert.is((await call('GET', `/ground/${groundId}/alarms?cursor=bm90LWEtY3Vyc29y`)).json.code, 'VALIDATION_FAILED');

  // Each change as an event, after the state that made it; the rule's action names the second integration.
  const expected = [['raised', 1, 9], ['repeated', 2, 9.5], ['cleared', 2, 9.5], ['raised', 1, 11]];
  await waitFor(() => eventsOf(named).length >= expected.length, 15_000, 'the named integration has every change');
  const changes = (events: any[]) => events.filter((e) => e.type === 'alarm' && e.ruleId === rule.json.id).map((e) => [e.change, e.count, e.lastValue]);
  assert.equal(changes(eventsOf(named)), expected, 'to the integration the rule names, though it takes only rejections');
  assert.ok(eventsOf(named).every((e) => e.type === 'alarm' && e.integrations === undefined && e.groundId === groundId));
  await waitFor(() => changes(eventsOf(allAlarms)).length >= expected.length, 15_000, 'the alarm integration has every change');
  const stream = eventsOf(allAlarms).filter((e) => e.deviceId === device.id && (e.type === 'alarm' || e.asset === 'temperature')).map((e) => (e.type === 'alarm' ? `${e.change}` : `${e.value}`));
  assert.equal(stream, ['5', '9', 'raised', '10', '7', '9.5', 'repeated', '20', '5', 'cleared', '11', 'raised'], 'each alarm change right after the state that made it, in the device\'s order');
  await call('DELETE', `/rules/${rule.json.id}`);
});

test('without clear: cleared when the condition ends; members acknowledge and clear; others find nothing', async () => {
  const rule = await call('POST', `/ground/${groundId}/rules`, { name: 'open', asset: 'door', condition: { equals: true }, severity: 'warning' });
  assert.is(rule.status, 201);
  const mine = () => alarms(`?deviceId=${device.id}`).then((list) => list.filter((a) => a.ruleId === rule.json.id));
  await send({ door: { value: true, at: at(10) } });
  await waitFor(async () => (await mine()).length === 1, 10_000, 'raised');
  await send({ door: { value: false, at: at(11) } });
  await waitFor(async () => (await mine())[0].status === 'cleared', 10_000, 'cleared when the door closed');
  await send({ door: { value: true, at: at(12) } });
  await waitFor(async () => (await mine()).length === 2, 10_000, 'raised anew');
  const [active] = await mine();
  const acknowledged = await call('POST', `/alarms/${active.id}/acknowledge`);
  assert.is(acknowledged.status, 200);
  assert.equal([acknowledged.json.acknowledged, acknowledged.json.status, typeof acknowledged.json.acknowledgedAt, acknowledged.json.acknowledgedBy !== undefined], [true, 'active', 'number', true]);
  assert.equal((await alarms('?acknowledged=true')).map((a) => a.id), [active.id]);
  const stranger = await service.registry.createUser({ name: 'x' });
  await service.registry.createGround({ name: 'theirs', userId: stranger.entity.id });
  for (const [method, path] of [['GET', `/alarms/${active.id}`], ['POST', `/alarms/${active.id}/acknowledge`], ['POST', `/alarms/${active.id}/clear`]] as const) {
    const res = await call(method, path, undefined, stranger.token);
    assert.is(res.status, 404, `${method} ${path}`);
  }
  assert.is((await call('GET', `/ground/${groundId}/alarms`, undefined, stranger.token)).status, 403);
  assert.is((await call('GET', `/alarms/${active.id}`, undefined, device.token)).status, 403, 'a device token');
  for (const forged of ['short', `${active.id}x`, "x'--aaaaaaaaaaaaaaaaaa"]) {
    const res = await call('POST', `/alarms/${encodeURIComponent(forged)}/acknowledge`);
    assert.equal([res.status, res.json.code], [400, 'BAD_REQUEST'], forged);
  }
  assert.is((await call('POST', `/alarms/${'A'.repeat(22)}/clear`)).status, 404, 'an unknown alarm');
  const cleared = await call('POST', `/alarms/${active.id}/clear`);
  assert.equal([cleared.status, cleared.json.status], [200, 'cleared']);
  // Still open: the next state raises a new alarm.
  await send({ door: { value: true, at: at(13) } });
  await waitFor(async () => (await mine()).length === 3, 10_000, 'a new alarm while the door stays open');
  const bad = await call('GET', `/ground/${groundId}/alarms?acknowledged=maybe`);
  assert.equal([bad.status, bad.json.code], [422, 'VALIDATION_FAILED']);
});

test('a command action: the raised alarm\'s command reaches the device over MQTT, once, issued by the rule', async () => {
  const made = await call('POST', `/ground/${groundId}/devices`, { name: 'cooler', assets: [
    { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
    { name: 'defrost', is: 'actuator', profile: { type: 'boolean' } },
  ] });
  assert.is(made.status, 201);
  const cooler: { id: string; token: string } = made.json;
  const rule = await call('POST', `/ground/${groundId}/rules`, { name: 'icing', asset: 'temperature', devices: [cooler.id], condition: { below: -25 }, severity: 'minor', actions: [{ command: { asset: 'defrost', value: true } }] });
  assert.is(rule.status, 201, JSON.stringify(rule.json));
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: cooler.token, password: cooler.token, reconnectPeriod: 0 });
  const received: Array<{ topic: string; body: any }> = [];
  client.on('message', (topic, payload) => received.push({ topic, body: JSON.parse(payload.toString()) }));
  try {
    await client.subscribeAsync(`device/${cooler.id}/asset/+/command`, { qos: 1 });
    const sendCooler = async (value: number, minute: number) => {
      const res = await call('PUT', `/device/${cooler.id}/state`, { temperature: { value, at: at(minute) } }, cooler.token);
      assert.is(res.status, 202);
    };
    await sendCooler(-30, 20);
    await waitFor(() => received.length === 1, 15_000, 'the command at the device');
    assert.is(received[0].topic, `device/${cooler.id}/asset/defrost/command`);
    assert.is(received[0].body.value, true);
    await sendCooler(-31, 21); // still holding: no new alarm, no new command
    await sendCooler(-20, 22);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.is(received.length, 1, 'one command per raised alarm');
    const history = await call('GET', `/device/${cooler.id}/commands`);
    assert.equal(history.json.items.map((c: { issuer: string; asset: string }) => [c.issuer, c.asset]), [[`rule:${rule.json.id}`, 'defrost']]);
  } finally {
    await client.endAsync();
  }
});

test.run();
