/**
 * Integrations deliver on the embedded service (docs/integrations.md), to real receivers on
 * loopback: stored states (and the engine's refusals) of the ground's devices, batched, signed
 * (checked by the specification's verifier and by `standardwebhooks`), in order per device; a
 * receiver failing K times, asking to wait (429 + Retry-After), hanging, or gone (410); filters;
 * and the figures `GET /integrations/{id}` shows.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { sendJson } from '../../support/sendJson.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { startWebhookReceiver, type Answer, type Received, type WebhookReceiver } from '../../support/webhookReceiver.ts';
import { specVerify, type SignedHeaders } from '../../support/webhookVerifier.ts';

const tmp = tempDir('integrations-delivery');
const HOST = '127.0.0.2';
let service: Service;
let base = '';
let userToken = '';
let groundId = '';
const receivers: WebhookReceiver[] = [];

interface Device { id: string; token: string }
interface DeliveredEvent { type: string; id: string; groundId: string; deviceId: string; asset?: string; value?: unknown; at?: string; receivedAt?: string; code?: string }

async function receiver(answer: Answer): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(answer, HOST);
  receivers.push(started);
  return started;
}

const ok: Answer = (_req, res) => res.writeHead(204).end();

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await sendJson(base + path, method, userToken, body);
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
}

async function integration(url: string, extra: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  const created = await call('POST', `/ground/${groundId}/integrations`, { name: 'app', kind: 'webhook', url, events: ['state', 'rejection'], ...extra });
  assert.is(created.status, 201, JSON.stringify(created.json));
  return created.json;
}

let devices = 0;
async function device(ground = groundId, token = userToken): Promise<Device> {
  const res = await sendJson(`${base}/ground/${ground}/devices`, 'POST', token, { name: `meter-${devices++}`, assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }, { name: 'h', is: 'sensor', profile: { type: 'number' } }] });
  assert.is(res.status, 201);
  return await res.json() as Device;
}

async function send(d: Device, state: Record<string, unknown>): Promise<void> {
  const res = await sendJson(`${base}/device/${d.id}/state`, 'PUT', d.token, state);
  assert.is(res.status, 202, await res.text());
}

const eventsOf = (received: readonly Received[]): DeliveredEvent[] => received.flatMap((r) => (JSON.parse(r.body) as { events: DeliveredEvent[] }).events);

test.before(async () => {
  ({ service, base } = await startEmbeddedService({ dir: tmp.dir, integrationsAllowHosts: [HOST], integrations: { batchLingerMs: 100 } }));
});

// Each test in a ground of its own: a new integration takes what its ground stored up to 5 s before it.
test.before.each(async () => {
  const user = await service.registry.createUser({ name: 'u' });
  userToken = user.token;
  groundId = (await service.registry.createGround({ name: 'g', userId: user.entity.id })).id;
});

test.after(async () => {
  await service?.stop();
  for (const r of receivers) await r.close();
  tmp.remove();
});

test('the ground\'s stored states reach the receiver signed, in order per device, with their fields; another ground\'s never', async () => {
  const r = await receiver(ok);
  const { secret } = await integration(r.url);
  const [a, b] = [await device(), await device()];
  const stranger = await service.registry.createUser({ name: 'v' });
  const otherGround = (await service.registry.createGround({ name: 'g2', userId: stranger.entity.id })).id;
  const foreign = await device(otherGround, stranger.token);
  for (let i = 0; i < 20; i++) {
    await send(a, { t: { value: i } });
    await send(b, { t: { value: 100 + i }, h: { value: i } });
    await send(foreign, { t: { value: -1 } });
  }
  await waitFor(() => eventsOf(r.received).length >= 60, 15_000, '60 states delivered');
  const events = eventsOf(r.received);
  assert.is(events.length, 60, 'each state once (no retry happened)');
  assert.ok(events.every((e) => e.type === 'state' && e.groundId === groundId && e.deviceId !== foreign.id));
  assert.equal(events.filter((e) => e.deviceId === a.id).map((e) => e.value), [...Array(20).keys()], 'in the order the device sent them');
  assert.equal(events.filter((e) => e.deviceId === b.id && e.asset === 'h').map((e) => e.value), [...Array(20).keys()]);
  const first = events[0];
  assert.ok(typeof first.id === 'string' && !Number.isNaN(Date.parse(first.at!)) && !Number.isNaN(Date.parse(first.receivedAt!)), JSON.stringify(first));
  assert.is(new Set(events.map((e) => e.id)).size, 60, 'event ids are unique');
  assert.ok(r.received.length < 60, 'batched');
  for (const request of r.received) {
    assert.ok(specVerify(secret, request.body, request.headers as unknown as SignedHeaders), 'the specification\'s verifier accepts it');
    new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
    assert.is(request.headers['content-type'], 'application/json');
  }
  const id = (await call('GET', `/ground/${groundId}/integrations`)).json.items[0].id as string;
  const view = await call('GET', `/integrations/${id}`);
  assert.is(view.json.status, 'active');
  assert.is(view.json.delivered, 60);
  assert.is(view.json.pending.events, 0);
  const metrics = await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text();
  assert.match(metrics, /fleetstream_integration_events_delivered_total\{kind="webhook"\} (6\d|[7-9]\d|\d{3,})/);
  assert.not.match(metrics, new RegExp(id), 'no label per integration id');

  // Deleted: its cursor goes too (on the local log it would hold old segments back).
  const group = `fleetstream-integration-${id}`;
  await waitFor(async () => (await service.log.committed(group, 'events', 0)) + (await service.log.committed(group, 'events', 1)) > 0, 5000, 'a cursor');
  assert.is((await call('DELETE', `/integrations/${id}`)).status, 204);
  await waitFor(async () => (await service.log.committed(group, 'events', 0)) + (await service.log.committed(group, 'events', 1)) === 0, 5000, 'the cursor deleted');
});

test('a rotated secret signs the deliveries that follow; with graceSeconds=0 the previous one signs none of them', async () => {
  const r = await receiver(ok);
  const created = await integration(r.url);
  const d = await device();
  await send(d, { t: { value: 1 } });
  await waitFor(() => eventsOf(r.received).length >= 1, 15_000, 'the first state delivered');
  const rotated = await call('POST', `/integrations/${created.id}/rotate-secret?graceSeconds=0`);
  assert.is(rotated.status, 200);
  const before = r.received.length;
  await send(d, { t: { value: 2 } });
  await waitFor(() => eventsOf(r.received).some((e) => e.value === 2), 15_000, 'the state after the rotation delivered');
  for (const request of r.received.slice(before)) {
    assert.ok(specVerify(rotated.json.secret, request.body, request.headers as unknown as SignedHeaders), 'the new secret verifies');
    assert.not.ok(specVerify(created.secret, request.body, request.headers as unknown as SignedHeaders), 'the previous secret no longer signs');
  }
});

test('a receiver failing twice: retried with the same webhook-id about 1 s then 2 s later, then delivered; GET shows failing, then active with the figures', async () => {
  const r = await receiver((_req, res, index) => (index < 2 ? res.writeHead(500).end('not now') : res.writeHead(200).end()));
  const { id } = await integration(r.url);
  const d = await device();
  await send(d, { t: { value: 1 } });
  await waitFor(() => r.received.length >= 1, 10_000, 'a first attempt');
  await waitFor(async () => (await call('GET', `/integrations/${id}`)).json.status === 'failing', 5000, 'status failing');
  const failing = (await call('GET', `/integrations/${id}`)).json;
  assert.equal(failing.lastError.status, 500);
  assert.is(failing.lastError.message, 'not now');
  const batch = eventsOf(r.received.slice(0, 1)).length;
  assert.is(batch, 1);
  assert.is(failing.pending.events, 1);
  assert.ok(failing.pending.oldestAgeMs >= 0);
  await waitFor(() => r.received.length >= 3, 10_000, 'two retries');
  assert.is(new Set(r.received.slice(0, 3).map((x) => x.headers['webhook-id'])).size, 1, 'one webhook-id for every attempt');
  assert.equal(r.received[2].body, r.received[0].body, 'the same events every time');
  assert.ok(eventsOf(r.received.slice(0, 1)).some((e) => e.deviceId === d.id && e.value === 1));
  await waitFor(async () => (await call('GET', `/integrations/${id}`)).json.delivered === batch, 5000, 'delivered');
  const view = (await call('GET', `/integrations/${id}`)).json;
  assert.equal([view.status, view.failedAttempts, view.pending.events], ['active', 2, 0]);
  assert.ok(view.lastSuccessAt >= view.lastError.at);
});

test('429 with Retry-After: 3 is waited out; a receiver that never answers holds back no other integration', async () => {
  const times: number[] = [];
  const slow = await receiver((_req, res, index) => {
    times.push(Date.now());
    if (index === 0) res.writeHead(429, { 'retry-after': '3' }).end();
    else res.writeHead(200).end();
  });
  const hanging = await receiver(() => undefined);
  const healthy = await receiver(ok);
  await integration(slow.url);
  await integration(hanging.url);
  await integration(healthy.url);
  const d = await device();
  for (let i = 0; i < 5; i++) await send(d, { t: { value: i } });
  await waitFor(() => eventsOf(healthy.received).filter((e) => e.deviceId === d.id).length === 5, 5000, 'the healthy receiver has every state while another hangs');
  assert.ok(hanging.received.length >= 1, 'the hanging receiver was tried');
  await waitFor(() => times.length >= 2, 10_000, 'the retry after Retry-After');
  assert.ok(times[1] - times[0] >= 2900, `Retry-After honoured (${times[1] - times[0]} ms)`);
});

test('410 disables the integration: nothing more is sent, GET says why', async () => {
  const r = await receiver((_req, res) => res.writeHead(410).end('gone'));
  const { id } = await integration(r.url);
  const d = await device();
  await send(d, { t: { value: 1 } });
  await waitFor(async () => (await call('GET', `/integrations/${id}`)).json.status === 'disabled', 10_000, 'disabled');
  const view = (await call('GET', `/integrations/${id}`)).json;
  assert.equal([view.disabledReason, view.lastError.status], ['gone', 410]);
  await send(d, { t: { value: 2 } });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.is(r.received.length, 1);
});

test('filters: only the listed devices and assets; refusals (the engine\'s and the edge\'s) to an integration of refusals', async () => {
  const r = await receiver(ok);
  const refusals = await receiver(ok);
  const [a, b] = [await device(), await device()];
  await integration(r.url, { devices: [a.id], assets: ['h'] });
  await integration(refusals.url, { events: ['rejection'] });
  await send(b, { h: { value: 1 } });
  await send(a, { t: { value: 1 }, h: { value: 2 } });
  await send(a, { h: { value: 3 }, t: { value: 'not a number' } });
  const refusedWhole = await sendJson(`${base}/device/${b.id}/state`, 'PUT', b.token, { t: { value: 'x' } });
  assert.is(refusedWhole.status, 422, 'refused whole at the edge');
  await waitFor(() => eventsOf(r.received).length >= 2 && eventsOf(refusals.received).length >= 2, 10_000, 'two states and two refusals');
  await new Promise((resolve) => setTimeout(resolve, 500));
  const events = eventsOf(r.received);
  assert.equal(events.map((e) => [e.type, e.deviceId, e.asset, e.value]), [['state', a.id, 'h', 2], ['state', a.id, 'h', 3]], 'the refusal concerns asset t, which the filter leaves out');
  const got = eventsOf(refusals.received).map((e) => [e.type, e.deviceId, e.asset, e.groundId, e.code]).sort();
  assert.equal(got, [['rejection', a.id, 't', groundId, 'PROFILE_VIOLATION'], ['rejection', b.id, 't', groundId, 'PROFILE_VIOLATION']].sort(), 'the engine\'s refusal of an item, and the edge\'s of a whole uplink');
});

test.run();
