/**
 * The integration routes over real HTTP on loopback, once per registry adapter (PGlite; PostgreSQL
 * when DATABASE_URL_TEST is set): a member manages a ground's integrations, the secret is shown
 * once, rotation keeps the previous secret signing for its grace period, and the test event reaches
 * a real receiver signed so that a verifier written from the specification and the
 * `standardwebhooks` package both accept it. Hostile input is refused with stable codes.
 *
 * The operator allows 127.0.0.2 only (receivers listen there), so 127.0.0.1, ::1 and `localhost`
 * stand for the machine's own addresses a URL must not reach.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import type { RegistryChange } from '../../../engine/ports/registryChanges.ts';
import { suitePerRegistry, type RegistryFactory, type Seeded } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhookReceiver.ts';

const RECEIVER_HOST = '127.0.0.2';

/** Standard Webhooks, "Verifying webhooks": HMAC-SHA256 over `id.timestamp.body` with the decoded secret; any `v1,` entry may match. */
function specVerifies(secret: string, headers: Record<string, string | string[] | undefined>, body: string): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest();
  return String(headers['webhook-signature']).split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    const given = Buffer.from(signature ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

function libraryVerifies(secret: string, headers: Record<string, string | string[] | undefined>, body: string): boolean {
  try {
    new Webhook(secret).verify(body, headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

function integrationsSuite(factory: RegistryFactory) {
  const test = harnessSuite('http integrations', factory, { integrationsAllowHosts: [RECEIVER_HOST], clockStart: Date.now() });
  const receivers: WebhookReceiver[] = [];
  let s: Seeded;
  let stranger: Seeded;
  let ok: WebhookReceiver;

  test.before(async ({ h }) => {
    s = await h.seed();
    stranger = await h.seed();
    ok = await startWebhookReceiver((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks'), RECEIVER_HOST);
    receivers.push(ok);
  });
  test.after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
  });

  const create = (h: { request: (m: string, p: string, o: object) => Promise<{ status: number; json: any }> }, body: Record<string, unknown>, token = s.userToken, groundId = s.groundId) =>
    h.request('POST', `/ground/${groundId}/integrations`, { token, json: { name: 'app', kind: 'webhook', url: ok.url, events: ['state'], ...body } });

  test('create: 201 with the secret once; read, listed by pages, never the secret again; a registry change is published', async ({ h }) => {
    const heard: RegistryChange[] = [];
    const stop = h.changes.subscribe((change) => heard.push(change));
    const res = await h.request('POST', `/ground/${s.groundId}/integrations`, {
      token: s.userToken,
      json: { name: 'Dashboard', kind: 'webhook', url: ok.url, events: ['state', 'rejection', 'command', 'alarm'], devices: [s.deviceId], assets: ['temperature'], headers: { 'X-Api-Key': 'k-1' } },
    });
    stop();
    assert.is(res.status, 201, JSON.stringify(res.json));
    assert.match(res.json.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.is(res.headers.get('location'), `/integrations/${res.json.id}`);
    assert.is(res.headers.get('cache-control'), 'no-store');
    const { secret, ...integration } = res.json;
    assert.equal(integration, {
      id: integration.id, groundId: s.groundId, name: 'Dashboard', kind: 'webhook', url: ok.url, events: ['state', 'rejection', 'command', 'alarm'],
      devices: [s.deviceId], assets: ['temperature'], headers: { 'x-api-key': 'k-1' }, status: 'active', createdAt: integration.createdAt, updatedAt: integration.createdAt,
    });
    assert.ok(heard.some((c) => c.kind === 'integration-changed' && c.integrationId === integration.id && c.groundId === s.groundId), JSON.stringify(heard));
    const read = await h.request('GET', `/integrations/${integration.id}`, { token: s.userToken });
    assert.is(read.status, 200);
    assert.equal(read.json, { ...integration, delivered: 0, failedAttempts: 0, pending: { events: 0 }, dropped: 0 }, 'with its delivery figures, none yet');
    assert.not.ok(read.text.includes(secret), 'the secret is never answered again');
    for (let i = 0; i < 3; i++) assert.is((await create(h, { name: `more-${i}` })).status, 201);
    const first = await h.request('GET', `/ground/${s.groundId}/integrations?limit=2`, { token: s.userToken });
    assert.is(first.status, 200);
    assert.is(first.json.items.length, 2);
    assert.type(first.json.next, 'string');
    const rest = await h.request('GET', `/ground/${s.groundId}/integrations?cursor=${first.json.next}`, { token: s.userToken });
    const ids = [...first.json.items, ...rest.json.items].map((i: { id: string }) => i.id);
    assert.is(ids.length, 4);
    assert.is(ids[0], integration.id);
    assert.not.ok(JSON.stringify(rest.json).includes('whsec_'));
    assert.is((await h.request('GET', `/ground/${s.groundId}/integrations?cursor=bm90LWEtY3Vyc29y`, { token: s.userToken })).status, 422);
  });

  test('test: one signed test event through the sender; the receiver\'s answer comes back; both verifiers accept the signature', async ({ h }) => {
    const created = (await create(h, { headers: { authorization: 'Bearer receiver-key' } })).json;
    const before = ok.received.length;
    const res = await h.request('POST', `/integrations/${created.id}/test`, { token: s.userToken });
    assert.is(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.json, { outcome: 'delivered', status: 200, body: 'thanks', messageId: res.json.messageId });
    assert.is(ok.received.length, before + 1);
    const got = ok.received[before];
    assert.is(got.headers['webhook-id'], res.json.messageId);
    assert.is(got.headers.authorization, 'Bearer receiver-key');
    const body = JSON.parse(got.body);
    assert.is(body.events.length, 1);
    assert.equal({ type: body.events[0].type, groundId: body.events[0].groundId, integrationId: body.events[0].integrationId }, { type: 'test', groundId: s.groundId, integrationId: created.id });
    assert.ok(specVerifies(created.secret, got.headers, got.body));
    assert.ok(libraryVerifies(created.secret, got.headers, got.body));
    assert.not.ok(libraryVerifies(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, got.headers, got.body), 'another secret does not verify');
  });

  test('test: a receiver answering 410, 429 with Retry-After, or not listening is reported, and the integration stays as it was', async ({ h }) => {
    const gone = await startWebhookReceiver((_req, res) => res.writeHead(410).end('gone'), RECEIVER_HOST);
    const busy = await startWebhookReceiver((_req, res) => res.writeHead(429, { 'retry-after': '30' }).end(), RECEIVER_HOST);
    receivers.push(gone, busy);
    const a = (await create(h, { url: gone.url })).json;
    const goneAnswer = await h.request('POST', `/integrations/${a.id}/test`, { token: s.userToken });
    assert.equal({ ...goneAnswer.json, messageId: undefined }, { outcome: 'disable', status: 410, body: 'gone', messageId: undefined });
    assert.is((await h.request('GET', `/integrations/${a.id}`, { token: s.userToken })).json.status, 'active', 'a test does not disable');
    const b = (await create(h, { url: busy.url })).json;
    const busyAnswer = await h.request('POST', `/integrations/${b.id}/test`, { token: s.userToken });
    assert.is(busyAnswer.json.outcome, 'retry');
    assert.is(busyAnswer.json.status, 429);
    assert.is(busyAnswer.json.retryAfterMs, 30_000);
    const closedPort = gone.port;
    await gone.close();
    const down = await h.request('POST', `/integrations/${a.id}/test`, { token: s.userToken });
    assert.is(down.json.outcome, 'retry');
    assert.match(down.json.error, /^ECONNREFUSED/, `port ${closedPort}`);
  });

  test('rotate: a new secret once; the previous one signs too for the grace period (default 24 h), not with graceSeconds=0', async ({ h }) => {
    const created = (await create(h, {})).json;
    const rotated = await h.request('POST', `/integrations/${created.id}/rotate-secret`, { token: s.userToken });
    assert.is(rotated.status, 200, JSON.stringify(rotated.json));
    assert.is(rotated.headers.get('cache-control'), 'no-store');
    assert.match(rotated.json.secret, /^whsec_/);
    assert.is.not(rotated.json.secret, created.secret);
    assert.is(rotated.json.previousSecretValidUntil, rotated.json.updatedAt + 24 * 3600 * 1000, 'the registry\'s clock: 24 h after the rotation');
    const before = ok.received.length;
    await h.request('POST', `/integrations/${created.id}/test`, { token: s.userToken });
    const during = ok.received[before];
    assert.is(String(during.headers['webhook-signature']).split(' ').length, 2);
    assert.ok(libraryVerifies(rotated.json.secret, during.headers, during.body), 'the new secret verifies');
    assert.ok(libraryVerifies(created.secret, during.headers, during.body), 'the previous one still verifies');
    const leaked = await h.request('POST', `/integrations/${created.id}/rotate-secret?graceSeconds=0`, { token: s.userToken });
    assert.is(leaked.status, 200);
    assert.is(leaked.json.previousSecretValidUntil, undefined);
    await h.request('POST', `/integrations/${created.id}/test`, { token: s.userToken });
    const after = ok.received[before + 1];
    assert.ok(libraryVerifies(leaked.json.secret, after.headers, after.body));
    assert.not.ok(libraryVerifies(rotated.json.secret, after.headers, after.body), 'a grace of 0: the previous secret no longer signs');
    for (const bad of ['-1', '604801', 'soon', '1.5']) {
      const res = await h.request('POST', `/integrations/${created.id}/rotate-secret?graceSeconds=${bad}`, { token: s.userToken });
      assert.is(res.status, 422, bad);
      assert.is(res.json.code, 'VALIDATION_FAILED');
    }
  });

  test('patch and delete: fields change, status disables and re-enables, a refused URL changes nothing; deleted is gone', async ({ h }) => {
    const created = (await create(h, {})).json;
    const renamed = await h.request('PATCH', `/integrations/${created.id}`, { token: s.userToken, json: { name: 'renamed', events: ['command'], status: 'disabled' } });
    assert.is(renamed.status, 200, JSON.stringify(renamed.json));
    assert.equal([renamed.json.name, renamed.json.events, renamed.json.status, renamed.json.disabledReason], ['renamed', ['command'], 'disabled', 'manual']);
    const enabled = await h.request('PATCH', `/integrations/${created.id}`, { token: s.userToken, json: { status: 'active' } });
    assert.equal([enabled.json.status, enabled.json.disabledReason], ['active', undefined]);
    const refused = await h.request('PATCH', `/integrations/${created.id}`, { token: s.userToken, json: { url: 'https://169.254.169.254/latest/meta-data/' } });
    assert.is(refused.status, 422);
    assert.is(refused.json.code, 'DESTINATION_REFUSED');
    assert.is((await h.request('GET', `/integrations/${created.id}`, { token: s.userToken })).json.url, ok.url);
    assert.is((await h.request('PATCH', `/integrations/${created.id}`, { token: s.userToken, json: { groundId: stranger.groundId } })).status, 422);
    assert.is((await h.request('DELETE', `/integrations/${created.id}`, { token: s.userToken })).status, 204);
    assert.is((await h.request('GET', `/integrations/${created.id}`, { token: s.userToken })).status, 404);
    assert.is((await h.request('DELETE', `/integrations/${created.id}`, { token: s.userToken })).status, 404);
  });

  test('SSRF: URLs reaching the machine, its networks or the cloud metadata endpoint are refused at create time', async ({ h }) => {
    for (const url of ['https://127.0.0.1/hook', `http://127.0.0.1:${ok.port}/hook`, 'https://[::1]/hook', 'https://10.0.0.5/hook', 'https://192.168.1.10/', 'https://172.16.0.1/',
      'https://169.254.169.254/latest/meta-data/', 'https://[fd00:ec2::254]/', 'https://100.64.0.1/', 'https://localhost/hook', 'https://2130706433/', 'https://0x7f.1/',
      'https://017700000001/', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:169.254.169.254]/', 'https://0.0.0.0/', 'http://93.184.215.14/plain-http']) {
      const res = await create(h, { url });
      assert.is(res.status, 422, url);
      assert.is(res.json.code, 'DESTINATION_REFUSED', url);
      assert.equal(res.json.errors.map((e: { path: string }) => e.path), ['body.url'], url);
    }
    assert.is((await create(h, { url: 'https://93.184.215.14/hook' })).status, 201, 'a public https address is fine');
  });

  test('hostile bodies: bad URLs, unknown events, kinds and fields, headers, names, sizes, types', async ({ h }) => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ url: 'ftp://x.example/' }, 'VALIDATION_FAILED', 'body.url'],
      [{ url: 'javascript:alert(1)' }, 'VALIDATION_FAILED', 'body.url'],
      [{ url: 'https://user:pw@x.example/' }, 'VALIDATION_FAILED', 'body.url'],
      [{ url: 'https://x.example/#f' }, 'VALIDATION_FAILED', 'body.url'],
      [{ url: 'https://x.example/' + 'a'.repeat(2100) }, 'VALIDATION_FAILED', 'body.url'],
      [{ url: 42 }, 'VALIDATION_FAILED', 'body.url'],
      [{ events: ['state', 'everything'] }, 'VALIDATION_FAILED', 'body.events.1'],
      [{ events: [] }, 'VALIDATION_FAILED', 'body.events'],
      [{ events: ['state', 'state'] }, 'VALIDATION_FAILED', 'body.events'],
      [{ kind: 'mqtt' }, 'VALIDATION_FAILED', 'body.kind'],
      [{ secret: 'whsec_chosen' }, 'VALIDATION_FAILED', 'body.secret'],
      [{ devices: ['not-an-id'] }, 'VALIDATION_FAILED', 'body.devices.0'],
      [{ devices: [stranger.deviceId] }, 'VALIDATION_FAILED', 'body.devices'],
      [{ assets: ['../etc'] }, 'VALIDATION_FAILED', 'body.assets.0'],
      [{ headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v'])) }, 'VALIDATION_FAILED', 'body.headers'],
      [{ headers: { 'Webhook-Signature': 'v1,forged' } }, 'VALIDATION_FAILED', 'body.headers.Webhook-Signature'],
      [{ headers: { host: 'internal.example' } }, 'VALIDATION_FAILED', 'body.headers.host'],
      [{ headers: { 'x-inject': 'a\r\nx-evil: 1' } }, 'VALIDATION_FAILED', 'body.headers.x-inject'],
      [{ headers: { 'x-num': 5 } }, 'VALIDATION_FAILED', 'body.headers.x-num'],
      [{ name: '' }, 'VALIDATION_FAILED', 'body.name'],
      [{ name: 'x'.repeat(129) }, 'VALIDATION_FAILED', 'body.name'],
      [{ name: 'app\u200Bx' }, 'VALIDATION_FAILED', 'body.name'],
      [{ name: 'pay\u202Egnp.exe' }, 'VALIDATION_FAILED', 'body.name'],
      [{ name: 'a\u0000b' }, 'VALIDATION_FAILED', 'body.name'],
      [{ name: 'lone \ud800' }, 'VALIDATION_FAILED', 'body.name'],
    ];
    for (const [body, code, path] of cases) {
      const res = await create(h, body);
      assert.is(res.status, 422, `${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(res.json)}`);
      assert.is(res.json.code, code, JSON.stringify(body).slice(0, 80));
      assert.ok(res.json.errors.some((e: { path: string }) => e.path === path), `${JSON.stringify(body).slice(0, 80)} → ${JSON.stringify(res.json.errors)}`);
    }
    const canonical = await create(h, { name: '\uFEFFZu\u0308rich' });
    assert.is(canonical.status, 201);
    assert.is(canonical.json.name, 'Z\u00fcrich', 'a BOM dropped, NFC');
    const big = await h.request('POST', `/ground/${s.groundId}/integrations`, { token: s.userToken, json: { name: 'x', kind: 'webhook', url: ok.url, events: ['state'], pad: 'x'.repeat(70_000) } });
    assert.is(big.status, 413);
    assert.is(big.json.code, 'PAYLOAD_TOO_LARGE');
    const notJson = await h.request('POST', `/ground/${s.groundId}/integrations`, { token: s.userToken, body: '{"name":', contentType: 'application/json' });
    assert.is(notJson.json.code, 'MALFORMED_JSON');
    const text = await h.request('POST', `/ground/${s.groundId}/integrations`, { token: s.userToken, body: 'name=x', contentType: 'text/plain' });
    assert.is(text.status, 415);
    const array = await h.request('POST', `/ground/${s.groundId}/integrations`, { token: s.userToken, json: [] });
    assert.is(array.status, 422);
  });

  test('who may: members only; another ground\'s integration does not exist for them; forged ids; other token kinds', async ({ h }) => {
    const mine = (await create(h, {})).json;
    for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/rotate-secret'], ['POST', '/test']] as const) {
      const res = await h.request(method, `/integrations/${mine.id}${path}`, { token: stranger.userToken, ...(method === 'PATCH' ? { json: { name: 'mine now' } } : {}) });
      assert.is(res.status, 404, `${method} ${path}`);
      assert.is(res.json.code, 'NOT_FOUND');
    }
    assert.is((await h.request('GET', `/integrations/${mine.id}`, { token: s.userToken })).json.name, 'app', 'unchanged by the stranger');
    assert.is((await create(h, {}, stranger.userToken, s.groundId)).status, 403, 'creating in a ground of which one is not a member');
    assert.is((await h.request('GET', `/ground/${s.groundId}/integrations`, { token: stranger.userToken })).status, 403);
    const unknown = 'A'.repeat(22);
    assert.is((await h.request('GET', `/integrations/${unknown}`, { token: s.userToken })).status, 404);
    assert.is((await create(h, {}, s.userToken, unknown)).status, 404, 'an unknown ground');
    for (const forged of ['short', `${mine.id}x`, "x'--aaaaaaaaaaaaaaaaaa", '%00aaaaaaaaaaaaaaaaaaaaa']) {
      const res = await h.request('GET', `/integrations/${forged}`, { token: s.userToken });
      assert.is(res.status, 400, forged);
      assert.is(res.json.code, 'BAD_REQUEST', forged);
    }
    assert.is((await h.request('GET', `/integrations/${mine.id}`, { token: s.deviceToken })).status, 403, 'a device token');
    assert.is((await h.request('GET', `/integrations/${mine.id}`)).status, 401);
    assert.is((await create(h, {}, s.deviceToken)).status, 403);
  });

  test('the routes are in the OpenAPI document', async ({ h }) => {
    const doc = (await h.request('GET', '/openapi.json')).json;
    for (const [path, method] of [['/ground/{groundId}/integrations', 'post'], ['/ground/{groundId}/integrations', 'get'], ['/integrations/{id}', 'get'], ['/integrations/{id}', 'patch'],
      ['/integrations/{id}', 'delete'], ['/integrations/{id}/rotate-secret', 'post'], ['/integrations/{id}/test', 'post']] as const) {
      assert.ok(doc.paths[path]?.[method], `${method} ${path}`);
    }
  });

  return test;
}

for (const s of suitePerRegistry('http-integrations', integrationsSuite)) s.run();
