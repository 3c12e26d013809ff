/**
 * Auth matrix of the activation edge (DESIGN.md §5, spec §5): every partner route refuses missing
 * and bad tokens (401), device and user tokens (403) and another partner's token (403); partner A
 * cannot read, change or use partner B's activations or device types; only user tokens redeem
 * codes. Refusals change nothing.
 */
import * as assert from 'uvu/assert';
import { activationBody, activationWorld, type ActivationWorld } from '../../support/activationWorld.ts';
import { EdgeHarness, suitePerRegistry, type RegistryFactory } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';

interface Target {
  code: string;
  option: string;
  hardwareId: string;
}

interface Route {
  method: string;
  path(w: ActivationWorld, t: Target): string;
  json?(w: ActivationWorld, t: Target): unknown;
}

const routes: Route[] = [
  { method: 'PUT', path: (w) => `/partner/${w.partner.id}/device-types/tracker`, json: () => ({ assets: [] }) },
  { method: 'PUT', path: (w) => `/partner/${w.partner.id}/device-types/planted`, json: () => ({ assets: [] }) },
  { method: 'POST', path: (w) => `/partner/${w.partner.id}/device-types/tracker/versions` },
  { method: 'GET', path: (w) => `/partner/${w.partner.id}/device-types` },
  { method: 'GET', path: (w) => `/partner/${w.partner.id}/device-types/tracker` },
  { method: 'GET', path: (w) => `/partner/${w.partner.id}/device-types/tracker/versions/1` },
  { method: 'POST', path: (w) => `/partner/${w.partner.id}/activations`, json: (w) => activationBody(w.tracker, 'intruder-unit', [{ networkId: 'net8', data: {} }]) },
  { method: 'GET', path: (w) => `/partner/${w.partner.id}/activations` },
  { method: 'GET', path: (w, t) => `/partner/${w.partner.id}/activations/${t.code}` },
  { method: 'PATCH', path: (w, t) => `/partner/${w.partner.id}/activations/${t.code}`, json: () => ({ description: 'pwned' }) },
  { method: 'DELETE', path: (w, t) => `/partner/${w.partner.id}/activations/${t.code}` },
  { method: 'GET', path: (w, t) => `/partner/${w.partner.id}/hardware/${t.hardwareId}/activation` },
];

function authSuite(factory: RegistryFactory) {
  const test = harnessSuite('http activation auth', factory);

  async function snapshot(h: EdgeHarness, w: ActivationWorld) {
    const t = { token: w.partner.token };
    return {
      types: (await h.request('GET', `/partner/${w.partner.id}/device-types`, t)).json,
      activations: (await h.request('GET', `/partner/${w.partner.id}/activations`, t)).json,
    };
  }

  test('every partner route refuses no token, bad tokens, device and user tokens and the other partner; nothing changes', async ({ h }) => {
    const w = await activationWorld(h);
    const created = (await w.create(activationBody(w.tracker, w.hw('auth'), [{ networkId: 'net8', data: {} }]))).json;
    const target: Target = { code: created.code, option: created.options[0].id, hardwareId: created.hardware.id };
    const seeded = await h.seed([{ name: 'temperature' }]);
    const revoked = await h.registry.createPartner({ name: 'revoked' });
    await h.registry.revokeToken(revoked.token);
    const before = await snapshot(h, w);
    const denied: Array<[string, Record<string, string>, number]> = [
      ['no token', {}, 401],
      ['not bearer', { authorization: `Basic ${w.partner.token}` }, 401],
      ['garbage', { authorization: 'Bearer fsp_nope' }, 401],
      ['revoked partner', { authorization: `Bearer ${revoked.token}` }, 401],
      ['device token', { authorization: `Bearer ${seeded.deviceToken}` }, 403],
      ['user token', { authorization: `Bearer ${w.user.token}` }, 403],
      ['other partner', { authorization: `Bearer ${w.rival.token}` }, 403],
    ];
    for (const route of routes) {
      for (const [who, headers, status] of denied) {
        const json = route.json?.(w, target);
        const reply = await h.request(route.method, route.path(w, target), { headers, ...(json === undefined ? {} : { json }) });
        assert.is(reply.status, status, `${who}: ${route.method} ${route.path(w, target)} → ${reply.text}`);
        assert.is(reply.headers.get('content-type'), 'application/problem+json');
        assert.equal(Object.keys(reply.json).sort(), ['code', 'detail', 'instance', 'status', 'title', 'type'], `${who}: a bare problem`);
        assert.not.ok(reply.text.includes(target.option) || reply.text.includes('unused'), `${who} learns nothing of the activation`);
        if (status === 401) assert.ok(reply.headers.get('www-authenticate'));
      }
    }
    assert.equal(await snapshot(h, w), before, 'refused requests changed nothing');
    assert.is((await h.request('GET', `/partner/${w.partner.id}/device-types/planted`, { token: w.partner.token })).status, 404);
  });

  test('partner B cannot read, change, delete or look up A\'s activations, nor use or read A\'s device types, through its own paths', async ({ h }) => {
    const a = await activationWorld(h);
    const b = await activationWorld(h);
    const created = (await a.create(activationBody(a.tracker, a.hw('mine'), [{ networkId: 'net8', data: {} }]))).json;
    const before = await snapshot(h, a);
    const bt = { token: b.partner.token };
    const own = `/partner/${b.partner.id}`;
    assert.is((await h.request('GET', `${own}/activations/${created.code}`, bt)).status, 404);
    assert.is((await h.request('PATCH', `${own}/activations/${created.code}`, { ...bt, json: { description: 'mine now' } })).status, 404);
    assert.is((await h.request('DELETE', `${own}/activations/${created.code}`, bt)).status, 404);
    assert.is((await h.request('GET', `${own}/hardware/${created.hardware.id}/activation`, bt)).status, 404);
    assert.not.ok((await h.request('GET', `${own}/activations?hardwareId=${created.hardware.id}`, bt)).text.includes(created.code));
    const useA = await b.create(activationBody(a.tracker, b.hw(), [{ networkId: 'net8', data: {} }]));
    assert.is(useA.status, 403, useA.text);
    assert.equal(useA.json.errors.map((e: { path: string }) => e.path), ['body.options.0.device.type']);
    const changeToA = await h.request('PATCH', `${own}/activations/${(await b.create(activationBody(b.tracker, b.hw(), [{ networkId: 'net8', data: {} }]))).json.code}`, {
      ...bt, json: { options: [{ device: { type: `${a.tracker}:1` }, network: { networkId: 'net8', data: {} } }] },
    });
    assert.is(changeToA.status, 403, changeToA.text);
    // B's own type of the same name is B's, not A's.
    assert.equal((await h.request('GET', `${own}/device-types/tracker`, bt)).json.partnerId, b.partner.id);
    assert.is((await h.request('GET', `${own}/device-types/tracker/versions/1`, bt)).json.ref, `${b.partner.id}/tracker:1`);
    assert.equal(await snapshot(h, a), before);
  });

  test('only user tokens redeem codes: partner and device tokens get 403, no token 401; the code stays unused', async ({ h }) => {
    const w = await activationWorld(h);
    const created = (await w.create(activationBody(w.tracker, w.hw('redeem'), [{ networkId: 'net8', data: {} }]))).json;
    const seeded = await h.seed([{ name: 'temperature' }]);
    const json = { code: created.code, option: created.options[0].id, groundId: w.groundId };
    for (const [token, status] of [[undefined, 401], [w.partner.token, 403], [w.rival.token, 403], [seeded.deviceToken, 403], ['fsu_forged', 401]] as const) {
      const reply = await h.request('POST', '/activate', { ...(token === undefined ? {} : { token }), json });
      assert.is(reply.status, status, reply.text);
    }
    assert.is((await h.request('GET', `/partner/${w.partner.id}/activations/${created.code}`, { token: w.partner.token })).json.status, 'unused');
    assert.equal(await h.registry.listDevices(w.groundId), []);
    // A device token reaches none of the partner routes even for its own partner's activation.
    assert.is((await h.request('GET', `/partner/${w.partner.id}/activations`, { token: seeded.deviceToken })).status, 403);
    assert.is((await h.request('POST', '/activate', { token: w.user.token, json })).status, 201);
  });

  test('GET /networks and /openapi.json are public; the OpenAPI document describes every activation route', async ({ h }) => {
    assert.is((await h.request('GET', '/networks')).status, 200);
    const doc = (await h.request('GET', '/openapi.json')).json;
    const expected: [string, string, string[]][] = [
      ['/partner/{partner}/device-types/{name}', 'put', ['200', '201', '401', '403', '422']],
      ['/partner/{partner}/device-types/{name}/versions', 'post', ['201', '404']],
      ['/partner/{partner}/device-types', 'get', ['200']],
      ['/partner/{partner}/device-types/{name}', 'get', ['200', '404']],
      ['/partner/{partner}/device-types/{name}/versions/{version}', 'get', ['200', '404']],
      ['/partner/{partner}/activations', 'post', ['201', '409', '422']],
      ['/partner/{partner}/activations', 'get', ['200', '422']],
      ['/partner/{partner}/activations/{code}', 'get', ['200', '404']],
      ['/partner/{partner}/activations/{code}', 'patch', ['200', '404', '409', '422']],
      ['/partner/{partner}/activations/{code}', 'delete', ['204', '404', '409']],
      ['/partner/{partner}/hardware/{hardwareId}/activation', 'get', ['200', '404']],
      ['/activate', 'post', ['201', '403', '404', '409', '422']],
      ['/networks', 'get', ['200']],
    ];
    for (const [path, method, statuses] of expected) {
      const op = doc.paths[path]?.[method];
      assert.ok(op, `${method} ${path} documented`);
      for (const s of statuses) assert.ok(op.responses[s], `${method} ${path} documents ${s}`);
    }
    const create = doc.paths['/partner/{partner}/activations'].post;
    assert.equal(create.security, [{ bearer: [] }]);
    assert.equal(create.requestBody.content['application/json'].schema.required.sort(), ['hardware', 'options']);
    assert.equal(Object.keys(create.responses['201'].content['application/json'].schema.properties),
      ['code', 'description', 'status', 'activatedDeviceId', 'activatedOptionId', 'hardware', 'options']);
    assert.equal(doc.paths['/partner/{partner}/activations'].get.parameters.map((p: { name: string }) => p.name), ['partner', 'status', 'hardwareId', 'limit', 'cursor']);
    assert.equal(doc.paths['/networks'].get.security, []);
  });

  return test;
}

for (const s of suitePerRegistry('http-activation-auth', authSuite)) s.run();
