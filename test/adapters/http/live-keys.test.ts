/**
 * A ground's API keys on the live channels of the composed embedded service: a key follows the SSE
 * streams and WebSocket subscriptions and the MQTT feeds of its ground (none of another ground, no
 * command topic), and loses what it opened within 1 s when it is revoked over HTTP or when it
 * expires (SSE ended, WebSocket closed with 1008, MQTT disconnected), while another key's stream stays.
 */
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import type { Service } from '../../../app/createService.ts';
import { suite } from '../../support/suite.ts';
import { auditUntil, hasEntry, type AuditReader } from '../../support/auditLog.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { openSse, openWs, type WsClient } from '../../support/liveClients.ts';
import { tempDir } from '../../support/tmp.ts';

const test = suite('ground keys on live streams');
const tmp = tempDir('live-keys');
let service: Service;
let base = '';
let ownerId = '';
let ownerToken = '';
let groundId = '';
let deviceId = '';
let deviceToken = '';
let n = 0;

test.before(async () => {
  ({ service, base } = await startEmbeddedService(tmp.dir));
  const r = service.registry;
  const owner = await r.createUser({ name: 'owner' });
  ownerId = owner.entity.id;
  ownerToken = owner.token;
  groundId = (await r.createGround({ name: 'team', userId: ownerId })).id;
  const created = await r.createDevice({ groundId, name: 'thermo', assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }] });
  deviceId = created.device.id;
  deviceToken = created.token;
});

test.after(async () => {
  await service.stop();
  tmp.remove();
});

async function key(role: 'viewer' | 'editor', expiresAt?: number, ground = groundId): Promise<{ id: string; token: string }> {
  const created = await service.registry.createKey(ground, { name: `key-${++n}`, role, ...(expiresAt !== undefined && { expiresAt }) }, ownerId);
  return { id: created.key.id, token: created.token };
}

async function subscribedWs(token: string): Promise<WsClient> {
  const ws = await openWs(`${base.replace('http', 'ws')}/live`);
  ws.send({ type: 'auth', token });
  await ws.next((f) => f.type === 'ready');
  for (const [kind, id] of [['device', deviceId], ['ground', groundId]]) {
    const from = ws.frames.length;
    ws.send({ type: 'subscribe', [kind]: id });
    const answer = await ws.next((f) => f.type === 'subscribed' || f.type === 'error', 10_000, from);
    assert.is(answer.type, 'subscribed', JSON.stringify(answer));
  }
  return ws;
}

/** Whether `done` settles at most `ms` after `since` (performance.now(); may lie ahead: an expiry). */
const within = async (done: Promise<unknown>, since: number, ms: number, what: string) => {
  const wait = Math.max(0, since + ms + 500 - performance.now());
  const at = await Promise.race([done.then(() => performance.now()), new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), wait))]);
  assert.ok(at - since <= ms, `${what}: ended after ${(at - since).toFixed(0)} ms`);
};

/** The granted QoS of one subscription, or the reason string of its refusal (MQTT.js rejects a refused SUBACK). */
const suback = (client: mqtt.MqttClient, filter: string) => client.subscribeAsync(filter, { qos: 0 })
  .then((granted) => granted[0].qos as number | string, (error: Error) => error.message.replace('Subscribe error: ', ''));

/** A real MQTT 5 client of the service's edge with `token`. */
const mqttClient = (token: string) => mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: token, password: token, reconnectPeriod: 0, protocolVersion: 5, connectTimeout: 3000, clientId: `key-${++n}` });


/** The ground's audit log, read as its owner over HTTP. */
const auditReader: AuditReader = {
  async get(path, token) {
    const res = await fetch(base + path, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, json: await res.json() };
  },
};

test('a key follows its ground\'s streams and MQTT feeds, not another ground\'s, and no command topic', async () => {
  for (const role of ['viewer', 'editor'] as const) {
    const { token } = await key(role);
    for (const path of [`/device/${deviceId}/live`, `/ground/${groundId}/live`]) {
      const sse = await openSse(base + path, token);
      sse.close();
      assert.is(sse.status, 200, `${role} key on ${path}`);
    }
    (await subscribedWs(token)).ws.close();
    const client = await mqttClient(token);
    assert.equal(await suback(client, `device/${deviceId}/asset/temperature/command`), 'Not authorized', `${role} key: no command topic`);
    assert.equal(await suback(client, `device/${deviceId}/asset/temperature/feed`), 0, `${role} key: the feed granted`);
    const heard = new Promise<unknown>((resolve) => client.once('message', (_topic, payload) => resolve(JSON.parse(payload.toString()))));
    const sent = await fetch(`${base}/device/${deviceId}/asset/temperature/state`, { method: 'PUT', headers: { authorization: `Bearer ${deviceToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ value: 20 + n }) });
    assert.is(sent.status, 202);
    assert.is(((await heard) as { value: number }).value, 20 + n, `${role} key hears the feed`);
    await client.endAsync();
  }
  const other = await service.registry.createGround({ name: 'other', userId: ownerId });
  const stranger = await key('editor', undefined, other.id);
  const sse = await openSse(`${base}/ground/${groundId}/live`, stranger.token);
  assert.equal([sse.status, sse.problem?.code], [403, 'FORBIDDEN']);
  const ws = await openWs(`${base.replace('http', 'ws')}/live`);
  ws.send({ type: 'auth', token: stranger.token });
  await ws.next((f) => f.type === 'ready');
  ws.send({ type: 'subscribe', device: deviceId });
  assert.equal((await ws.next((f) => f.type === 'error')).code, 'FORBIDDEN');
  ws.ws.close();
  const client = await mqttClient(stranger.token);
  assert.equal(await suback(client, `device/${deviceId}/asset/temperature/feed`), 'Not authorized', 'another ground\'s key');
  await client.endAsync();
});

test('a key revoked over HTTP loses its SSE streams and its WebSocket within 1 s; another key keeps its stream', async () => {
  const leaving = await key('viewer');
  const staying = await key('viewer');
  const onDevice = await openSse(`${base}/device/${deviceId}/live`, leaving.token);
  const onGround = await openSse(`${base}/ground/${groundId}/live`, leaving.token);
  assert.equal([onDevice.status, onGround.status], [200, 200]);
  const ws = await subscribedWs(leaving.token);
  const client = await mqttClient(leaving.token);
  const mqttClosed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  const kept = await openSse(`${base}/ground/${groundId}/live`, staying.token);
  let keptEnded = false;
  void kept.ended.then(() => { keptEnded = true; });

  const since = performance.now();
  const revoked = await fetch(`${base}/ground/${groundId}/keys/${leaving.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ownerToken}` } });
  assert.is(revoked.status, 204);
  await within(onDevice.ended, since, 1000, 'device SSE');
  await within(onGround.ended, since, 1000, 'ground SSE');
  await within(ws.closed, since, 1000, 'WebSocket');
  await within(mqttClosed, since, 1000, 'MQTT connection');
  assert.is((await ws.closed).code, 1008);
  const again = await openSse(`${base}/ground/${groundId}/live`, leaving.token);
  assert.equal([again.status, again.problem?.code], [401, 'UNAUTHORIZED']);
  await new Promise((r) => setTimeout(r, 100));
  assert.not.ok(keptEnded, 'another key\'s stream stays');
  kept.close();
  const audit = await auditUntil(auditReader, groundId, ownerToken, (items) => hasEntry(items, { operation: 'deleteKey', targetId: leaving.id }));
  assert.ok(hasEntry(audit, { operation: 'deleteKey', targetId: leaving.id, actor: { kind: 'user' }, result: { status: 204 } }));
  assert.not.ok(hasEntry(audit, { operation: 'deleteKey', targetId: staying.id }), 'the other key stays, unrevoked');
});

test('a WebSocket that followed nothing when its key was revoked is closed by its next subscribe', async () => {
  const leaving = await key('viewer');
  const ws = await openWs(`${base.replace('http', 'ws')}/live`);
  ws.send({ type: 'auth', token: leaving.token });
  await ws.next((f) => f.type === 'ready');
  const revoked = await fetch(`${base}/ground/${groundId}/keys/${leaving.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ownerToken}` } });
  assert.is(revoked.status, 204);
  const since = performance.now();
  ws.send({ type: 'subscribe', ground: groundId });
  await within(ws.closed, since, 2000, 'WebSocket');
  assert.is((await ws.closed).code, 1008);
  assert.not.ok(ws.frames.some((f) => f.type === 'subscribed'), 'nothing subscribed');
});

test('a key that expires loses its SSE streams and its WebSocket within 1 s of its expiry, and is 401 after', async () => {
  const expiresAt = Date.now() + 1_500;
  const expiring = await key('editor', expiresAt);
  const lasting = await key('viewer', Date.now() + 3_600_000);
  const onDevice = await openSse(`${base}/device/${deviceId}/live`, expiring.token);
  const onGround = await openSse(`${base}/ground/${groundId}/live`, expiring.token);
  assert.equal([onDevice.status, onGround.status], [200, 200]);
  const ws = await subscribedWs(expiring.token);
  const client = await mqttClient(expiring.token);
  const mqttClosed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  const kept = await openSse(`${base}/ground/${groundId}/live`, lasting.token);
  let keptEnded = false;
  void kept.ended.then(() => { keptEnded = true; });

  const since = performance.now() + (expiresAt - Date.now());
  await within(onDevice.ended, since, 1000, 'device SSE');
  await within(onGround.ended, since, 1000, 'ground SSE');
  await within(ws.closed, since, 1000, 'WebSocket');
  await within(mqttClosed, since, 1000, 'MQTT connection');
  assert.is((await ws.closed).code, 1008);
  assert.ok(Date.now() >= expiresAt, 'not before its expiry');
  const again = await fetch(`${base}/device/${deviceId}`, { headers: { authorization: `Bearer ${expiring.token}` } });
  assert.equal([again.status, ((await again.json()) as { code: string }).code, again.headers.get('content-type')], [401, 'UNAUTHORIZED', 'application/problem+json']);
  assert.not.ok(keptEnded, 'a key not expired keeps its stream');
  kept.close();
});

test.run();
