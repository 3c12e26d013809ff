/**
 * Grounds and members over HTTP (adapters/http/routes/grounds/) on PGlite and PostgreSQL: a user
 * creates a ground and owns it; members listed by pages, added, changed and removed by owners; the
 * last owner kept, also when two owners step down at once; a ground with devices deleted only when
 * forced; and hostile input answered as the rest of the API answers it (400 for a malformed id in
 * the path, 404 for an unknown one, 413 for a body too large, 415 for a body that is not JSON, 422
 * for a role or name that is not one).
 */
import * as assert from 'uvu/assert';
import { suitePerRegistry, type RegistryFactory } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';

function groundsSuite(factory: RegistryFactory) {
  const test = harnessSuite('http grounds and members', factory, { limits: { maxBodyBytes: 4096 } });

  test('a user creates a ground and owns it; members read it, owners rename it; device and partner tokens create none', async ({ h }) => {
    const s = await h.seed();
    const created = await h.request('POST', '/grounds', { token: s.userToken, json: { name: '\uFEFFA\u0308telier' } });
    assert.is(created.status, 201, created.text);
    assert.equal(created.json, { id: created.json.id, name: '\u00C4telier', createdAt: created.json.createdAt, role: 'owner' });
    assert.is(created.headers.get('location'), `/ground/${created.json.id}`);
    assert.ok((await h.request('GET', '/grounds', { token: s.userToken })).json.items.some((g: { id: string }) => g.id === created.json.id));
    assert.equal((await h.request('GET', `/ground/${created.json.id}`, { token: s.userToken })).json.role, 'owner');
    const renamed = await h.request('PATCH', `/ground/${created.json.id}`, { token: s.userToken, json: { name: 'lab' } });
    assert.equal([renamed.status, renamed.json.name, renamed.json.role], [200, 'lab', 'owner']);
    const partner = await h.registry.createPartner({ name: 'p' });
    for (const token of [s.deviceToken, partner.token]) {
      const refused = await h.request('POST', '/grounds', { token, json: { name: 'x' } });
      assert.equal([refused.status, refused.json.code], [403, 'FORBIDDEN']);
    }
  });

  test('members: added (201), changed (200), listed by pages in the order they joined, removed (204)', async ({ h }) => {
    const s = await h.seed();
    const users = [];
    for (const name of ['bob', 'cy', 'di']) users.push((await h.registry.createUser({ name })).entity.id);
    const put = (userId: string, role: unknown) => h.request('PUT', `/ground/${s.groundId}/members/${userId}`, { token: s.userToken, json: { role } });
    const added = await put(users[0], 'viewer');
    assert.equal([added.status, added.json], [201, { userId: users[0], name: 'bob', role: 'viewer', createdAt: added.json.createdAt }]);
    assert.equal([(await put(users[0], 'editor')).status, (await put(users[0], 'editor')).status], [200, 200]);
    await put(users[1], 'owner');
    await new Promise((r) => setTimeout(r, 2));
    await put(users[2], 'viewer');
    const first = await h.request('GET', `/ground/${s.groundId}/members?limit=2`, { token: s.userToken });
    assert.equal(first.json.items.map((m: { userId: string; role: string }) => [m.userId, m.role]), [[s.userId, 'owner'], [users[0], 'editor']]);
    const rest = await h.request('GET', `/ground/${s.groundId}/members?limit=2&cursor=${first.json.next}`, { token: s.userToken });
    assert.equal(rest.json.items.map((m: { userId: string; name: string; role: string }) => [m.userId, m.name, m.role]), [[users[1], 'cy', 'owner'], [users[2], 'di', 'viewer']]);
    assert.is(rest.json.next, undefined);
    assert.is((await h.request('DELETE', `/ground/${s.groundId}/members/${users[2]}`, { token: s.userToken })).status, 204);
    const gone = await h.request('DELETE', `/ground/${s.groundId}/members/${users[2]}`, { token: s.userToken });
    assert.equal([gone.status, gone.json.code], [404, 'NOT_FOUND']);
    const viewerOnly = await h.request('GET', `/ground/${s.groundId}/members`, { token: s.userToken });
    assert.is(viewerOnly.json.items.length, 3);
  });

  test('a ground keeps an owner: the last one can neither leave nor step down; two owners stepping down at once, one stays', async ({ h }) => {
    const s = await h.seed();
    const alone = await h.request('DELETE', `/ground/${s.groundId}/members/${s.userId}`, { token: s.userToken });
    assert.equal([alone.status, alone.json.code], [409, 'CONFLICT']);
    assert.match(alone.json.detail, /last owner/);
    const down = await h.request('PUT', `/ground/${s.groundId}/members/${s.userId}`, { token: s.userToken, json: { role: 'editor' } });
    assert.equal([down.status, down.json.code], [409, 'CONFLICT']);

    for (let round = 0; round < 4; round++) {
      const t = await h.seed([]);
      const other = await h.registry.createUser({ name: 'co-owner' });
      await h.registry.setMemberRole(t.groundId, other.entity.id, 'owner');
      const stepDown = (userId: string, token: string) => (round % 2 === 0
        ? h.request('PUT', `/ground/${t.groundId}/members/${userId}`, { token, json: { role: 'viewer' } })
        : h.request('DELETE', `/ground/${t.groundId}/members/${userId}`, { token }));
      const replies = await Promise.all([stepDown(t.userId, t.userToken), stepDown(other.entity.id, other.token)]);
      const statuses = replies.map((r) => r.status).sort();
      assert.equal(statuses, [round % 2 === 0 ? 200 : 204, 409], `round ${round}: ${replies.map((r) => r.text).join(' | ')}`);
      const owners = (await h.registry.listMembers(t.groundId)).filter((m) => m.role === 'owner');
      assert.is(owners.length, 1);
    }
  });

  test('a ground with devices is deleted only with ?force=true, its devices with it (their tokens refused at once)', async ({ h }) => {
    const s = await h.seed();
    const refused = await h.request('DELETE', `/ground/${s.groundId}`, { token: s.userToken });
    assert.equal([refused.status, refused.json.code], [409, 'CONFLICT']);
    assert.match(refused.json.detail, /1 device.*force=true/);
    assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: s.deviceToken })).status, 200);
    assert.is((await h.request('DELETE', `/ground/${s.groundId}?force=true`, { token: s.userToken })).status, 204);
    assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: s.deviceToken })).status, 401, 'the device token is revoked');
    const gone = await h.request('GET', `/ground/${s.groundId}`, { token: s.userToken });
    assert.equal([gone.status, gone.json.code], [404, 'NOT_FOUND']);
    const empty = await h.request('POST', '/grounds', { token: s.userToken, json: { name: 'empty' } });
    assert.is((await h.request('DELETE', `/ground/${empty.json.id}`, { token: s.userToken })).status, 204);
  });

  test('hostile input: roles that are not roles, lookalike names, forged and malformed ids, huge and non-JSON bodies', async ({ h }) => {
    const s = await h.seed();
    const bob = (await h.registry.createUser({ name: 'bob' })).entity.id;
    const members = `/ground/${s.groundId}/members/${bob}`;
    const notRoles: unknown[] = ['admin', 'Owner', 'оwner' /* Cyrillic о */, 'owner\u200B', ' viewer', '', 2, ['owner'], null, true, { role: 'owner' }];
    for (const role of notRoles) {
      const reply = await h.request('PUT', members, { token: s.userToken, json: { role } });
      assert.equal([reply.status, reply.json.code], [422, 'VALIDATION_FAILED'], `role ${JSON.stringify(role)}`);
      assert.ok(reply.json.errors.some((e: { path: string }) => e.path === 'body.role'), reply.text);
    }
    for (const body of [{}, { role: 'viewer', admin: true }, [], 'viewer']) {
      const reply = await h.request('PUT', members, { token: s.userToken, json: body });
      assert.equal([reply.status, reply.json.code], [422, 'VALIDATION_FAILED'], JSON.stringify(body));
    }
    assert.is(await h.registry.memberRole(s.groundId, bob), undefined, 'nothing refused added anyone');
    const big = await h.request('PUT', members, { token: s.userToken, json: { role: 'viewer', pad: 'x'.repeat(10_000) } });
    assert.equal([big.status, big.json.code], [413, 'PAYLOAD_TOO_LARGE']);
    const text = await h.request('PUT', members, { token: s.userToken, body: 'role=viewer', contentType: 'text/plain' });
    assert.equal([text.status, text.json.code], [415, 'UNSUPPORTED_CONTENT_TYPE']);
    const broken = await h.request('PUT', members, { token: s.userToken, body: '{"role":', contentType: 'application/json' });
    assert.equal([broken.status, broken.json.code], [400, 'MALFORMED_JSON']);
    for (const path of [`/ground/${s.groundId}/members/not-an-id`, `/ground/${s.groundId}/members/${'A'.repeat(23)}`, `/ground/x'%20OR%201=1/members/${bob}`]) {
      const reply = await h.request('PUT', path, { token: s.userToken, json: { role: 'viewer' } });
      assert.equal([reply.status, reply.json.code], [400, 'BAD_REQUEST'], path);
    }
    const ghostUser = await h.request('PUT', `/ground/${s.groundId}/members/${'A'.repeat(22)}`, { token: s.userToken, json: { role: 'viewer' } });
    assert.equal([ghostUser.status, ghostUser.json.code], [404, 'NOT_FOUND']);
    const ghostGround = await h.request('PUT', `/ground/${'A'.repeat(22)}/members/${bob}`, { token: s.userToken, json: { role: 'viewer' } });
    assert.equal([ghostGround.status, ghostGround.json.code], [404, 'NOT_FOUND']);
    for (const name of ['', 'a\u202Eb', 'x'.repeat(129), 7]) {
      const reply = await h.request('POST', '/grounds', { token: s.userToken, json: { name } });
      assert.equal([reply.status, reply.json.code], [422, 'VALIDATION_FAILED'], `name ${JSON.stringify(name)}`);
    }
    for (const query of ['?force=yes', '?force=1', '?cascade=true']) {
      const reply = await h.request('DELETE', `/ground/${s.groundId}${query}`, { token: s.userToken });
      assert.equal([reply.status, reply.json.code], [422, 'VALIDATION_FAILED'], query);
    }
    assert.ok(await h.registry.getGround(s.groundId), 'still there');
  });

  return test;
}

for (const s of suitePerRegistry('http grounds', groundsSuite)) s.run();
