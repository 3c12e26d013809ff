/**
 * The rule routes over real HTTP on loopback, once per registry adapter (PGlite; PostgreSQL when
 * DATABASE_URL_TEST is set): a member manages a ground's rules; a rule that cannot hold on the
 * ground's devices is a 422 naming each field (a bad duration, a threshold on a boolean or a
 * string, an unknown asset, a listed device without it, a command to a sensor, another ground's
 * integration); hostile input is refused with stable codes; another ground's rule does not exist.
 */
import * as assert from 'uvu/assert';
import { suitePerRegistry, type RegistryFactory, type Seeded } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';

function rulesSuite(factory: RegistryFactory) {
  const test = harnessSuite('http rules', factory, { clockStart: Date.now() });
  let s: Seeded;
  let stranger: Seeded;
  let tracker = '';
  let integrationId = '';

  test.before(async ({ h }) => {
    s = await h.seed([
      { name: 'temperature', profile: { type: 'number', unit: '°C' } },
      { name: 'door', profile: { type: 'boolean' } },
      { name: 'mode', profile: { type: 'string', enum: ['eco', 'boost'] } },
      { name: 'defrost', is: 'actuator', profile: { type: 'boolean' } },
    ]);
    stranger = await h.seed();
    tracker = (await h.registry.createDevice({ groundId: s.groundId, name: 'tracker', assets: [{ name: 'location', is: 'sensor', profile: { type: 'object', properties: { latitude: { type: 'number' }, longitude: { type: 'number' } } } }] })).device.id;
    integrationId = (await h.registry.createIntegration({ groundId: s.groundId, name: 'ops', kind: 'webhook', url: 'https://ops.example.com/hook', events: ['alarm'] })).integration.id;
  });

  const create = (h: { request: (m: string, p: string, o: object) => Promise<{ status: number; json: any; headers: Headers }> }, body: Record<string, unknown>, token = s.userToken, groundId = s.groundId) =>
    h.request('POST', `/ground/${groundId}/rules`, { token, json: { name: 'too warm', asset: 'temperature', condition: { above: 8 }, severity: 'major', ...body } });

  test('create, read, list by pages, change, delete: every condition kind', async ({ h }) => {
    const made = await create(h, { for: 'PT2M', clear: { below: 6 }, actions: [{ command: { asset: 'defrost', value: true } }, { integration: integrationId }] });
    assert.is(made.status, 201, JSON.stringify(made.json));
    assert.is(made.headers.get('location'), `/rules/${made.json.id}`);
    assert.equal(made.json, {
      id: made.json.id, groundId: s.groundId, name: 'too warm', asset: 'temperature', condition: { above: 8 }, for: 'PT2M', clear: { below: 6 }, severity: 'major',
      actions: [{ command: { asset: 'defrost', value: true } }, { integration: integrationId }], createdAt: made.json.createdAt, updatedAt: made.json.createdAt,
    });
    assert.equal((await h.request('GET', `/rules/${made.json.id}`, { token: s.userToken })).json, made.json);
    const others = [
      { name: 'cold', condition: { below: -30 }, severity: 'critical' },
      { name: 'band', condition: { outside: [2, 8] }, severity: 'minor', devices: [s.deviceId] },
      { name: 'open', asset: 'door', condition: { equals: true }, for: 'PT30S', severity: 'warning' },
      { name: 'silent', asset: 'door', condition: { silentFor: 'PT15M' }, severity: 'info' },
      { name: 'left', asset: 'location', condition: { outsideArea: { latitude: 51.05, longitude: 3.72, radiusMeters: 250 } }, severity: 'major', devices: [tracker] },
    ];
    const ids = [made.json.id];
    for (const body of others) {
      const res = await create(h, body);
      assert.is(res.status, 201, `${body.name}: ${JSON.stringify(res.json)}`);
      ids.push(res.json.id);
    }
    const first = await h.request('GET', `/ground/${s.groundId}/rules?limit=4`, { token: s.userToken });
    assert.equal(first.json.items.map((r: { id: string }) => r.id), ids.slice(0, 4), 'oldest first');
    const second = await h.request('GET', `/ground/${s.groundId}/rules?limit=4&cursor=${encodeURIComponent(first.json.next)}`, { token: s.userToken });
    assert.equal(second.json.items.map((r: { id: string }) => r.id), ids.slice(4));
    assert.is(second.json.next, undefined);

    const changed = await h.request('PATCH', `/rules/${made.json.id}`, { token: s.userToken, json: { name: 'warm', for: null, clear: null, severity: 'minor', condition: { above: 10 } } });
    assert.is(changed.status, 200, JSON.stringify(changed.json));
    assert.is(changed.json.for, undefined);
    assert.is(changed.json.clear, undefined);
    assert.equal([changed.json.name, changed.json.severity, changed.json.condition], ['warm', 'minor', { above: 10 }]);
    const toDoor = await h.request('PATCH', `/rules/${made.json.id}`, { token: s.userToken, json: { asset: 'door' } });
    assert.is(toDoor.status, 422, 'the rule as it would be is checked whole: above on a boolean');
    assert.equal(toDoor.json.errors.map((e: { path: string }) => e.path), ['body.condition']);
    assert.is((await h.request('DELETE', `/rules/${made.json.id}`, { token: s.userToken })).status, 204);
    assert.is((await h.request('GET', `/rules/${made.json.id}`, { token: s.userToken })).status, 404);
    assert.is((await h.request('DELETE', `/rules/${made.json.id}`, { token: s.userToken })).status, 404);
  });

  test('rules that cannot hold: 422 naming each field', async ({ h }) => {
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ asset: 'door', condition: { above: 1 } }, ['body.condition']],
      [{ asset: 'mode', condition: { below: 1 } }, ['body.condition']],
      [{ asset: 'mode', condition: { equals: 'turbo' } }, ['body.condition']],
      [{ asset: 'humidity' }, ['body.asset']],
      [{ devices: [tracker] }, ['body.devices']],
      [{ devices: [stranger.deviceId] }, ['body.devices']],
      [{ for: 'P1M' }, ['body.for']],
      [{ for: 'PT0S' }, ['body.for']],
      [{ condition: { silentFor: 'P2Y' } }, ['body.condition.silentFor']],
      [{ condition: { silentFor: 'PT1M' }, clear: { below: 1 } }, ['body.clear']],
      [{ condition: { outside: [8, 2] } }, ['body.condition.outside']],
      [{ asset: 'temperature', condition: { outsideArea: { latitude: 1, longitude: 2, radiusMeters: 3 } } }, ['body.condition']],
      [{ actions: [{ command: { asset: 'door', value: true } }] }, ['body.actions/0/command/asset']],
      [{ actions: [{ command: { asset: 'defrost', value: 'yes' } }] }, ['body.actions/0/command/value']],
      [{ actions: [{ integration: 'A'.repeat(22) }] }, ['body.actions/0/integration']],
      [{ asset: 'door', condition: { above: 1 }, for: 'soon' }, ['body.for']],
    ];
    for (const [body, paths] of cases) {
      const res = await create(h, body);
      assert.is(res.status, 422, JSON.stringify(body));
      assert.is(res.json.code, 'VALIDATION_FAILED');
      for (const path of paths) assert.ok(res.json.errors.some((e: { path: string }) => e.path === path), `${JSON.stringify(body)}: ${JSON.stringify(res.json.errors)}`);
    }
    assert.is((await h.request('GET', `/ground/${s.groundId}/rules`, { token: s.userToken })).json.items.filter((r: { name: string }) => r.name === 'too warm').length, 0, 'none stored');
  });

  test('hostile input: unknown fields, bad severity, a name with invisible characters, huge lists, oversized and malformed bodies', async ({ h }) => {
    for (const body of [
      { extra: 1 },
      { severity: 'panic' },
      { condition: { above: 1, below: 2 } },
      { condition: { above: '8' } },
      { condition: { outside: [1] } },
      { condition: { outsideArea: { latitude: 91, longitude: 0, radiusMeters: 1 } } },
      { name: 'a\u200bb' },
      { name: '' },
      { asset: 'temp/../x' },
      { devices: Array.from({ length: 1001 }, (_, i) => `${'A'.repeat(21)}${i % 10}`) },
      { actions: Array.from({ length: 11 }, () => ({ integration: integrationId })) },
      { actions: [{ command: { asset: 'defrost', value: true }, integration: integrationId }] },
    ]) {
      const res = await create(h, body);
      assert.is(res.status, 422, JSON.stringify(body).slice(0, 120));
      assert.is(res.json.code, 'VALIDATION_FAILED');
    }
    const big = await h.request('POST', `/ground/${s.groundId}/rules`, { token: s.userToken, body: JSON.stringify({ name: 'x'.repeat(2_000_000) }), contentType: 'application/json' });
    assert.is(big.json.code, 'PAYLOAD_TOO_LARGE');
    assert.is((await h.request('POST', `/ground/${s.groundId}/rules`, { token: s.userToken, body: '{"name":', contentType: 'application/json' })).json.code, 'MALFORMED_JSON');
    assert.is((await h.request('POST', `/ground/${s.groundId}/rules`, { token: s.userToken, body: 'name=x', contentType: 'text/plain' })).status, 415);
  });

  test('who may: members only; another ground\'s rule does not exist for them; forged ids; other token kinds', async ({ h }) => {
    const mine = (await create(h, {})).json;
    for (const [method, json] of [['GET', undefined], ['PATCH', { name: 'mine now' }], ['DELETE', undefined]] as const) {
      const res = await h.request(method, `/rules/${mine.id}`, { token: stranger.userToken, ...(json ? { json } : {}) });
      assert.is(res.status, 404, method);
      assert.is(res.json.code, 'NOT_FOUND');
    }
    assert.is((await h.request('GET', `/rules/${mine.id}`, { token: s.userToken })).json.name, 'too warm', 'unchanged by the stranger');
    assert.is((await create(h, {}, stranger.userToken, s.groundId)).status, 403);
    assert.is((await h.request('GET', `/ground/${s.groundId}/rules`, { token: stranger.userToken })).status, 403);
    assert.is((await create(h, {}, s.userToken, 'A'.repeat(22))).status, 404, 'an unknown ground');
    for (const forged of ['short', `${mine.id}x`, "x'--aaaaaaaaaaaaaaaaaa"]) {
      const res = await h.request('GET', `/rules/${forged}`, { token: s.userToken });
      assert.is(res.status, 400, forged);
      assert.is(res.json.code, 'BAD_REQUEST');
    }
    assert.is((await h.request('GET', `/rules/${mine.id}`, { token: s.deviceToken })).status, 403, 'a device token');
    assert.is((await create(h, {}, s.deviceToken)).status, 403);
    assert.is((await h.request('GET', `/rules/${mine.id}`)).status, 401);
  });

  test('the routes are in the OpenAPI document', async ({ h }) => {
    const doc = (await h.request('GET', '/openapi.json')).json;
    for (const [path, method] of [['/ground/{groundId}/rules', 'post'], ['/ground/{groundId}/rules', 'get'], ['/rules/{id}', 'get'], ['/rules/{id}', 'patch'], ['/rules/{id}', 'delete']] as const) {
      assert.ok(doc.paths[path]?.[method], `${method} ${path}`);
    }
  });

  return test;
}

for (const s of suitePerRegistry('http-rules', rulesSuite)) s.run();
