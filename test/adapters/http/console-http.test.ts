/**
 * The console's files over real HTTP: served from an exact-path table with a strict
 * Content-Security-Policy, gzip and ETags, and nothing else reachable (path traversal, encoded
 * variants, hidden files); plus the routes the console starts from: GET /me, GET /grounds and
 * GET /activate/{code} (a user choosing an option before redeeming, spec §4.6).
 */
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { test } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { EdgeHarness } from '../../support/edgeHarness.ts';
import { activationBody, activationWorld, assertProblem } from '../../support/activationWorld.ts';

let h: EdgeHarness;

test.before(async () => {
  h = await EdgeHarness.start({ registry: await createPgliteRegistry() });
});

test.after(async () => {
  await h.close();
  await h.registry.close();
});

/** A GET with the path sent byte for byte (fetch and URL would normalise `..` and `%2e`). */
function rawGet(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const { port } = new URL(h.base);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(port), path, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('/console redirects to /console/, the page carries a strict CSP that admits only its own import map', async () => {
  const redirect = await rawGet('/console');
  assert.is(redirect.status, 301);
  assert.is(redirect.headers.location, '/console/');
  const page = await rawGet('/console/');
  assert.is(page.status, 200);
  assert.is(page.headers['content-type'], 'text/html; charset=utf-8');
  const csp = String(page.headers['content-security-policy']);
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /connect-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.not.match(csp, /unsafe-inline|unsafe-eval/);
  const html = page.body.toString('utf8');
  const inline = [...html.matchAll(/<script type="importmap">([\s\S]*?)<\/script>/g)].map((m) => m[1]);
  assert.is(inline.length, 1, 'one inline script: the import map');
  assert.ok(csp.includes(`'sha256-${createHash('sha256').update(inline[0]).digest('base64')}'`), 'the import map is admitted by its hash');
  assert.not.match(html.replace(/<script type="importmap">[\s\S]*?<\/script>/, ''), /<script(?![^>]*\bsrc=)[^>]*>/, 'no other inline script');
  assert.is(page.headers['x-content-type-options'], 'nosniff');
  assert.is(page.headers['referrer-policy'], 'no-referrer');
  assert.not.match(html, /https?:\/\//, 'nothing from another origin (works offline, no CDN)');
});

test('every script the page imports is served, gzip when asked, 304 for a known ETag', async () => {
  for (const path of ['/console/app.js', '/console/api.js', '/console/style.css', '/console/vendor/preact.js', '/console/vendor/hooks.js', '/console/vendor/htm.js', '/console/vendor/uplot.js', '/console/vendor/uplot.css']) {
    const plain = await rawGet(path);
    assert.is(plain.status, 200, path);
    assert.match(String(plain.headers['content-type']), path.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
    const zipped = await rawGet(path, { 'accept-encoding': 'gzip, br' });
    assert.is(zipped.headers['content-encoding'], 'gzip');
    assert.ok(gunzipSync(zipped.body).equals(plain.body), `${path}: gzip of the same bytes`);
    const again = await rawGet(path, { 'if-none-match': String(plain.headers.etag) });
    assert.is(again.status, 304);
    assert.is(again.body.length, 0);
  }
});

test('path traversal and every other path outside the table answer 404 problem+json, never a file', async () => {
  const hostile = [
    '/console/../package.json', '/console/%2e%2e/package.json', '/console/%2E%2E%2Fpackage.json', '/console/..%2fpackage.json',
    '/console/..%5cpackage.json', '/console/vendor/../../package.json', '/console/vendor/%2e%2e%2f%2e%2e%2fpackage.json',
    '/console/vendor/..%2f..%2fnode_modules%2fpreact%2fpackage.json', '/console//app.js', '/console/app.js/', '/console/APP.JS',
    '/console/app.js%00', '/console/app.js%00.png', '/console/.gitignore', '/console/%2fetc%2fpasswd', '/console/vendor/',
    '/console/vendor/preact.module.js', '/console/index.html', '/console/\u00e9', '/console/%c0%ae%c0%ae/package.json',
    `/console/${'a'.repeat(4000)}`,
  ];
  for (const path of hostile) {
    const reply = await rawGet(encodeURI(path) === path ? path : path.replace(/[^\x21-\x7e]/g, encodeURIComponent));
    const text = reply.body.toString('utf8');
    assert.ok(reply.status === 404 || reply.status === 400, `${path}: ${reply.status}`);
    assert.not.match(text, /"dependencies"|root:x:0|"name": ?"fleetstream"/, `${path}: no file content leaks`);
    if (reply.status === 404) {
      assert.is(reply.headers['content-type'], 'application/problem+json', path);
      assert.is(JSON.parse(text).code, 'NOT_FOUND');
      assert.ok(text.length < 600, `${path}: the echoed path is bounded`);
    }
  }
});

test('GET /me names the principal of a user, partner or device token; 401 without one', async () => {
  const user = await h.registry.createUser({ name: 'ana' });
  const partner = await h.registry.createPartner({ name: 'acme' });
  const seeded = await h.seed();
  const me = await h.request('GET', '/me', { token: user.token });
  assert.is(me.status, 200, me.text);
  assert.equal(me.json, { scope: 'user', id: user.entity.id, name: 'ana' });
  assert.is(me.headers.get('cache-control'), 'no-store');
  assert.equal((await h.request('GET', '/me', { token: partner.token })).json, { scope: 'partner', id: partner.entity.id, name: 'acme' });
  assert.equal((await h.request('GET', '/me', { token: seeded.deviceToken })).json, { scope: 'device', id: seeded.deviceId });
  assertProblem(await h.request('GET', '/me'), 401, 'UNAUTHORIZED');
  assertProblem(await h.request('GET', '/me', { token: 'fsu_forged0000000000000000000000000000000000' }), 401, 'UNAUTHORIZED');
  await h.registry.revokeToken(user.token);
  h.clock.advance(10_000);
  assertProblem(await h.request('GET', '/me', { token: user.token }), 401, 'UNAUTHORIZED');
});

test('GET /grounds lists the user\'s grounds only; other tokens get 403', async () => {
  const user = await h.registry.createUser({ name: 'bo' });
  const other = await h.registry.createUser({ name: 'cy' });
  const a = await h.registry.createGround({ name: 'Barn', userId: user.entity.id });
  const b = await h.registry.createGround({ name: 'Field', userId: user.entity.id });
  await h.registry.createGround({ name: 'Elsewhere', userId: other.entity.id });
  const reply = await h.request('GET', '/grounds', { token: user.token });
  assert.is(reply.status, 200, reply.text);
  assert.equal(reply.json.items.map((g: { id: string }) => g.id).sort(), [a.id, b.id].sort());
  const partner = await h.registry.createPartner({ name: 'p' });
  assertProblem(await h.request('GET', '/grounds', { token: partner.token }), 403, 'FORBIDDEN');
  assertProblem(await h.request('GET', '/grounds'), 401, 'UNAUTHORIZED');
});

test('GET /activate/{code}: a user sees the options of an unused code without network data; used, unknown and malformed codes read 404', async () => {
  const w = await activationWorld(h);
  const eui = w.eui();
  const created = (await w.create(activationBody(w.tracker, w.hw(), [{ networkId: 'net1', data: { devEui: eui, applicationId: 'fleet', appSKey: '00112233445566778899AABBCCDDEEFF' } }, { networkId: 'net8' }]))).json;
  const typed = created.code.toLowerCase().replace(/(.{4})(?!$)/g, '$1-');
  const offer = await h.request('GET', `/activate/${typed}`, { token: w.user.token });
  assert.is(offer.status, 200, offer.text);
  assert.equal(offer.json.options.map((o: { id: string; network: unknown }) => [o.id, o.network]), [
    [created.options[0].id, { networkId: 'thethingsnetwork' }],
    [created.options[1].id, { networkId: 'orangebe' }],
  ]);
  assert.not.match(offer.text, /00112233445566778899AABBCCDDEEFF|devEui/i, 'no network data (session keys) for the user');
  assertProblem(await h.request('GET', `/activate/${created.code}`, { token: w.partner.token }), 403, 'FORBIDDEN');
  assertProblem(await h.request('GET', `/activate/${created.code}`), 401, 'UNAUTHORIZED');
  for (const bad of ['ZZZZZZZZZZZZZZZZ', "x'%20OR%201=1", '%00', 'a'.repeat(64)]) assertProblem(await h.request('GET', `/activate/${bad}`, { token: w.user.token }), 404, 'NOT_FOUND');
  assertProblem(await h.request('GET', `/activate/${'a'.repeat(65)}`, { token: w.user.token }), 400, 'BAD_REQUEST');
  const redeemed = await h.request('POST', '/activate', { token: w.user.token, json: { code: created.code, option: created.options[1].id, groundId: w.groundId } });
  assert.is(redeemed.status, 201, redeemed.text);
  assertProblem(await h.request('GET', `/activate/${created.code}`, { token: w.user.token }), 404, 'NOT_FOUND');
});

test('the OpenAPI document describes /me, /grounds and /activate/{code}', async () => {
  const doc = (await h.request('GET', '/openapi.json')).json;
  for (const path of ['/me', '/grounds', '/activate/{code}']) assert.ok(doc.paths[path]?.get, path);
});

test.run();
