/**
 * Live streams over the WebSocket at /live on the composed embedded service: the protocol of
 * docs/live.md end to end, and hostile clients (no auth, forged tokens, garbage, oversized frames,
 * too many subscriptions, other people's devices).
 */
import * as assert from 'uvu/assert';
import type { Service } from '../../../app/createService.ts';
import { suite } from '../../support/suite.ts';
import { createDeviceOverHttp, startEmbeddedService, type CreatedDevice } from '../../support/embeddedService.ts';
import { openWs } from '../../support/liveClients.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const test = suite('live over WebSocket');
const tmp = tempDir('live-ws');
let service: Service;
let base = '';
let url = '';
let one: CreatedDevice;
let other: CreatedDevice;

const ASSETS = [
  { name: 'temperature', is: 'sensor', profile: { type: 'number', maximum: 100 } },
  { name: 'light', is: 'actuator', profile: { type: 'boolean' } },
];

async function put(device: CreatedDevice, value: unknown): Promise<void> {
  const res = await fetch(`${base}/device/${device.id}/asset/temperature/state`, {
    method: 'PUT', headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ value }),
  });
  await res.arrayBuffer();
}

test.before(async () => {
  ({ service, base } = await startEmbeddedService(tmp.dir));
  url = `ws://127.0.0.1:${service.httpPort}/live`;
  one = await createDeviceOverHttp(service, base, ASSETS);
  other = await createDeviceOverHttp(service, base, ASSETS);
});

test.after(async () => {
  await service.stop();
  tmp.remove();
});

test('auth, subscribe to a device and to a ground, events as {type, id, data}, unsubscribe', async () => {
  const client = await openWs(url);
  try {
    client.send({ type: 'auth', token: one.userToken });
    await client.next((f) => f.type === 'ready');
    const groundId = (await service.registry.getDevice(one.id))!.groundId;
    client.send({ type: 'subscribe', device: one.id, kinds: ['state'] });
    client.send({ type: 'subscribe', ground: groundId, kinds: ['rejection'] });
    await client.next((f) => f.type === 'subscribed' && f.ground === groundId);
    await put(one, 42);
    await put(one, 1000);
    const state = await client.next((f) => f.type === 'state', 30_000);
    assert.ok(typeof state.id === 'string');
    const data = state.data as Record<string, unknown>;
    assert.is(data.deviceId, one.id);
    assert.is(data.value, 42);
    const rejection = await client.next((f) => f.type === 'rejection', 30_000);
    assert.is((rejection.data as { code: string }).code, 'PROFILE_VIOLATION');
    client.send({ type: 'unsubscribe', device: one.id });
    const mark = client.frames.length;
    await put(one, 43);
    await put(one, 2000);
    await client.next((f) => f.type === 'rejection', 30_000, mark);
    assert.not.ok(client.frames.slice(mark).some((f) => f.type === 'state'), 'no state after unsubscribe');
  } finally {
    client.ws.close();
  }
});

test('lastEventId resumes without a gap', async () => {
  const first = await openWs(url);
  first.send({ type: 'auth', token: one.token });
  first.send({ type: 'subscribe', device: one.id, kinds: ['state'] });
  await first.next((f) => f.type === 'subscribed');
  await put(one, 1);
  const seen = await first.next((f) => f.type === 'state' && (f.data as { value: number }).value === 1, 30_000);
  first.ws.close();
  await first.closed;
  for (const value of [2, 3, 4]) await put(one, value);
  await waitFor(async () => {
    const res = await fetch(`${base}/device/${one.id}/asset/temperature/state`, { headers: { authorization: `Bearer ${one.token}` } });
    return ((await res.json()) as { state?: { value: unknown } }).state?.value === 4;
  }, 30_000, '4 stored');
  const again = await openWs(url);
  try {
    again.send({ type: 'auth', token: one.token });
    again.send({ type: 'subscribe', device: one.id, kinds: ['state'], lastEventId: seen.id });
    await again.next((f) => f.type === 'state' && (f.data as { value: number }).value === 4, 30_000);
    assert.equal(again.frames.filter((f) => f.type === 'state').map((f) => (f.data as { value: number }).value), [2, 3, 4]);
  } finally {
    again.ws.close();
  }
});

test('hostile clients: no auth, forged token, garbage, oversized, too many subscriptions, foreign devices', async () => {
  // A subscribe before auth closes with 1008.
  const early = await openWs(url);
  early.send({ type: 'subscribe', device: one.id });
  assert.is((await early.closed).code, 1008);
  assert.is(early.frames[0]?.code, 'UNAUTHORIZED');

  // A forged token (right shape, wrong secret) closes with 1008.
  const forged = await openWs(url);
  forged.send({ type: 'auth', token: `${one.token.slice(0, -4)}AAAA` });
  assert.is((await forged.closed).code, 1008);

  // Garbage before auth closes too.
  const garbage = await openWs(url);
  garbage.send('{"type":"auth",');
  assert.is((await garbage.closed).code, 1008);

  // A frame over the 4 KiB limit closes with 1009 (message too big).
  const big = await openWs(url);
  big.send({ type: 'auth', token: 'x'.repeat(8192) });
  assert.is((await big.closed).code, 1009);

  const client = await openWs(url);
  try {
    client.send({ type: 'auth', token: one.token });
    await client.next((f) => f.type === 'ready');
    // After auth, bad frames get errors with stable codes and the connection stays.
    client.send('not json');
    client.send({ type: 'subscribe', device: other.id });
    client.send({ type: 'subscribe', device: '../../etc/passwd' });
    client.send({ type: 'subscribe', device: one.id, kinds: ['everything'] });
    client.send({ type: 'dance' });
    await waitFor(() => client.frames.filter((f) => f.type === 'error').length >= 5, 10_000, 'five errors');
    assert.equal(client.frames.filter((f) => f.type === 'error').map((f) => f.code), ['MALFORMED_JSON', 'FORBIDDEN', 'BAD_REQUEST', 'VALIDATION_FAILED', 'BAD_REQUEST']);
    client.send({ type: 'subscribe', device: one.id });
    await client.next((f) => f.type === 'subscribed');
    client.send({ type: 'subscribe', device: one.id });
    await client.next((f) => f.type === 'error' && f.code === 'CONFLICT');
  } finally {
    client.ws.close();
  }

  // A user may not watch another user's ground; too many subscriptions are refused.
  const user = await openWs(url);
  try {
    user.send({ type: 'auth', token: one.userToken });
    await user.next((f) => f.type === 'ready');
    user.send({ type: 'subscribe', ground: (await service.registry.getDevice(other.id))!.groundId });
    await user.next((f) => f.type === 'error' && f.code === 'FORBIDDEN');
    user.send({ type: 'subscribe', device: 'AAAAAAAAAAAAAAAAAAAAAA' });
    await user.next((f) => f.type === 'error' && f.code === 'UNKNOWN_DEVICE');
  } finally {
    user.ws.close();
  }
});

test('a client that floods frames without waiting for answers is closed before they are all handled', async () => {
  const client = await openWs(url);
  client.send({ type: 'auth', token: one.userToken });
  await client.next((f) => f.type === 'ready');
  const flood = JSON.stringify({ type: 'subscribe', device: one.id });
  for (let i = 0; i < 500; i++) client.ws.send(flood);
  const closed = await client.closed;
  assert.is(closed.code, 1008);
  const answers = client.frames.filter((f) => f.type === 'subscribed' || f.type === 'error').length;
  assert.ok(answers < 100, `${answers} of 500 frames answered`);
});

test('at most 32 subscriptions per connection (RATE_LIMITED past that)', async () => {
  const groundId = (await service.registry.getDevice(one.id))!.groundId;
  const ids: string[] = [];
  for (let i = 0; i < 33; i++) {
    const res = await fetch(`${base}/ground/${groundId}/devices`, {
      method: 'POST', headers: { authorization: `Bearer ${one.userToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `d${i}`, assets: [] }),
    });
    assert.is(res.status, 201);
    ids.push(((await res.json()) as { id: string }).id);
  }
  const client = await openWs(url);
  try {
    client.send({ type: 'auth', token: one.userToken });
    await client.next((f) => f.type === 'ready');
    for (const id of ids) client.send({ type: 'subscribe', device: id });
    await waitFor(() => client.frames.filter((f) => f.type === 'subscribed' || f.type === 'error').length >= 33, 30_000, 'answers');
    assert.is(client.frames.filter((f) => f.type === 'subscribed').length, 32);
    assert.equal(client.frames.filter((f) => f.type === 'error').map((f) => f.code), ['RATE_LIMITED']);
  } finally {
    client.ws.close();
  }
});

test('a token revoked after it opened a live connection is refused by the next one at once (cached answers follow registry changes)', async () => {
  const device = await createDeviceOverHttp(service, base, ASSETS);
  const first = await openWs(url);
  try {
    first.send({ type: 'auth', token: device.userToken });
    await first.next((f) => f.type === 'ready');
  } finally {
    first.ws.close();
  }
  assert.ok(await service.registry.revokeToken(device.userToken));
  const again = await openWs(url);
  again.send({ type: 'auth', token: device.userToken });
  assert.is((await again.closed).code, 1008, 'refused, though the principal was cached for the registry cache lifetime');
});

test.run();
