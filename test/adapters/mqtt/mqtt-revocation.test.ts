/**
 * Registry changes reaching open MQTT connections of the embedded edge (engine/ports/registryChanges.ts,
 * in-process adapter): a revoked token, a deleted device and a user who left the ground are
 * disconnected within 1 s (MQTT 5: DISCONNECT 0x98 first), and the edge's cached lookups are dropped
 * so the token is refused at once. The changes are published as the registry-mutating code does:
 * after the registry call, with the token's hash.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { InProcessRegistryChanges } from '../../../adapters/registry-changes/InProcessRegistryChanges.ts';
import { hashToken } from '../../../engine/access/tokens.ts';
import { MqttStack, type SeededDevice } from '../../support/mqttStack.ts';

const changes = new InProcessRegistryChanges();
let s: MqttStack;

test.before(async () => {
  // A long cache: without the change, a revoked token would be served from it.
  s = await MqttStack.start({ edge: { changes, cacheTtlMs: 60_000 } });
});
test.after(async () => {
  await s.stop();
  await changes.close();
});

async function connect(token: string, version: 4 | 5, extra: IClientOptions = {}): Promise<{ client: MqttClient; reasons: number[]; closedAt: Promise<number> }> {
  const client = await mqtt.connectAsync(s.url, { username: token, password: token, reconnectPeriod: 0, protocolVersion: version, ...extra });
  const reasons: number[] = [];
  client.on('disconnect', (p) => reasons.push(p.reasonCode ?? -1));
  const closedAt = new Promise<number>((resolve) => client.once('close', () => resolve(performance.now())));
  return { client, reasons, closedAt };
}

const within = async (closedAt: Promise<number>, since: number, ms: number, what: string) => {
  const at = await Promise.race([closedAt, new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), ms + 500))]);
  assert.ok(at - since <= ms, `${what}: closed after ${(at - since).toFixed(0)} ms`);
};

const refusedCode = (token: string, version: 4 | 5) => mqtt.connectAsync(s.url, { username: token, reconnectPeriod: 0, protocolVersion: version, connectTimeout: 3000 })
  .then((c) => { c.end(true); return 0; }, (e: { code?: number }) => e.code);

test('a revoked token: its connections get DISCONNECT 0x98 (MQTT 5) or are closed (3.1.1) within 1 s, and it is refused at once; the device\'s other token stays', async () => {
  const d: SeededDevice = await s.device('revoked', [{ name: 't', profile: { type: 'number' } }]);
  const second = await s.registry.issueToken('device', d.deviceId);
  const five = await connect(d.token, 5);
  const three = await connect(d.token, 4);
  const kept = await connect(second, 5);
  await five.client.publishAsync(`device/${d.deviceId}/asset/t/state`, JSON.stringify({ value: 1 }), { qos: 1 });
  assert.ok(await s.registry.revokeToken(d.token));
  const since = performance.now();
  await changes.publish({ kind: 'token-revoked', tokenHash: hashToken(d.token) });
  await within(five.closedAt, since, 1000, 'MQTT 5');
  await within(three.closedAt, since, 1000, 'MQTT 3.1.1');
  assert.equal(five.reasons, [0x98]);
  assert.is(await refusedCode(d.token, 5), 0x86);
  assert.is(await refusedCode(d.token, 4), 4);
  assert.ok(kept.client.connected, 'another token of the device keeps its connection');
  const before = s.appended.length;
  await kept.client.publishAsync(`device/${d.deviceId}/asset/t/state`, JSON.stringify({ value: 2 }), { qos: 1 });
  assert.is(s.appended.length, before + 1);
  await kept.client.endAsync();
});

test('a deleted device: its connections close within 1 s, nothing more of it is stored, users following it get no more feed', async () => {
  const d = await s.device('deleted', [{ name: 't', profile: { type: 'number' } }]);
  const conn = await connect(d.token, 5, { clientId: 'deleted-dev', clean: false, properties: { sessionExpiryInterval: 600 } });
  await conn.client.subscribeAsync(`device/${d.deviceId}/asset/+/command`, { qos: 1 });
  const user = await connect(s.userToken, 4);
  await user.client.subscribeAsync(`device/${d.deviceId}/asset/+/feed`, { qos: 0 });
  assert.ok(await s.registry.deleteDevice(d.deviceId));
  const since = performance.now();
  await changes.publish({ kind: 'device-deleted', deviceId: d.deviceId });
  await within(conn.closedAt, since, 1000, 'device connection');
  assert.equal(conn.reasons, [0x98]);
  assert.is(await refusedCode(d.token, 4), 4, 'its token is refused at once');
  assert.is(await s.edge.commands.deliver({ commandId: 'x', deviceId: d.deviceId, asset: { id: d.assetIds.t, name: 't' }, payload: new Uint8Array(2) }), 'offline', 'its session ended');
  const feed: string[] = [];
  user.client.on('message', (t) => feed.push(t));
  s.edge.publishStates([{ deviceId: d.deviceId, asset: 't', ts: Date.now(), receivedAt: Date.now(), value: 1, uplinkId: 'u1' }]);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(feed, [], 'the user\'s subscription to the deleted device is gone');
  assert.ok(user.client.connected);
  await user.client.endAsync();
});

test('a user who leaves the ground is disconnected within 1 s; a member following the same feed is not', async () => {
  const d = await s.device('followed', [{ name: 't', profile: { type: 'number' } }]);
  const leaving = await s.registry.createUser({ name: 'leaving' });
  await s.registry.addMember(s.groundId, leaving.entity.id);
  const follower = await connect(leaving.token, 5);
  const staying = await connect(s.userToken, 5);
  for (const c of [follower, staying]) assert.is((await c.client.subscribeAsync(`device/${d.deviceId}/asset/+/feed`, { qos: 0 }))[0].qos, 0);
  assert.ok(await s.registry.removeMember(s.groundId, leaving.entity.id));
  const since = performance.now();
  await changes.publish({ kind: 'membership-changed', groundId: s.groundId, userId: leaving.entity.id });
  await within(follower.closedAt, since, 1000, 'former member');
  assert.equal(follower.reasons, [0x98]);
  // A membership gained (or a change about someone else) closes nothing.
  await changes.publish({ kind: 'membership-changed', groundId: s.groundId, userId: s.userId });
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(staying.client.connected);
  await staying.client.endAsync();
});

test('an asset removed from a device: a connection that published to it is refused there at once, also when an asset of the same name takes its place; its other assets still take states', async () => {
  const d = await s.device('shrunk', [{ name: 't', profile: { type: 'number' } }, { name: 'h', profile: { type: 'number' } }]);
  const conn = await connect(d.token, 5);
  const publish = (topic: string, value: number) => conn.client.publishAsync(topic, JSON.stringify({ value }), { qos: 1 })
    .then((ack) => (ack as { reasonCode?: number } | undefined)?.reasonCode ?? 0, (e: { code?: number }) => e.code);
  const before = s.appended.length;
  const byId = `asset/${d.assetIds.t}/state`;
  const byName = `device/${d.deviceId}/asset/t/state`;
  for (const topic of [byId, byName, `device/${d.deviceId}/asset/h/state`, byId]) assert.is(await publish(topic, 1), 0, `${topic} accepted`);
  assert.is(s.appended.length, before + 4);
  assert.ok(await s.registry.deleteAsset(d.deviceId, 't'));
  await changes.publish({ kind: 'device-changed', deviceId: d.deviceId });
  assert.is(await publish(byName, 2), 0x90, 'the removed asset, by name');
  assert.is(await publish(byId, 2), 0x87, 'the removed asset, by id');
  // A new asset of the same name has another id: the old id's topic stays refused.
  await s.registry.upsertAsset(d.deviceId, 't', { is: 'sensor', profile: { type: 'number' } });
  await changes.publish({ kind: 'device-changed', deviceId: d.deviceId });
  assert.is(await publish(byId, 3), 0x87, 'the old asset id');
  assert.is(await publish(byName, 3), 0, 'the new asset, by name');
  assert.is(await publish(`device/${d.deviceId}/asset/h/state`, 3), 0, 'the asset it kept');
  assert.is(s.appended.length, before + 6, 'nothing appended for the removed asset');
  await conn.client.endAsync();
});

test('a well-formed non-ASCII topic (read as UTF-8, not as ASCII) is an unknown asset (0x90), the connection stays, nothing is appended; the ASCII topic after it takes its state', async () => {
  const d = await s.device('unicode', [{ name: 'temperature', profile: { type: 'number' } }]);
  const conn = await connect(d.token, 5);
  const before = s.appended.length;
  const publish = (asset: string) => conn.client.publishAsync(`device/${d.deviceId}/asset/${asset}/state`, JSON.stringify({ value: 1 }), { qos: 1 })
    .then((ack) => (ack as { reasonCode?: number } | undefined)?.reasonCode ?? 0, (e: { code?: number }) => e.code);
  assert.is(await publish('température'), 0x90);
  assert.is(await publish('temperature'), 0);
  assert.ok(conn.client.connected);
  assert.equal(s.appended.slice(before).map((u) => u.asset), ['temperature']);
  await conn.client.endAsync();
});

test.run();
