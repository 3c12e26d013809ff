/**
 * Integrations on the embedded service with its edge in two worker processes (`--edge-workers 2`,
 * app/embeddedWorkers.ts): the primary keeps PGlite and serves the integrations port to the workers
 * with the rest of the registry (app/workerPorts.ts). An integration made through one worker is
 * read, tested, rotated and deleted through either, its changes are heard by the primary, and the
 * test event reaches a real receiver signed with the secret the creation answered.
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

test.run();
