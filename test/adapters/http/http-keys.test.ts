/**
 * A ground's API keys over HTTP (adapters/http/routes/grounds/keyRoutes.ts) on PGlite and
 * PostgreSQL: created by an owner with the token shown once, listed by pages without tokens,
 * revoked; a key's token works in its ground with its role and is 401 UNAUTHORIZED (the code of
 * any bad token) once revoked or expired, also while its principal is cached; hostile input
 * answered as the rest of the API answers it; the keys' changes are in the ground's audit log.
 */
import * as assert from 'uvu/assert';
import { suitePerRegistry, type RegistryFactory } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';
import { auditUntil, hasEntry } from '../../support/auditLog.ts';

const KEY_TOKEN = /^fsk_[0-9A-Za-z]{43}$/;

function keysSuite(factory: RegistryFactory) {
  // The registry stamps times by the system clock: the edge's simulated one starts there too.
  const test = harnessSuite('http ground keys', factory, { limits: { maxBodyBytes: 4096 }, clockStart: Date.now() });

  test('an owner creates a key (201, token shown once), lists keys without tokens, revokes one (204); the key works until then', async ({ h }) => {
    const s = await h.seed();
    const keys = `/ground/${s.groundId}/keys`;
    const created = await h.request('POST', keys, { token: s.userToken, json: { name: '\uFEFFingest', role: 'editor' } });
    assert.is(created.status, 201, created.text);
    assert.match(created.json.token, KEY_TOKEN);
    assert.equal(created.json, { id: created.json.id, groundId: s.groundId, name: 'ingest', role: 'editor', createdAt: created.json.createdAt, createdBy: s.userId, token: created.json.token });
    assert.ok(Number.isSafeInteger(created.json.createdAt));
    assert.is(created.headers.get('cache-control'), 'no-store');
    const token = created.json.token as string;

    const me = await h.request('GET', '/me', { token });
    assert.equal(me.json, { scope: 'key', id: created.json.id, name: 'ingest', key: { groundId: s.groundId, role: 'editor' } });
    assert.equal((await h.request('GET', '/grounds', { token })).json.items.map((g: { id: string }) => g.id), [s.groundId]);
    assert.is((await h.request('PATCH', `/device/${s.deviceId}`, { token, json: { title: 'by a key' } })).status, 200);
    assert.is((await h.request('PUT', `/device/${s.deviceId}/asset/temperature/state`, { token, json: { value: 21 } })).status, 202);

    const listed = await h.request('GET', keys, { token: s.userToken });
    const lastUsedAt = listed.json.items[0]?.lastUsedAt;
    assert.ok(lastUsedAt >= created.json.createdAt, 'the use is recorded');
    assert.equal(listed.json, { items: [{ id: created.json.id, groundId: s.groundId, name: 'ingest', role: 'editor', createdAt: created.json.createdAt, createdBy: s.userId, lastUsedAt }] });
    assert.not.ok(listed.text.includes(token.slice(4)), 'the token is never listed');

    const revoked = await h.request('DELETE', `${keys}/${created.json.id}`, { token: s.userToken });
    assert.is(revoked.status, 204);
    const after = await h.request('GET', `/device/${s.deviceId}`, { token });
    assert.equal([after.status, after.json.code, after.headers.get('content-type')], [401, 'UNAUTHORIZED', 'application/problem+json']);
    const again = await h.request('DELETE', `${keys}/${created.json.id}`, { token: s.userToken });
    assert.equal([again.status, again.json.code], [404, 'NOT_FOUND']);
    assert.equal((await h.request('GET', keys, { token: s.userToken })).json, { items: [] });

    // The ground's audit log: the owner's key made and revoked, the key's change (its state sent is data, the 404 no change).
    const audit = await auditUntil({ get: (path, t) => h.request('GET', path, { token: t }), tick: () => h.clock.advance(250) }, s.groundId, s.userToken,
      (items) => hasEntry(items, { operation: 'deleteKey' }));
    assert.equal(audit.map((e) => [e.operation, `${e.actor.kind}:${e.actor.id}`, e.targetId, e.result.status]), [
      ['deleteKey', `user:${s.userId}`, created.json.id, 204],
      ['updateDevice', `key:${created.json.id}`, s.deviceId, 200],
      ['createKey', `user:${s.userId}`, created.json.id, 201],
    ]);
  });

  test('an expired key is 401 everywhere, also while its principal is cached', async ({ h }) => {
    const s = await h.seed();
    // Ahead of both clocks: the registry checks it by the system clock, which the suite's earlier tests moved past the edge's.
    const expiresAt = Math.max(h.clock.now(), Date.now()) + 5_000;
    const created = await h.request('POST', `/ground/${s.groundId}/keys`, { token: s.userToken, json: { name: 'short', role: 'viewer', expiresAt } });
    assert.is(created.status, 201, created.text);
    const token = created.json.token as string;
    assert.is((await h.request('GET', `/device/${s.deviceId}`, { token })).status, 200);
    h.clock.advance(expiresAt - 1 - h.clock.now());
    assert.is((await h.request('GET', `/ground/${s.groundId}`, { token })).status, 200, 'a millisecond before');
    h.clock.advance(1);
    for (const path of [`/device/${s.deviceId}`, `/ground/${s.groundId}`, '/me', `/ground/${s.groundId}/keys`]) {
      const reply = await h.request('GET', path, { token });
      assert.equal([reply.status, reply.json?.code], [401, 'UNAUTHORIZED'], path);
    }
  });

  test('a key of another ground is a stranger there; a key never manages keys, members or the ground', async ({ h }) => {
    const s = await h.seed();
    const other = await h.registry.createGround({ name: 'other', userId: s.userId });
    const { token } = await h.registry.createKey(other.id, { name: 'elsewhere', role: 'editor' }, s.userId);
    for (const [method, path] of [['GET', `/ground/${s.groundId}`], ['GET', `/device/${s.deviceId}`], ['PATCH', `/device/${s.deviceId}`]] as const) {
      const reply = await h.request(method, path, { token });
      assert.equal([reply.status, reply.json.code, reply.json.requiredRole], [403, 'FORBIDDEN', undefined], path);
    }
    for (const [method, path, json] of [
      ['POST', `/ground/${other.id}/keys`, { name: 'more', role: 'viewer' }],
      ['GET', `/ground/${other.id}/keys`, undefined],
      ['PUT', `/ground/${other.id}/members/${s.userId}`, { role: 'viewer' }],
      ['DELETE', `/ground/${other.id}`, undefined],
    ] as const) {
      const reply = await h.request(method, path, { token, json });
      assert.equal([reply.status, reply.json.code, reply.json.requiredRole], [403, 'FORBIDDEN', 'owner'], `${method} ${path}`);
    }
    const ground = await h.request('POST', '/grounds', { token, json: { name: 'mine' } });
    assert.equal([ground.status, ground.json.code], [403, 'FORBIDDEN']);
  });

  test('keys are listed by pages, oldest first', async ({ h }) => {
    const s = await h.seed();
    const made: string[] = [];
    for (let i = 0; i < 250; i++) {
      made.push((await h.registry.createKey(s.groundId, { name: `k${i}`, role: 'viewer' }, s.userId)).key.id);
      if (i % 7 === 0) h.clock.advance(1);
    }
    const seen: string[] = [];
    let cursor = '';
    for (let pages = 0; pages < 10; pages++) {
      const page = await h.request('GET', `/ground/${s.groundId}/keys?limit=100${cursor}`, { token: s.userToken });
      assert.is(page.status, 200, page.text);
      seen.push(...page.json.items.map((k: { id: string; token?: string }) => k.id));
      if (page.json.next === undefined) break;
      cursor = `&cursor=${page.json.next}`;
    }
    assert.is(seen.length, 250);
    assert.equal(new Set(seen).size, 250, 'no repeat');
    assert.equal([...seen].sort(), [...made].sort(), 'every key');
    for (const query of ['?limit=0', '?limit=1001', '?cursor=%25%25', '?cursor=bm9wZQ', '?token=1']) {
      const reply = await h.request('GET', `/ground/${s.groundId}/keys${query}`, { token: s.userToken });
      assert.equal([reply.status, reply.json.code], [422, 'VALIDATION_FAILED'], query);
    }
  });

  test('hostile input: names, roles, expiries, ids, bodies', async ({ h }) => {
    const s = await h.seed();
    const keys = `/ground/${s.groundId}/keys`;
    const post = (json: unknown) => h.request('POST', keys, { token: s.userToken, json });
    const field = async (json: unknown, path: string) => {
      const reply = await post(json);
      assert.equal([reply.status, reply.json.code], [422, 'VALIDATION_FAILED'], `${JSON.stringify(json)}: ${reply.text}`);
      assert.ok(JSON.stringify(reply.json).includes(path), `${path} named: ${reply.text}`);
    };
    for (const name of ['', 'a\u202Eb', 'a\u200Bb', 'a\u0000b', 'a\u001bb', 'x'.repeat(129), 7, null]) await field({ name, role: 'viewer' }, 'body.name');
    for (const role of ['owner', 'admin', 'Viewer', 'vіewer', 1, ['viewer']]) await field({ name: 'k', role }, 'body.role');
    for (const expiresAt of [Date.now(), Date.now() - 60_000, 1, 1.5, -1, '2999-01-01T00:00:00Z', 253_402_300_800_000, 1e300]) await field({ name: 'k', role: 'viewer', expiresAt }, 'body.expiresAt');
    await field({ name: 'k', role: 'viewer', token: 'fsk_mine' }, 'body');
    const big = await post({ name: 'k', role: 'viewer', pad: 'x'.repeat(10_000) });
    assert.equal([big.status, big.json.code], [413, 'PAYLOAD_TOO_LARGE']);
    const broken = await h.request('POST', keys, { token: s.userToken, body: '{"name":', contentType: 'application/json' });
    assert.equal([broken.status, broken.json.code], [400, 'MALFORMED_JSON']);
    for (const path of [`${keys}/not-an-id`, `${keys}/${'A'.repeat(23)}`, `/ground/x'%20OR%201=1/keys/${'A'.repeat(22)}`]) {
      const reply = await h.request('DELETE', path, { token: s.userToken });
      assert.equal([reply.status, reply.json.code], [400, 'BAD_REQUEST'], path);
    }
    const ghost = await h.request('DELETE', `${keys}/${'A'.repeat(22)}`, { token: s.userToken });
    assert.equal([ghost.status, ghost.json.code], [404, 'NOT_FOUND']);
    const other = await h.registry.createGround({ name: 'other', userId: s.userId });
    const foreign = await h.registry.createKey(other.id, { name: 'f', role: 'viewer' }, s.userId);
    const cross = await h.request('DELETE', `${keys}/${foreign.key.id}`, { token: s.userToken });
    assert.equal([cross.status, cross.json.code], [404, 'NOT_FOUND'], 'a key of another ground is not found through this one');
    assert.ok(await h.registry.authenticate(foreign.token), 'and keeps working');
    for (const forged of ['fsk_' + 'A'.repeat(43), 'fsk_' + 'A'.repeat(42), 'fsk_' + 'A'.repeat(42) + '\u00e9', 'fsu_' + 'A'.repeat(43).slice(4) + 'fsk_']) {
      const reply = await h.request('GET', `/ground/${s.groundId}`, { token: forged });
      assert.equal([reply.status, reply.json.code], [401, 'UNAUTHORIZED'], forged);
    }
    assert.equal((await h.request('GET', keys, { token: s.userToken })).json, { items: [] }, 'nothing refused was created');
  });

  return test;
}

for (const s of suitePerRegistry('http ground keys', keysSuite)) s.run();
