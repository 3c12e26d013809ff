/**
 * Roles on the live channels of the composed embedded service: Server-Sent Events of a device and
 * of a ground, WebSocket subscriptions, and MQTT feed subscriptions with a real MQTT client, each
 * for the owner, an editor and a viewer of the ground, a user of another ground, the device's token,
 * a partner token and no (or a wrong) token. Then what a change of membership does to open streams:
 * a member removed over HTTP loses its SSE stream, its WebSocket and its MQTT connection within 1 s;
 * a member demoted to viewer keeps its MQTT feed (a viewer follows feeds) and is refused a change
 * at its next request.
 */
import * as assert from 'uvu/assert';
import mqtt, { type MqttClient } from 'mqtt';
import type { Service } from '../../../app/createService.ts';
import { auditUntil, hasEntry, type AuditReader } from '../../support/auditLog.ts';
import { suite } from '../../support/suite.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { openSse, openWs } from '../../support/liveClients.ts';
import { tempDir } from '../../support/tmp.ts';

type Cred = 'owner' | 'editor' | 'viewer' | 'outsider' | 'device' | 'partner' | 'none';
const CREDS: Cred[] = ['none', 'partner', 'device', 'outsider', 'viewer', 'editor', 'owner'];
const MEMBERS: readonly Cred[] = ['owner', 'editor', 'viewer'];

const test = suite('roles on live streams and MQTT feeds');
const tmp = tempDir('live-roles');
let service: Service;
let base = '';
let mqttUrl = '';
let groundId = '';
let deviceId = '';
const tokens = {} as Record<Cred, string>;
const ids = {} as Record<'owner' | 'editor' | 'viewer', string>;

const ASSETS = [{ name: 'temperature', is: 'sensor' as const, profile: { type: 'number' } }];

test.before(async () => {
  ({ service, base } = await startEmbeddedService(tmp.dir));
  mqttUrl = `mqtt://127.0.0.1:${service.mqttPort}`;
  const r = service.registry;
  const owner = await r.createUser({ name: 'owner' });
  const ground = await r.createGround({ name: 'team', userId: owner.entity.id });
  groundId = ground.id;
  tokens.owner = owner.token;
  ids.owner = owner.entity.id;
  for (const role of ['editor', 'viewer'] as const) {
    const user = await r.createUser({ name: role });
    await r.setMemberRole(ground.id, user.entity.id, role);
    tokens[role] = user.token;
    ids[role] = user.entity.id;
  }
  const outsider = await r.createUser({ name: 'outsider' });
  await r.createGround({ name: 'elsewhere', userId: outsider.entity.id });
  tokens.outsider = outsider.token;
  tokens.partner = (await r.createPartner({ name: 'acme' })).token;
  const device = await r.createDevice({ groundId, name: 'thermo', assets: ASSETS });
  deviceId = device.device.id;
  tokens.device = device.token;
  tokens.none = 'fsu_not0a0real0token0000000000000000000000000000';
});

test.after(async () => {
  await service.stop();
  tmp.remove();
});

/** A member of the ground, added for one test, with its token. */
async function member(role: 'editor' | 'viewer'): Promise<{ id: string; token: string }> {
  const user = await service.registry.createUser({ name: `${role}-${Math.random().toString(36).slice(2, 8)}` });
  await service.registry.setMemberRole(groundId, user.entity.id, role);
  return { id: user.entity.id, token: user.token };
}

async function mqttConnect(token: string): Promise<{ client: MqttClient; reasons: number[]; closedAt: Promise<number> } | { refused: number }> {
  try {
    const client = await mqtt.connectAsync(mqttUrl, { username: token, password: token, reconnectPeriod: 0, protocolVersion: 5, connectTimeout: 3000 });
    const reasons: number[] = [];
    client.on('disconnect', (p) => reasons.push(p.reasonCode ?? -1));
    const closedAt = new Promise<number>((resolve) => client.once('close', () => resolve(performance.now())));
    return { client, reasons, closedAt };
  } catch (error) {
    return { refused: Number((error as { code?: number }).code ?? -1) };
  }
}

const within = async (done: Promise<unknown>, since: number, ms: number, what: string) => {
  const at = await Promise.race([done.then(() => performance.now()), new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), ms + 500))]);
  assert.ok(at - since <= ms, `${what}: ended after ${(at - since).toFixed(0)} ms`);
};


/** The ground's audit log, read as its owner over HTTP. */
const auditReader: AuditReader = {
  async get(path, token) {
    const res = await fetch(base + path, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, json: await res.json() };
  },
};

test('SSE of a device and of a ground: who may follow them, and each refusal\'s status and code', async () => {
  for (const cred of CREDS) {
    const token = cred === 'none' ? undefined : tokens[cred];
    const onDevice = await openSse(`${base}/device/${deviceId}/live`, token);
    const onGround = await openSse(`${base}/ground/${groundId}/live`, token);
    onDevice.close();
    onGround.close();
    const deviceOk = MEMBERS.includes(cred) || cred === 'device';
    const groundOk = MEMBERS.includes(cred);
    const refused = cred === 'none' ? [401, 'UNAUTHORIZED'] : [403, 'FORBIDDEN'];
    assert.equal([onDevice.status, onDevice.problem?.code], deviceOk ? [200, undefined] : refused, `device stream as ${cred}`);
    assert.equal([onGround.status, onGround.problem?.code], groundOk ? [200, undefined] : refused, `ground stream as ${cred}`);
  }
});

test('WebSocket subscriptions of a device and of a ground, by credential', async () => {
  for (const cred of CREDS) {
    const ws = await openWs(`${base.replace('http', 'ws')}/live`);
    ws.send({ type: 'auth', token: tokens[cred] });
    const first = await ws.next((f) => f.type === 'ready' || f.type === 'error');
    if (cred === 'none') {
      assert.equal(first.code, 'UNAUTHORIZED');
      assert.is((await ws.closed).code, 1008);
      continue;
    }
    assert.is(first.type, 'ready', `${cred}: ${JSON.stringify(first)}`);
    for (const [key, id, ok] of [['device', deviceId, MEMBERS.includes(cred) || cred === 'device'], ['ground', groundId, MEMBERS.includes(cred)]] as const) {
      const from = ws.frames.length;
      ws.send({ type: 'subscribe', [key]: id });
      const answer = await ws.next((f) => f.type === 'subscribed' || f.type === 'error', 10_000, from);
      assert.equal(ok ? answer.type : answer.code, ok ? 'subscribed' : 'FORBIDDEN', `${key} as ${cred}: ${JSON.stringify(answer)}`);
    }
    ws.ws.close();
  }
});

test('MQTT feed subscriptions with a real client: members and the device are granted, others refused', async () => {
  for (const cred of CREDS) {
    const conn = await mqttConnect(tokens[cred]);
    if (cred === 'none' || cred === 'partner') {
      assert.ok('refused' in conn, `${cred} is refused at CONNECT`);
      continue;
    }
    assert.ok('client' in conn, `${cred} connects`);
    // mqtt.js rejects a SUBACK 0x87 (Not authorized) as an error.
    const granted = await conn.client.subscribeAsync(`device/${deviceId}/asset/+/feed`, { qos: 0 })
      .then((g) => g[0].qos as number, (error: Error) => (/Not authorized/.test(error.message) ? 0x87 : -1));
    const ok = MEMBERS.includes(cred) || cred === 'device';
    assert.is(granted, ok ? 0 : 0x87, `feed as ${cred}`);
    await conn.client.endAsync();
  }
});

test('a member removed over HTTP loses its SSE stream, its WebSocket and its MQTT connection within 1 s', async () => {
  const leaving = await member('viewer');
  const sse = await openSse(`${base}/ground/${groundId}/live`, leaving.token);
  assert.is(sse.status, 200);
  const ws = await openWs(`${base.replace('http', 'ws')}/live`);
  ws.send({ type: 'auth', token: leaving.token });
  await ws.next((f) => f.type === 'ready');
  ws.send({ type: 'subscribe', ground: groundId });
  await ws.next((f) => f.type === 'subscribed');
  const conn = await mqttConnect(leaving.token);
  assert.ok('client' in conn);
  assert.is((await conn.client.subscribeAsync(`device/${deviceId}/asset/+/feed`, { qos: 0 }))[0].qos, 0);
  const staying = await openSse(`${base}/ground/${groundId}/live`, tokens.viewer);
  let stayingEnded = false;
  void staying.ended.then(() => { stayingEnded = true; });

  const since = performance.now();
  const removed = await fetch(`${base}/ground/${groundId}/members/${leaving.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${tokens.owner}` } });
  assert.is(removed.status, 204);
  await within(sse.ended, since, 1000, 'SSE');
  await within(ws.closed, since, 1000, 'WebSocket');
  assert.is((await ws.closed).code, 1008);
  await within(conn.closedAt, since, 1000, 'MQTT');
  assert.equal(conn.reasons, [0x98]);
  const again = await openSse(`${base}/ground/${groundId}/live`, leaving.token);
  assert.equal([again.status, again.problem?.code], [403, 'FORBIDDEN']);
  await new Promise((r) => setTimeout(r, 100));
  assert.not.ok(stayingEnded, 'another member\'s stream stays');
  staying.close();
  const audit = await auditUntil(auditReader, groundId, tokens.owner, (items) => hasEntry(items, { operation: 'deleteMember', targetId: leaving.id }));
  assert.ok(hasEntry(audit, { operation: 'deleteMember', targetId: leaving.id, actor: { kind: 'user', id: ids.owner }, result: { status: 204 } }));
});

test('a member demoted to viewer keeps its MQTT feed and its streams\' access, and is refused a change at its next request', async () => {
  const demoted = await member('editor');
  const conn = await mqttConnect(demoted.token);
  assert.ok('client' in conn);
  assert.is((await conn.client.subscribeAsync(`device/${deviceId}/asset/+/feed`, { qos: 0 }))[0].qos, 0);
  const patch = () => fetch(`${base}/device/${deviceId}`, {
    method: 'PATCH', headers: { authorization: `Bearer ${demoted.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'by the editor' }),
  });
  assert.is((await patch()).status, 200);
  const changed = await fetch(`${base}/ground/${groundId}/members/${demoted.id}`, {
    method: 'PUT', headers: { authorization: `Bearer ${tokens.owner}`, 'content-type': 'application/json' }, body: JSON.stringify({ role: 'viewer' }),
  });
  assert.equal([changed.status, (await changed.json() as { role: string }).role], [200, 'viewer']);
  const refused = await patch();
  assert.equal([refused.status, (await refused.json() as { requiredRole: string }).requiredRole], [403, 'editor']);
  await new Promise((r) => setTimeout(r, 1200));
  assert.ok(conn.client.connected, 'a viewer follows feeds: the connection stays');
  const sse = await openSse(`${base}/device/${deviceId}/live`, demoted.token);
  assert.is(sse.status, 200, 'a viewer follows streams');
  sse.close();
  await conn.client.endAsync();
  // In the audit log: the editor's change, the owner's demotion, the change then refused by role.
  const audit = await auditUntil(auditReader, groundId, tokens.owner, (items) => hasEntry(items, { operation: 'updateDevice', actor: { id: demoted.id }, result: { status: 403 } }));
  const mine = audit.filter((e) => e.actor.id === demoted.id || e.targetId === demoted.id).map((e) => [e.operation, e.actor.id, e.targetId, e.result.status, e.result.code]);
  assert.equal(mine.slice(0, 3), [
    ['updateDevice', demoted.id, deviceId, 403, 'FORBIDDEN'],
    ['putMember', ids.owner, demoted.id, 200, undefined],
    ['updateDevice', demoted.id, deviceId, 200, undefined],
  ]);
});

test.run();
