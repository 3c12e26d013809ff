/**
 * Integrations on the embedded service with its edge in two worker processes (`--edge-workers 2`,
 * app/embeddedWorkers.ts): the primary keeps PGlite and serves the integrations port to the workers
 * with the rest of the registry (app/workerPorts.ts). An integration made through one worker is
 * read, tested, rotated and deleted through either, its changes are heard by the primary, and the
 * test event reaches a real receiver signed with the secret the creation answered. The uplinks a
 * worker refuses whole (422) reach an integration as the states the engine stores do, from the
 * first uplink after its creation: each worker writes topic `events` while one is active.
 */
process.env.EDGE_WORKERS_TEST = '2';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import type { Service } from '../../../app/createService.ts';
import type { RegistryChange } from '../../../engine/ports/registryChanges.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { tempDir } from '../../support/tmp.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhookReceiver.ts';

const tmp = tempDir('integrations-workers');
let service: Service;
let base = '';
let receiver: WebhookReceiver;
let userToken = '';
let groundId = '';
const heard: RegistryChange[] = [];

/** A request on a connection of its own, so that requests spread over both workers. */
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${userToken}`, connection: 'close', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
}

test.before(async () => {
  receiver = await startWebhookReceiver((_req, res) => res.writeHead(202).end('taken'), '127.0.0.2');
  ({ service, base } = await startEmbeddedService({ dir: tmp.dir, integrationsAllowHosts: ['127.0.0.2'] }));
  service.changes.subscribe((change) => heard.push(change));
  const user = await service.registry.createUser({ name: 'u' });
  userToken = user.token;
  groundId = (await service.registry.createGround({ name: 'g', userId: user.entity.id })).id;
});

test.after(async () => {
  await service?.stop();
  await receiver?.close();
  tmp.remove();
});

test('made through a worker, served by the primary: read, tested, rotated and deleted through either worker', async () => {
  const created = await call('POST', `/ground/${groundId}/integrations`, { name: 'app', kind: 'webhook', url: receiver.url, events: ['state'] });
  assert.is(created.status, 201, JSON.stringify(created.json));
  const id = created.json.id as string;
  assert.ok(heard.some((c) => c.kind === 'integration-changed' && c.integrationId === id), 'the primary heard the creation');
  assert.equal((await service.registry.getIntegration(id))?.url, receiver.url);

  for (let i = 0; i < 6; i++) {
    const read = await call('GET', `/integrations/${id}`);
    assert.is(read.status, 200);
    assert.is(read.json.secret, undefined);
  }
  const tested = await call('POST', `/integrations/${id}/test`);
  assert.equal([tested.json.outcome, tested.json.status, tested.json.body], ['delivered', 202, 'taken']);
  const got = receiver.received[receiver.received.length - 1];
  new Webhook(created.json.secret).verify(got.body, got.headers as Record<string, string>);

  const rotated = await call('POST', `/integrations/${id}/rotate-secret?graceSeconds=0`);
  assert.is(rotated.status, 200);
  await call('POST', `/integrations/${id}/test`);
  const after = receiver.received[receiver.received.length - 1];
  new Webhook(rotated.json.secret).verify(after.body, after.headers as Record<string, string>);
  assert.throws(() => new Webhook(created.json.secret).verify(after.body, after.headers as Record<string, string>));

  const refused = await call('POST', `/ground/${groundId}/integrations`, { name: 'x', kind: 'webhook', url: 'https://127.0.0.1/', events: ['state'] });
  assert.is(refused.json.code, 'DESTINATION_REFUSED', 'the worker applies the operator\'s allow list');

  assert.is((await call('DELETE', `/integrations/${id}`)).status, 204);
  assert.ok(heard.some((c) => c.kind === 'integration-deleted' && c.integrationId === id), 'the primary heard the deletion');
  for (let i = 0; i < 4; i++) assert.is((await call('GET', `/integrations/${id}`)).status, 404);
});

test('uplinks refused whole at either worker, and stored states, reach an integration created a moment before', async () => {
  const collector = await startWebhookReceiver((_req, res) => res.writeHead(204).end(), '127.0.0.2');
  try {
    const devices: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < 4; i++) {
      const made = await call('POST', `/ground/${groundId}/devices`, { name: `meter-${i}`, assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
      assert.is(made.status, 201);
      devices.push(made.json);
    }
    const created = await call('POST', `/ground/${groundId}/integrations`, { name: 'all', kind: 'webhook', url: collector.url, events: ['state', 'rejection'] });
    assert.is(created.status, 201);
    const uplink = (d: { id: string; token: string }, value: unknown) => fetch(`${base}/device/${d.id}/state`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${d.token}`, connection: 'close', 'content-type': 'application/json' },
      body: JSON.stringify({ t: { value } }),
    });
    for (const [i, d] of devices.entries()) {
      assert.is((await uplink(d, 'not a number')).status, 422);
      assert.is((await uplink(d, i)).status, 202);
    }
    const events = () => collector.received.flatMap((r) => (JSON.parse(r.body) as { events: Array<{ type: string; deviceId: string; value?: unknown; code?: string }> }).events);
    const deadline = Date.now() + 20_000;
    while (events().length < 8 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const got = events().map((e) => [e.deviceId, e.type, e.type === 'state' ? e.value : e.code]);
    assert.equal(got.sort(), devices.flatMap((d, i) => [[d.id, 'rejection', 'PROFILE_VIOLATION'], [d.id, 'state', i]]).sort(), 'every refusal and every state, once');
    for (const d of devices) {
      assert.equal(events().filter((e) => e.deviceId === d.id).map((e) => e.type), ['rejection', 'state'], 'each device\'s in its order');
    }
  } finally {
    await collector.close();
  }
});

test.run();
