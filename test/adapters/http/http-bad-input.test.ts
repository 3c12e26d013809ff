/**
 * Bad input at the HTTP edge: malformed bodies, wrong content types, oversized bodies (with and
 * without Content-Length), malformed ids, unknown devices and assets, injection attempts, values
 * their profile refuses, rate limiting and backpressure. Every answer is a clear problem+json;
 * nothing is appended that should not be, and nothing valid is lost.
 */
import { request as httpRequest } from 'node:http';
import { encode as encodeCbor } from 'cbor-x';
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { StateStore } from '../../../engine/ports/store.ts';
import { EdgeHarness, suitePerRegistry, type Reply, type RegistryFactory } from '../../support/edgeHarness.ts';

const MAX = 1024;

/** A store that only records what it was asked. */
function spyStore(calls: string[]): Pick<StateStore, 'latest' | 'history' | 'aggregate'> {
  return {
    latest: async (id) => { calls.push(`latest ${id}`); return []; },
    history: async (q) => { calls.push(`history ${JSON.stringify(q)}`); return []; },
    aggregate: async (q) => { calls.push(`aggregate ${JSON.stringify(q)}`); return []; },
  };
}

function problem(res: Reply, status: number, code: string, where = ''): void {
  assert.is(res.status, status, `${where} ${res.text}`);
  assert.is(res.headers.get('content-type'), 'application/problem+json', where);
  assert.is(res.json.code, code, where);
  assert.is(res.json.status, status, where);
  assert.type(res.json.detail, 'string');
}

/** Sends a body in chunks without Content-Length (Transfer-Encoding: chunked) over node:http. */
function chunked(base: string, path: string, token: string, chunks: Uint8Array[]): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    // The server may answer and close before the client finished sending: that is the point.
    req.on('error', (error) => (error as NodeJS.ErrnoException).code === 'EPIPE' || (error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error));
    let i = 0;
    const next = () => {
      if (i < chunks.length) {
        req.write(chunks[i++], () => setImmediate(next));
      } else {
        req.end();
      }
    };
    next();
  });
}

function badInputSuite(factory: RegistryFactory) {
  const test = suite<{ h: EdgeHarness; calls: string[]; factory: Awaited<ReturnType<RegistryFactory['create']>> }>(`http bad input (${factory.name})`);

  test.before(async (ctx) => {
    ctx.factory = await factory.create();
    ctx.calls = [];
    ctx.h = await EdgeHarness.start({ registry: ctx.factory.registry, database: ctx.factory.database, store: spyStore(ctx.calls), limits: { maxBodyBytes: MAX } });
  });

  test.after(async (ctx) => {
    await ctx.h.close();
    await ctx.factory.dispose();
  });

  test('malformed JSON and CBOR → 400, nothing appended; the next valid uplink goes through', async ({ h }) => {
    const s = await h.seed();
    const cases: [string, string | Uint8Array, string, number, string][] = [
      ['/state', '{"temperature": {"value": 1}', 'application/json', 400, 'MALFORMED_JSON'],
      ['/state', '', 'application/json', 400, 'MALFORMED_JSON'],
      ['/state', new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), 'application/json', 400, 'MALFORMED_JSON'],
      ['/state', 'temperature=1', 'application/json', 400, 'MALFORMED_JSON'],
      ['/state', '[1,2]', 'application/json', 422, 'INVALID_STATE'],
      ['/state', 'null', 'application/json', 422, 'INVALID_STATE'],
      ['/state', '['.repeat(500) + ']'.repeat(500), 'application/json', 422, 'TOO_DEEP'],
      ['/state', new Uint8Array([0xa1, 0x61, 0x61]), 'application/cbor', 400, 'MALFORMED_CBOR'],
      ['/state', new Uint8Array([0xa1, 0x61, 0x61, 0x01, 0x01]), 'application/cbor', 400, 'MALFORMED_CBOR'],
      ['/state', new Uint8Array([0xff]), 'application/cbor', 400, 'MALFORMED_CBOR'],
      ['/state', new Uint8Array([0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), 'application/cbor', 400, 'MALFORMED_CBOR'],
      ['/state', new Uint8Array([0x5a, 0x7f, 0xff, 0xff, 0xff, 0x00]), 'application/cbor', 400, 'MALFORMED_CBOR'],
      ['/state', new Uint8Array(400).fill(0x81), 'application/cbor', 422, 'TOO_DEEP'],
      ['/state', encodeCbor([1, 2]), 'application/cbor', 422, 'INVALID_STATE'],
      ['/state', new Uint8Array(0), 'application/cbor', 400, 'MALFORMED_CBOR'],
      ['/asset/temperature/state', '{"value": ', 'application/json', 400, 'MALFORMED_JSON'],
      ['/asset/temperature/state', '{"val": 1}', 'application/json', 422, 'INVALID_STATE'],
      ['/asset/temperature/state', '42', 'application/json', 422, 'INVALID_STATE'],
    ];
    for (const [suffix, body, contentType, status, code] of cases) {
      const before = h.appended.length;
      const res = await h.request('PUT', `/device/${s.deviceId}${suffix}`, { token: s.deviceToken, body, contentType });
      problem(res, status, code, `${contentType} ${typeof body === 'string' ? body.slice(0, 30) : Buffer.from(body.slice(0, 12)).toString('hex')}`);
      assert.is(h.appended.length, before, 'nothing appended');
    }
    const ok = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { temperature: { value: 1 } } });
    assert.is(ok.status, 202);
  });

  test('wrong content types → 415 naming what is accepted', async ({ h }) => {
    const s = await h.seed();
    const cases: [string, string | undefined][] = [
      [`/device/${s.deviceId}/state`, 'text/plain'],
      [`/device/${s.deviceId}/state`, undefined],
      [`/device/${s.deviceId}/state`, 'application/xml'],
      [`/device/${s.deviceId}/state`, 'application/json; charset=latin1'],
      [`/device/${s.deviceId}/state`, 'application/x-www-form-urlencoded'],
      [`/device/${s.deviceId}/asset/temperature/state`, 'application/cbor'],
      [`/asset/${s.assetIds.temperature}/state`, 'multipart/form-data; boundary=x'],
      [`/device/${s.deviceId}/assets`, 'text/plain'],
    ];
    for (const [path, contentType] of cases) {
      const method = path.endsWith('/assets') ? 'POST' : 'PUT';
      const before = h.appended.length;
      const res = await h.request(method, path, { token: s.deviceToken, body: '{"value":1}', contentType, headers: contentType === undefined ? { 'content-type': '' } : {} });
      problem(res, 415, 'UNSUPPORTED_CONTENT_TYPE', `${path} ${contentType}`);
      assert.match(res.json.detail, /application\/json/);
      assert.is(h.appended.length, before);
    }
    const created = await h.request('POST', `/ground/${s.groundId}/devices`, { token: s.userToken, body: '{"name":"x"}', contentType: 'text/json' });
    problem(created, 415, 'UNSUPPORTED_CONTENT_TYPE');
  });

  test('bodies over the limit → 413, with or without Content-Length; at the limit → accepted', async ({ h }) => {
    const s = await h.seed([{ name: 'blob', profile: { type: 'string' } }]);
    const sized = (n: number) => {
      const prefix = '{"blob":{"value":"';
      const suffix = '"}}';
      return prefix + 'x'.repeat(n - prefix.length - suffix.length) + suffix;
    };
    let before = h.appended.length;
    const big = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, body: sized(MAX + 1), contentType: 'application/json' });
    problem(big, 413, 'PAYLOAD_TOO_LARGE');
    assert.is(h.appended.length, before);
    const exact = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, body: sized(MAX), contentType: 'application/json' });
    assert.is(exact.status, 202, exact.text);
    assert.is(h.appended.length, before + 1);

    // Chunked, no Content-Length: counted while it streams.
    before = h.appended.length;
    const text = new TextEncoder().encode(sized(MAX * 4));
    const streamed = await chunked(h.base, `/device/${s.deviceId}/state`, s.deviceToken, [text.slice(0, 700), text.slice(700, 1400), text.slice(1400)]);
    assert.is(streamed.status, 413, streamed.body);
    assert.is(JSON.parse(streamed.body).code, 'PAYLOAD_TOO_LARGE');
    assert.is(h.appended.length, before);
    const small = new TextEncoder().encode(sized(MAX));
    const fits = await chunked(h.base, `/device/${s.deviceId}/state`, s.deviceToken, [small.slice(0, 500), small.slice(500)]);
    assert.is(fits.status, 202, fits.body);
    assert.is(h.appended.length, before + 1);
    assert.is(new TextDecoder().decode(h.appended[before].body), sized(MAX), 'chunks joined as sent');

    const huge = await h.request('PUT', `/device/${s.deviceId}/asset/blob`, { token: s.deviceToken, json: { title: 'x'.repeat(MAX * 2) } });
    problem(huge, 413, 'PAYLOAD_TOO_LARGE');
  });

  test('malformed ids and asset names → 400 before any lookup; unknown ones → 404', async ({ h, calls }) => {
    const s = await h.seed();
    const malformed = [
      `/device/abc/state`,
      `/device/${s.deviceId}x/state`,
      `/device/${s.deviceId.slice(0, 21)}-/state`,
      `/device/${encodeURIComponent("1' OR '1'='1")}/state`,
      `/device/${encodeURIComponent('x; DROP TABLE devices;--')}`,
      `/device/${s.deviceId}/asset/${encodeURIComponent('temp\'--')}/state`,
      `/device/${s.deviceId}/asset/${encodeURIComponent('../../etc')}`,
      `/device/${s.deviceId}/asset/%00/state`,
      `/device/${s.deviceId}/asset/${'a'.repeat(65)}/states`,
      `/asset/${encodeURIComponent('%')}/state`,
      `/ground/${encodeURIComponent('g OR 1=1')}/devices`,
    ];
    calls.length = 0;
    for (const path of malformed) {
      const res = await h.request('GET', path, { token: s.userToken });
      problem(res, 400, 'BAD_REQUEST', path);
      assert.ok(res.json.errors.length > 0 && res.json.errors.every((e: { path: string }) => e.path.startsWith('path.')), path);
    }
    const put = await h.request('PUT', `/device/${encodeURIComponent("' OR 1=1 --")}/state`, { token: s.userToken, json: { temperature: { value: 1 } } });
    problem(put, 400, 'BAD_REQUEST');
    assert.equal(calls, [], 'no store query for a malformed id');

    const ghost = 'A'.repeat(22);
    problem(await h.request('GET', `/device/${ghost}`, { token: s.userToken }), 404, 'UNKNOWN_DEVICE');
    problem(await h.request('PUT', `/device/${ghost}/state`, { token: s.userToken, json: {} }), 404, 'UNKNOWN_DEVICE');
    problem(await h.request('GET', `/ground/${ghost}/devices`, { token: s.userToken }), 404, 'NOT_FOUND');
    problem(await h.request('PUT', `/device/${s.deviceId}/asset/nosuch/state`, { token: s.deviceToken, json: { value: 1 } }), 404, 'UNKNOWN_ASSET');
    problem(await h.request('GET', `/device/${s.deviceId}/asset/nosuch/states`, { token: s.deviceToken }), 404, 'UNKNOWN_ASSET');
    problem(await h.request('PUT', `/asset/${ghost}/state`, { token: s.userToken, json: { value: 1 } }), 404, 'UNKNOWN_ASSET');
    problem(await h.request('PUT', `/asset/${ghost}/state`, { token: s.deviceToken, json: { value: 1 } }), 403, 'FORBIDDEN');
    problem(await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { nosuch: { value: 1 } } }), 404, 'UNKNOWN_ASSET');
  });

  test('query parameters: injection attempts and out-of-range values → 422 naming the field, no store query', async ({ h, calls }) => {
    const s = await h.seed();
    const base = `/device/${s.deviceId}/asset/temperature/states`;
    const cases: [string, string][] = [
      ['from=1;DROP TABLE states', 'query.from'],
      ["from=2024-01-01' OR '1'='1", 'query.from'],
      ['to=yesterday', 'query.to'],
      ['from=-5', 'query.from'],
      ['limit=1 OR 1=1', 'query.limit'],
      ['limit=0', 'query.limit'],
      ['limit=1001', 'query.limit'],
      ['limit=1.5', 'query.limit'],
      ['limit=1e3', 'query.limit'],
      ['limit=0x10', 'query.limit'],
      ['limit=007', 'query.limit'],
      ['order=desc;--', 'query.order'],
      ['resolution=week', 'query.resolution'],
      ["cursor=' OR '1'='1", 'query.cursor'],
      ['cursor=bm90IGEgY3Vyc29y', 'query.cursor'],
      [`cursor=${Buffer.from(JSON.stringify([1, 'x', 'asc'])).toString('base64url')}`, 'query.cursor'],
      ['limit=1&limit=2', 'query.limit'],
      ['foo=bar', 'query.foo'],
      ['from=2000&to=1000', 'query.from'],
      ['resolution=minute&from=0&to=8640000000000', 'query.from'],
      ['resolution=hour&cursor=abc', 'query.cursor'],
      ['resolution=hour&limit=5', 'query.limit'],
    ];
    calls.length = 0;
    for (const [query, field] of cases) {
      const res = await h.request('GET', `${base}?${query}`, { token: s.deviceToken });
      problem(res, 422, 'VALIDATION_FAILED', query);
      assert.ok(res.json.errors.some((e: { path: string }) => e.path === field), `${query}: ${JSON.stringify(res.json.errors)}`);
    }
    // An unknown resolution names the ones there are, in the message and in the field's entry.
    const week = await h.request('GET', `${base}?resolution=week`, { token: s.deviceToken });
    problem(week, 422, 'VALIDATION_FAILED');
    assert.equal(week.json.errors, [{ path: 'query.resolution', message: 'must be one of "minute", "hour", "day"' }]);
    assert.match(week.json.detail, 'query.resolution: must be one of "minute", "hour", "day"');
    const rejections = await h.request('GET', `/device/${s.deviceId}/rejections?limit=abc`, { token: s.deviceToken });
    problem(rejections, 422, 'VALIDATION_FAILED');
    assert.equal(calls, [], 'nothing reached the store');
    const fine = await h.request('GET', `${base}?from=2024-01-01T00:00:00Z&to=1704153600000&limit=10&order=asc`, { token: s.deviceToken });
    assert.is(fine.status, 200);
    assert.equal(calls, [`history ${JSON.stringify({ deviceId: s.deviceId, asset: 'temperature', order: 'asc', from: 1704067200000, to: 1704153600000, limit: 11 })}`]);
  });

  test('values their profile refuses → 422 at once (asset state, or a device state of only bad values); partly good → 202 listing the dropped', async ({ h }) => {
    const s = await h.seed([{ name: 'temperature', profile: { type: 'number', minimum: -50, maximum: 100 } }, { name: 'door', profile: { type: 'boolean' } }]);
    const before = h.appended.length;
    problem(await h.request('PUT', `/device/${s.deviceId}/asset/temperature/state`, { token: s.deviceToken, json: { value: 'hot' } }), 422, 'PROFILE_VIOLATION');
    problem(await h.request('PUT', `/asset/${s.assetIds.temperature}/state`, { token: s.deviceToken, json: { value: 500 } }), 422, 'PROFILE_VIOLATION');
    problem(await h.request('PUT', `/asset/${s.assetIds.temperature}/state`, { token: s.deviceToken, json: { value: 5, at: 'yesterday' } }), 422, 'INVALID_AT');
    problem(await h.request('PUT', `/asset/${s.assetIds.temperature}/state`, { token: s.deviceToken, json: { value: 5, at: 1714564800000 } }), 422, 'INVALID_AT');
    const allBad = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { temperature: { value: 'x' }, door: { value: 3 } } });
    problem(allBad, 422, 'PROFILE_VIOLATION');
    assert.equal(allBad.json.errors.map((e: { path: string }) => e.path), ['body.temperature', 'body.door']);
    assert.is(h.appended.length, before, 'refused uplinks are not appended');

    const partly = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { temperature: { value: 21 }, door: { value: 'open' } } });
    assert.is(partly.status, 202, partly.text);
    assert.equal(partly.json.rejected.map((r: { asset: string; code: string }) => [r.asset, r.code]), [['door', 'PROFILE_VIOLATION']]);
    assert.is(h.appended.length, before + 1, 'the good value is not lost');
    const cbor = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, body: encodeCbor({ temperature: 'warm' }), contentType: 'application/cbor' });
    problem(cbor, 422, 'PROFILE_VIOLATION');
  });

  test('asset profiles outside the supported JSON Schema subset → 422 naming the profile, nothing saved', async ({ h }) => {
    const s = await h.seed();
    const post = await h.request('POST', `/device/${s.deviceId}/assets`, { token: s.deviceToken, json: { name: 'bad', is: 'sensor', profile: { type: 'float' } } });
    problem(post, 422, 'VALIDATION_FAILED');
    assert.equal(post.json.errors.map((e: { path: string }) => e.path), ['body.profile']);
    const put = await h.request('PUT', `/device/${s.deviceId}/asset/temperature`, { token: s.deviceToken, json: { profile: { type: 'number', minimum: 'low' } } });
    problem(put, 422, 'VALIDATION_FAILED');
    const created = await h.request('POST', `/ground/${s.groundId}/devices`, { token: s.userToken, json: { name: 'p', assets: [{ name: 'ok', is: 'sensor' }, { name: 'x', is: 'sensor', profile: { $ref: 'http://evil' } }] } });
    problem(created, 422, 'VALIDATION_FAILED');
    assert.equal(created.json.errors.map((e: { path: string }) => e.path), ['body.assets.1.profile']);
    const assets = (await h.request('GET', `/device/${s.deviceId}/assets`, { token: s.deviceToken })).json;
    assert.equal(assets.map((a: { name: string }) => a.name), ['door', 'temperature']);
    assert.equal(assets.find((a: { name: string }) => a.name === 'temperature').profile, { type: 'number' });
  });

  test('rate limit per token → 429 with Retry-After (simulated clock); other tokens unaffected; nothing appended', async ({ factory: f }) => {
    const h = await EdgeHarness.start({ registry: f.registry, database: f.database, limits: { rateLimit: { perSecond: 2, burst: 3 } } });
    try {
      const s = await h.seed();
      const send = (token: string) => h.request('PUT', `/device/${s.deviceId}/state`, { token, json: { temperature: { value: 1 } } });
      for (let i = 0; i < 3; i++) assert.is((await send(s.deviceToken)).status, 202);
      const before = h.appended.length;
      const limited = await send(s.deviceToken);
      problem(limited, 429, 'RATE_LIMITED');
      assert.is(limited.headers.get('retry-after'), '1');
      assert.is(h.appended.length, before);
      assert.is((await h.request('GET', `/device/${s.deviceId}`, { token: s.deviceToken })).status, 429, 'every route counts');
      assert.is((await send(s.userToken)).status, 202, 'another token has its own bucket');
      h.clock.advance(500);
      assert.is((await send(s.deviceToken)).status, 202, 'one token back after 1/perSecond');
      assert.is((await send(s.deviceToken)).status, 429);
      h.clock.advance(10_000);
      for (let i = 0; i < 3; i++) assert.is((await send(s.deviceToken)).status, 202, 'refilled up to burst');
      assert.is((await send(s.deviceToken)).status, 429);
    } finally {
      await h.close();
    }
  });

  test('backpressure → 503 + Retry-After, nothing appended; the retried uplink is accepted', async ({ factory: f }) => {
    let blocked = true;
    const h = await EdgeHarness.start({
      registry: f.registry, database: f.database,
      beforeAppend: () => (blocked
        ? Promise.reject(new FleetError('BACKPRESSURE', 'engine behind', { detail: { retryAfter: 2 } }))
        : Promise.resolve()),
    });
    try {
      const s = await h.seed();
      const res = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { temperature: { value: 7 } } });
      problem(res, 503, 'BACKPRESSURE');
      assert.is(res.headers.get('retry-after'), '2');
      assert.is(h.appended.length, 0);
      blocked = false;
      const retry = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { temperature: { value: 7 } } });
      assert.is(retry.status, 202);
      assert.is(h.appended.length, 1);
    } finally {
      await h.close();
    }
  });

  test('a stalled log: no 202 before durable; over the ingest bound 503 at once; the waiting uplinks all land', async ({ factory: f }) => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const h = await EdgeHarness.start({ registry: f.registry, database: f.database, beforeAppend: () => gate, maxPending: 2, retryAfterSeconds: 5 });
    try {
      const s = await h.seed();
      const send = (v: number) => h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { temperature: { value: v } } });
      let answered = 0;
      const waiting = [send(1), send(2)].map((p) => p.then((r) => { answered++; return r; }));
      while (h.ingest.pending < 2) await new Promise((r) => setTimeout(r, 5));
      const refused = await send(3);
      problem(refused, 503, 'BACKPRESSURE');
      assert.is(refused.headers.get('retry-after'), '5');
      assert.is(answered, 0, 'nothing acknowledged while the log has not confirmed');
      release();
      assert.equal((await Promise.all(waiting)).map((r) => r.status), [202, 202]);
      assert.equal(h.appended.map((e) => JSON.parse(new TextDecoder().decode(e.body)).temperature.value).sort(), [1, 2]);
    } finally {
      await h.close();
    }
  });

  return test;
}

for (const s of suitePerRegistry('http-bad-input', badInputSuite)) s.run();
