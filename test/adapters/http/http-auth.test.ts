/**
 * Auth matrix of the HTTP edge: every route × every principal that must not reach it → 401/403
 * with a problem+json body and no device data, and nothing appended to the log.
 */
import * as assert from 'uvu/assert';
import { suitePerRegistry, type RegistryFactory, type Seeded } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';
import { waitFor } from '../../support/tmp.ts';

interface Route {
  method: string;
  path(s: Seeded): string;
  json?: unknown;
  /** Also open to the device's own token. */
  deviceMay: boolean;
}

const routes: Route[] = [
  { method: 'POST', path: (s) => `/ground/${s.groundId}/devices`, json: { name: 'intruder' }, deviceMay: false },
  { method: 'GET', path: (s) => `/ground/${s.groundId}/devices`, deviceMay: false },
  { method: 'GET', path: (s) => `/device/${s.deviceId}`, deviceMay: true },
  { method: 'PATCH', path: (s) => `/device/${s.deviceId}`, json: { title: 'pwned' }, deviceMay: false },
  { method: 'DELETE', path: (s) => `/device/${s.deviceId}`, deviceMay: false },
  { method: 'GET', path: (s) => `/device/${s.deviceId}/assets`, deviceMay: true },
  { method: 'POST', path: (s) => `/device/${s.deviceId}/assets`, json: { name: 'extra', is: 'sensor' }, deviceMay: true },
  { method: 'GET', path: (s) => `/device/${s.deviceId}/asset/temperature`, deviceMay: true },
  { method: 'PUT', path: (s) => `/device/${s.deviceId}/asset/temperature`, json: { title: 'x' }, deviceMay: true },
  { method: 'DELETE', path: (s) => `/device/${s.deviceId}/asset/temperature`, deviceMay: false },
  { method: 'PUT', path: (s) => `/device/${s.deviceId}/state`, json: { temperature: { value: 1 } }, deviceMay: true },
  { method: 'POST', path: (s) => `/device/${s.deviceId}/state`, json: { temperature: { value: 1 } }, deviceMay: true },
  { method: 'GET', path: (s) => `/device/${s.deviceId}/state`, deviceMay: true },
  { method: 'PUT', path: (s) => `/device/${s.deviceId}/asset/temperature/state`, json: { value: 1 }, deviceMay: true },
  { method: 'POST', path: (s) => `/device/${s.deviceId}/asset/temperature/state`, json: { value: 1 }, deviceMay: true },
  { method: 'GET', path: (s) => `/device/${s.deviceId}/asset/temperature/state`, deviceMay: true },
  { method: 'PUT', path: (s) => `/asset/${s.assetIds.temperature}/state`, json: { value: 1 }, deviceMay: true },
  { method: 'POST', path: (s) => `/asset/${s.assetIds.temperature}/state`, json: { value: 1 }, deviceMay: true },
  { method: 'GET', path: (s) => `/asset/${s.assetIds.temperature}/state`, deviceMay: true },
  { method: 'GET', path: (s) => `/device/${s.deviceId}/asset/temperature/states`, deviceMay: true },
  { method: 'GET', path: (s) => `/asset/${s.assetIds.temperature}/states`, deviceMay: true },
  { method: 'GET', path: (s) => `/device/${s.deviceId}/rejections`, deviceMay: true },
];

const PROBLEM_KEYS = ['code', 'detail', 'instance', 'status', 'title', 'type'];

function authSuite(factory: RegistryFactory) {
  const test = harnessSuite('http auth', factory);

  test('every route refuses missing, malformed, unknown and revoked tokens, other devices, outsiders and partners', async ({ h }) => {
    const s = await h.seed([{ name: 'temperature' }]);
    const device = await h.registry.getDevice(s.deviceId);
    const neighbour = await h.seed([{ name: 'temperature' }]);
    // Another device in the same ground: same user, still only its own device.
    const sibling = await h.registry.createDevice({ groundId: s.groundId, name: 'sibling', assets: [{ name: 'temperature', is: 'sensor' }] });
    const partner = await h.registry.createPartner({ name: 'acme' });
    const revoked = await h.registry.issueToken('device', s.deviceId);
    assert.ok(await h.registry.revokeToken(revoked));
    const revokedUser = await h.registry.issueToken('user', s.userId);
    await h.registry.revokeToken(revokedUser);

    const principals: { who: string; headers: Record<string, string>; status: number; code: string; deviceToo?: boolean }[] = [
      { who: 'no token', headers: {}, status: 401, code: 'UNAUTHORIZED' },
      { who: 'empty bearer', headers: { authorization: 'Bearer ' }, status: 401, code: 'UNAUTHORIZED' },
      { who: 'basic auth', headers: { authorization: 'Basic dXNlcjpwYXNz' }, status: 401, code: 'UNAUTHORIZED' },
      { who: 'malformed token', headers: { authorization: 'Bearer not-a-token' }, status: 401, code: 'UNAUTHORIZED' },
      { who: 'unknown token', headers: { authorization: `Bearer fsd_${'A'.repeat(43)}` }, status: 401, code: 'UNAUTHORIZED' },
      { who: 'revoked device token', headers: { authorization: `Bearer ${revoked}` }, status: 401, code: 'UNAUTHORIZED' },
      { who: 'revoked user token', headers: { authorization: `Bearer ${revokedUser}` }, status: 401, code: 'UNAUTHORIZED' },
      { who: 'another ground\'s device', headers: { authorization: `Bearer ${neighbour.deviceToken}` }, status: 403, code: 'FORBIDDEN' },
      { who: 'a sibling device', headers: { authorization: `Bearer ${sibling.token}` }, status: 403, code: 'FORBIDDEN' },
      { who: 'a user outside the ground', headers: { authorization: `Bearer ${neighbour.userToken}` }, status: 403, code: 'FORBIDDEN' },
      { who: 'a partner', headers: { authorization: `Bearer ${partner.token}` }, status: 403, code: 'FORBIDDEN' },
      { who: 'the device itself', headers: { authorization: `Bearer ${s.deviceToken}` }, status: 403, code: 'FORBIDDEN', deviceToo: true },
    ];
    const secrets = [device!.name, s.deviceToken, s.userToken, revoked, sibling.token, partner.token, neighbour.deviceToken, neighbour.userToken];
    let checked = 0;
    for (const route of routes) {
      for (const p of principals) {
        if (p.deviceToo && route.deviceMay) continue;
        const path = route.path(s);
        const before = h.appended.length;
        const res = await h.request(route.method, path, { headers: p.headers, json: route.json });
        const where = `${route.method} ${path} as ${p.who}`;
        assert.is(res.status, p.status, `${where}: ${res.text}`);
        assert.is(res.headers.get('content-type'), 'application/problem+json', where);
        assert.equal(Object.keys(res.json).sort(), PROBLEM_KEYS, where);
        assert.is(res.json.code, p.code, where);
        assert.is(res.json.status, p.status, where);
        assert.is(res.json.instance, path, where);
        for (const secret of secrets) assert.not.ok(res.text.includes(secret), `${where} leaks ${secret.slice(0, 8)}…`);
        if (p.status === 401) assert.is(res.headers.get('www-authenticate'), 'Bearer realm="fleetstream"', where);
        assert.is(h.appended.length, before, `${where}: nothing appended`);
        checked++;
      }
    }
    assert.is(checked, routes.length * (principals.length - 1) + routes.filter((r) => !r.deviceMay).length);
    // Nothing was changed by any of them.
    const after = await h.registry.getDevice(s.deviceId);
    assert.equal(after, device);
  });

  test('the public routes need no token; unknown routes answer problem+json 404', async ({ h }) => {
    assert.is((await h.request('GET', '/health')).status, 200);
    assert.is((await h.request('GET', '/openapi.json')).status, 200);
    const res = await h.request('GET', '/nowhere');
    assert.is(res.status, 404);
    assert.is(res.headers.get('content-type'), 'application/problem+json');
    assert.is(res.json.code, 'NOT_FOUND');
  });

  test('authentication comes before everything else: no token and a malformed id or body → 401', async ({ h }) => {
    for (const [method, path] of [['GET', '/device/bad!id'], ['PUT', '/device/x/state'], ['GET', '/asset/%00/states?limit=0']]) {
      const res = await h.request(method, path, method === 'GET' ? {} : { body: '{', contentType: 'application/json' });
      assert.is(res.status, 401, `${method} ${path}`);
    }
  });

  test('a revocation never published applies within the cache time on PGlite, once PostgreSQL announces it from its transaction; one published at once; deleting a device through the edge applies at once', async ({ h }) => {
    const s = await h.seed([{ name: 'temperature' }]);
    const extra = await h.registry.issueToken('device', s.deviceId);
    assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: extra })).status, 200);
    // As by a process that died between its commit and its publish.
    await h.unpublished.revokeToken(extra);
    if (factory.name === 'postgres') {
      // Announced by the transaction that revoked it (migration 4): no cache time to wait for.
      await waitFor(async () => (await h.request('GET', `/device/${s.deviceId}`, { token: extra })).status === 401, 5000, 'the announced revocation');
    } else {
      // Cached principal: still served until the cache time (the harness's 2 s) has passed.
      assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: extra })).status, 200);
      h.clock.advance(2000);
      assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: extra })).status, 401);
    }

    const carried = await h.registry.issueToken('device', s.deviceId);
    assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: carried })).status, 200);
    await h.registry.revokeToken(carried);
    assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: carried })).status, 401, 'the registry change dropped the cached principal');

    assert.is((await h.request('GET', `/device/${s.deviceId}/assets`, { token: s.deviceToken })).status, 200);
    assert.is((await h.request('DELETE', `/device/${s.deviceId}`, { token: s.userToken })).status, 204);
    const after = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { temperature: { value: 1 } } });
    assert.is(after.status, 401, 'the deleted device\'s cached token is dropped at once');
  });

  test('leaving a ground never published applies within the cache time on PGlite, once announced on PostgreSQL; at once when published', async ({ h }) => {
    const s = await h.seed([{ name: 'temperature' }]);
    // A ground keeps an owner: another one first, so that the seeded owner may leave.
    const keepOwner = async (groundId: string) => h.registry.setMemberRole(groundId, (await h.registry.createUser({ name: 'keeper' })).entity.id, 'owner');
    await keepOwner(s.groundId);
    assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: s.userToken })).status, 200);
    await h.unpublished.removeMember(s.groundId, s.userId);
    if (factory.name === 'postgres') {
      await waitFor(async () => (await h.request('GET', `/device/${s.deviceId}`, { token: s.userToken })).status === 403, 5000, 'the announced membership change');
    } else {
      assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: s.userToken })).status, 200, 'cached membership');
      h.clock.advance(2000);
    }
    assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: s.userToken })).status, 403);
    assert.is((await h.request('GET', `/ground/${s.groundId}/devices`, { token: s.userToken })).status, 403);

    const again = await h.seed([{ name: 'temperature' }]);
    assert.is((await h.request('GET', `/device/${again.deviceId}`, { token: again.userToken })).status, 200);
    await keepOwner(again.groundId);
    await h.registry.removeMember(again.groundId, again.userId);
    assert.is((await h.request('GET', `/device/${again.deviceId}`, { token: again.userToken })).status, 403, 'the registry change dropped the cached membership');
  });

  return test;
}

for (const s of suitePerRegistry('http-auth', authSuite)) s.run();
