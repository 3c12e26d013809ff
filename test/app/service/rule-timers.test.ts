/**
 * The timers of rules on the embedded service (docs/rules.md "Timers"), on real time: a rule with
 * `for` raises its alarm when the condition has held that long, with no further state, and an
 * integration taking alarm events receives it; a silence rule covers a device created after it,
 * and a device that went silent before a restart raises its alarm on time after it; its next state
 * ends the silence.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { sendJson } from '../../support/sendJson.ts';
import { tempDir } from '../../support/tmp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhookReceiver.ts';

const tmp = tempDir('rule-timers');
let service: Service | undefined;
let base = '';
let userToken = '';
let groundId = '';
let receiver: WebhookReceiver;

async function call(method: string, path: string, body?: unknown, token = userToken): Promise<{ status: number; json: any }> {
  const res = await sendJson(base + path, method, token, body);
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
}

async function start(): Promise<void> {
  ({ service, base } = await startEmbeddedService({ dir: tmp.dir, integrationsAllowHosts: ['127.0.0.2'], integrations: { batchLingerMs: 50 } }));
}

async function newDevice(name: string): Promise<{ id: string; token: string }> {
  const made = await call('POST', `/ground/${groundId}/devices`, { name, assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }] });
  assert.is(made.status, 201, JSON.stringify(made.json));
  return made.json;
}

async function send(device: { id: string; token: string }, value: number): Promise<number> {
  const sentAt = Date.now();
  const res = await call('PUT', `/device/${device.id}/state`, { temperature: { value, at: new Date(sentAt).toISOString() } }, device.token);
  assert.is(res.status, 202, JSON.stringify(res.json));
  return sentAt;
}

async function alarmsOf(ruleId: string): Promise<any[]> {
  const res = await call('GET', `/ground/${groundId}/alarms`);
  assert.is(res.status, 200, JSON.stringify(res.json));
  return res.json.items.filter((a: any) => a.ruleId === ruleId);
}

/** What `find` answers once it answers something, polled until `timeoutMs`. */
async function poll<T>(find: () => T | undefined | Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test.before(async () => {
  receiver = await startWebhookReceiver((_req, res) => res.writeHead(204).end(), '127.0.0.2');
  await start();
  const user = await service!.registry.createUser({ name: 'u' });
  userToken = user.token;
  groundId = (await service!.registry.createGround({ name: 'g', userId: user.entity.id })).id;
  assert.is((await call('POST', `/ground/${groundId}/integrations`, { name: 'alarms', kind: 'webhook', url: receiver.url, events: ['alarm'] })).status, 201);
});

test.after(async () => {
  await service?.stop();
  await receiver?.close();
  tmp.remove();
});

test('"for": raised by its timer once the condition has held that long, with no state after; its event reaches the integration', async () => {
  const device = await newDevice('oven');
  const rule = await call('POST', `/ground/${groundId}/rules`, { name: 'hot for 2s', asset: 'temperature', condition: { above: 200 }, for: 'PT2S', severity: 'major', devices: [device.id] });
  assert.is(rule.status, 201, JSON.stringify(rule.json));
  const held = await send(device, 250);
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(await alarmsOf(rule.json.id), [], 'not before two seconds');
  const [alarm] = await poll(async () => {
    const found = await alarmsOf(rule.json.id);
    return found.length > 0 ? found : undefined;
  }, 15_000, 'the alarm');
  assert.equal([alarm.status, alarm.value, alarm.startedAt], ['active', 250, held + 2000], 'started when the condition had held two seconds, with the value that began it');
  const events = await poll(() => {
    const found = receiver.received.flatMap((r) => (JSON.parse(r.body) as { events: any[] }).events).filter((e) => e.type === 'alarm' && e.alarmId === alarm.id);
    return found.length > 0 ? found : undefined;
  }, 15_000, 'the alarm event');
  assert.equal(events.map((e) => [e.change, e.ruleId, e.deviceId]), [['raised', rule.json.id, device.id]]);
});

test('"silentFor": a device created after the rule, silent across a restart, raises its alarm on time after it; its next state ends it', async () => {
  const rule = await call('POST', `/ground/${groundId}/rules`, { name: 'quiet 4s', asset: 'temperature', condition: { silentFor: 'PT4S' }, severity: 'warning' });
  assert.is(rule.status, 201, JSON.stringify(rule.json));
  const device = await newDevice('freezer');
  const sent = await send(device, -18);
  // Stored, its sighting recorded, then the service stops before the silence is due.
  await poll(async () => ((await call('GET', `/device/${device.id}/asset/temperature/state`)).status === 200 ? true : undefined), 10_000, 'the state stored');
  await service!.stop();
  service = undefined;
  await start();
  const silent = await poll(async () => {
    const found = (await alarmsOf(rule.json.id)).filter((a) => a.deviceId === device.id);
    return found.length > 0 ? found : undefined;
  }, 20_000, 'the silence alarm');
  assert.is(silent.length, 1);
  const [alarm] = silent;
  assert.is(alarm.status, 'active');
  assert.is(alarm.value, null);
  assert.ok(alarm.startedAt >= sent + 4000 && alarm.startedAt < sent + 4000 + 2000, `started four seconds after the state was received (${alarm.startedAt - sent} ms after it was sent)`);
  await send(device, -17);
  const ended = await poll(async () => (await alarmsOf(rule.json.id)).find((a) => a.id === alarm.id && a.status === 'cleared'), 15_000, 'the silence to end');
  assert.ok(ended.clearedAt >= alarm.startedAt);
  await call('DELETE', `/rules/${rule.json.id}`);
});

test.run();
