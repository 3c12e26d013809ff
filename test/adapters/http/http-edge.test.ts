/**
 * The HTTP edge over real HTTP on loopback: devices, assets, uplinks into the real local log, and
 * reads from a real chDB store. Runs once per registry adapter (PGlite; PostgreSQL when
 * DATABASE_URL_TEST is set).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encode as encodeCbor } from 'cbor-x';
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { decodeEnvelope } from '../../../engine/uplink/envelope.ts';
import type { LogRecord } from '../../../engine/ports/log.ts';
import type { StateRow } from '../../../schemas/messages.ts';
import { suitePerRegistry, type RegistryFactory, type Seeded } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';

const chdbDir = mkdtempSync(join(tmpdir(), 'fleetstream-edge-chdb-'));
const store = createChdbStore({ dir: chdbDir });
await store.init();

const MIN = 60_000;
const T0 = Date.UTC(2024, 4, 1, 12, 0, 0);

function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function edgeSuite(factory: RegistryFactory) {
  const test = harnessSuite('http edge', factory, { store });

  test('GET /health answers for probes; /openapi.json describes every route from the same schemas', async ({ h }) => {
    const health = await h.request('GET', '/health');
    assert.is(health.status, 200);
    assert.equal(health.json, { status: 'ok' });
    const doc = (await h.request('GET', '/openapi.json')).json;
    assert.is(doc.openapi, '3.1.0');
    const expected: [string, string][] = [
      ['/ground/{groundId}/devices', 'post'], ['/ground/{groundId}/devices', 'get'],
      ['/device/{id}', 'get'], ['/device/{id}', 'patch'], ['/device/{id}', 'delete'],
      ['/device/{id}/assets', 'get'], ['/device/{id}/assets', 'post'],
      ['/device/{id}/asset/{name}', 'get'], ['/device/{id}/asset/{name}', 'put'], ['/device/{id}/asset/{name}', 'delete'],
      ['/device/{id}/state', 'put'], ['/device/{id}/state', 'post'], ['/device/{id}/state', 'get'],
      ['/device/{id}/asset/{name}/state', 'put'], ['/device/{id}/asset/{name}/state', 'post'], ['/device/{id}/asset/{name}/state', 'get'],
      ['/asset/{assetId}/state', 'put'], ['/asset/{assetId}/state', 'post'], ['/asset/{assetId}/state', 'get'],
      ['/device/{id}/asset/{name}/states', 'get'], ['/asset/{assetId}/states', 'get'], ['/device/{id}/rejections', 'get'],
    ];
    for (const [path, method] of expected) assert.ok(doc.paths[path]?.[method], `${method} ${path} documented`);
    const put = doc.paths['/device/{id}/state'].put;
    assert.equal(Object.keys(put.requestBody.content).sort(), ['application/cbor', 'application/json']);
    assert.is(put.parameters[0].schema.pattern, '^[0-9A-Za-z]{22}$');
    assert.ok(put.responses['202'] && put.responses['415'] && put.responses['503'].headers['Retry-After']);
    assert.is(put.responses['401'].content['application/problem+json'].schema.$ref, '#/components/schemas/Problem');
    const history = doc.paths['/device/{id}/asset/{name}/states'].get;
    assert.equal(history.parameters.map((p: { name: string }) => p.name), ['id', 'name', 'from', 'to', 'limit', 'cursor', 'order', 'resolution', 'format']);
    assert.equal(Object.keys(history.responses['200'].content), ['application/json', 'text/csv', 'application/x-ndjson', 'application/vnd.apache.parquet']);
    assert.ok(history.responses['406'], 'an unknown format is documented');
    assert.equal(doc.paths['/ground/{groundId}/export'].get.parameters.map((p: { name: string }) => p.name), ['groundId', 'from', 'to', 'devices', 'assets', 'format']);
    assert.equal(history.parameters.find((p: { name: string }) => p.name === 'limit').schema, { type: 'integer', minimum: 1, maximum: 1000, description: 'page size, default 100' });
    const ids = new Set<string>();
    for (const item of Object.values(doc.paths) as Record<string, { operationId: string }>[]) {
      for (const op of Object.values(item)) {
        assert.not.ok(ids.has(op.operationId), `operationId ${op.operationId} unique`);
        ids.add(op.operationId);
      }
    }
  });

  test('devices of a ground page like the other lists: limit and cursor, oldest first, each device once', async ({ h }) => {
    const s = await h.seed([]);
    const ids = [s.deviceId];
    for (let i = 0; i < 6; i++) {
      const created = await h.request('POST', `/ground/${s.groundId}/devices`, { token: s.userToken, json: { name: `paged-${i}` } });
      assert.is(created.status, 201);
      ids.push(created.json.id);
    }
    for (const limit of [1, 2, 3, 7, 100]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await h.request('GET', `/ground/${s.groundId}/devices?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, { token: s.userToken });
        assert.is(page.status, 200);
        assert.ok(page.json.items.length <= limit);
        seen.push(...page.json.items.map((d: { id: string }) => d.id));
        cursor = page.json.next;
        pages++;
      } while (cursor !== undefined && pages < 20);
      assert.equal(seen, ids, `limit ${limit}`);
      assert.is(pages, Math.ceil(ids.length / limit), `limit ${limit}: no empty last page`);
    }
    for (const query of ['limit=0', 'limit=1001', 'cursor=bm9wZQ', 'cursor=%2F%2F', 'page=2']) {
      const bad = await h.request('GET', `/ground/${s.groundId}/devices?${query}`, { token: s.userToken });
      assert.equal([bad.status, bad.json.code], [422, 'VALIDATION_FAILED'], query);
    }
  });

  test('devices: create with assets (token shown once), list, read, rename, delete', async ({ h }) => {
    const s = await h.seed([]);
    const created = await h.request('POST', `/ground/${s.groundId}/devices`, {
      token: s.userToken,
      json: { name: 'weather-1', title: 'Weather station', assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }] },
    });
    assert.is(created.status, 201, created.text);
    const device = created.json;
    assert.match(device.token, /^fsd_[0-9A-Za-z]{43}$/);
    assert.is(device.groundId, s.groundId);
    assert.is(device.title, 'Weather station');
    assert.equal(device.assets.map((a: { name: string }) => a.name), ['led', 'temperature']);
    assert.is(created.headers.get('location'), `/device/${device.id}`);
    assert.ok(h.changed.includes(device.id));

    const list = await h.request('GET', `/ground/${s.groundId}/devices`, { token: s.userToken });
    assert.is(list.status, 200);
    // A page, like every list (limit + cursor); here all on one page, so no `next`.
    assert.equal(list.json.items.map((d: { id: string }) => d.id), [s.deviceId, device.id], 'oldest first');
    assert.is(list.json.next, undefined);
    assert.not.ok(list.json.items.some((d: object) => 'token' in d), 'tokens are shown once');

    for (const token of [s.userToken, device.token]) {
      const read = await h.request('GET', `/device/${device.id}`, { token });
      assert.is(read.status, 200);
      assert.is(read.json.name, 'weather-1');
      assert.is(read.json.assets.length, 2);
      assert.not.ok('token' in read.json);
    }

    const renamed = await h.request('PATCH', `/device/${device.id}`, { token: s.userToken, json: { name: 'weather-2', description: 'roof' } });
    assert.is(renamed.status, 200, renamed.text);
    assert.is(renamed.json.name, 'weather-2');
    assert.is(renamed.json.description, 'roof');
    assert.is(renamed.json.assets.length, 2);

    const dup = await h.request('POST', `/ground/${s.groundId}/devices`, { token: s.userToken, json: { name: 'weather-2' } });
    assert.is(dup.status, 409);
    assert.is(dup.json.code, 'CONFLICT');

    const deleted = await h.request('DELETE', `/device/${device.id}`, { token: s.userToken });
    assert.is(deleted.status, 204);
    assert.is((await h.request('GET', `/device/${device.id}`, { token: s.userToken })).status, 404);
    assert.is((await h.request('GET', `/device/${device.id}`, { token: device.token })).status, 401, 'its token is revoked');
  });

  test('devices: invalid fields → 422 naming each field', async ({ h }) => {
    const s = await h.seed([]);
    const bad = await h.request('POST', `/ground/${s.groundId}/devices`, {
      token: s.userToken,
      json: { name: '', colour: 'red', assets: [{ name: 'a/b', is: 'gizmo' }] },
    });
    assert.is(bad.status, 422);
    assert.is(bad.headers.get('content-type'), 'application/problem+json');
    assert.is(bad.json.code, 'VALIDATION_FAILED');
    const paths = bad.json.errors.map((e: { path: string }) => e.path);
    for (const p of ['body.name', 'body.colour', 'body.assets.0.name', 'body.assets.0.is']) assert.ok(paths.includes(p), `${p} in ${paths}`);
    assert.is(bad.json.errors.find((e: { path: string }) => e.path === 'body.colour').message, 'unknown field');
    const twice = await h.request('POST', `/ground/${s.groundId}/devices`, {
      token: s.userToken,
      json: { name: 'x', assets: [{ name: 'a', is: 'sensor' }, { name: 'a', is: 'sensor' }] },
    });
    assert.is(twice.status, 422, twice.text);
  });

  test('assets: the AllThingsTalk SDK shapes (list array, capitalised POST, PUT create/update) with the device token', async ({ h }) => {
    const s = await h.seed([{ name: 'temperature', profile: { type: 'number' } }]);
    const list = await h.request('GET', `/device/${s.deviceId}/assets`, { token: s.deviceToken });
    assert.is(list.status, 200);
    assert.ok(Array.isArray(list.json));
    const [asset] = list.json;
    for (const key of ['id', 'name', 'title', 'description', 'is', 'profile', 'deviceId']) assert.ok(key in asset, key);
    assert.equal([asset.name, asset.is, asset.deviceId, asset.id], ['temperature', 'sensor', s.deviceId, s.assetIds.temperature]);

    // Python SDK: capitalised keys, Title null when unset.
    const py = await h.request('POST', `/device/${s.deviceId}/assets`, {
      token: s.deviceToken,
      json: { Name: 'counter', Title: null, Description: '', Is: 'sensor', Profile: { type: 'integer' } },
    });
    assert.is(py.status, 201, py.text);
    assert.equal([py.json.name, py.json.is, py.json.profile, py.json.deviceId], ['counter', 'sensor', { type: 'integer' }, s.deviceId]);
    assert.is(py.json.title, 'counter', 'title defaults to the name');
    assert.is((await h.request('POST', `/device/${s.deviceId}/assets`, { token: s.deviceToken, json: { name: 'counter', is: 'sensor' } })).status, 409);

    // Java SDK: lower-case keys with a unit in the profile.
    const java = await h.request('POST', `/device/${s.deviceId}/assets`, {
      token: s.deviceToken,
      json: { name: 'humidity', title: 'Humidity', is: 'sensor', profile: { type: 'number', unit: '%' } },
    });
    assert.is(java.status, 201, java.text);

    // Go SDK: PUT {is, name, profile} creates, a second PUT updates.
    const go = await h.request('PUT', `/device/${s.deviceId}/asset/led`, { token: s.deviceToken, json: { is: 'actuator', name: 'led', profile: { type: 'boolean' } } });
    assert.is(go.status, 201, go.text);
    assert.is(go.headers.get('location'), `/device/${s.deviceId}/asset/led`);
    const update = await h.request('PUT', `/device/${s.deviceId}/asset/led`, { token: s.deviceToken, json: { title: 'Red LED' } });
    assert.is(update.status, 200);
    assert.equal([update.json.title, update.json.is, update.json.id], ['Red LED', 'actuator', go.json.id]);

    const one = await h.request('GET', `/device/${s.deviceId}/asset/led`, { token: s.deviceToken });
    assert.is(one.status, 200);
    assert.is(one.json.title, 'Red LED');

    const noKind = await h.request('PUT', `/device/${s.deviceId}/asset/newone`, { token: s.deviceToken, json: { title: 'x' } });
    assert.is(noKind.status, 422);
    assert.equal(noKind.json.errors.map((e: { path: string }) => e.path), ['body.is']);
    const renamed = await h.request('PUT', `/device/${s.deviceId}/asset/led`, { token: s.deviceToken, json: { name: 'lamp' } });
    assert.is(renamed.status, 422);

    assert.is((await h.request('DELETE', `/device/${s.deviceId}/asset/led`, { token: s.deviceToken })).status, 403, 'device tokens do not delete');
    assert.is((await h.request('DELETE', `/device/${s.deviceId}/asset/led`, { token: s.userToken })).status, 204);
    assert.is((await h.request('DELETE', `/device/${s.deviceId}/asset/led`, { token: s.userToken })).status, 404);
    const gone = await h.request('GET', `/device/${s.deviceId}/asset/led`, { token: s.userToken });
    assert.is(gone.status, 404);
    assert.is(gone.json.code, 'UNKNOWN_ASSET');
    const names = (await h.request('GET', `/device/${s.deviceId}/assets`, { token: s.userToken })).json.map((a: { name: string }) => a.name);
    assert.equal(names, ['counter', 'humidity', 'temperature']);
    assert.ok(h.changed.filter((id) => id === s.deviceId).length >= 4, 'the engine hears of asset changes');
  });

  test('device state: JSON and CBOR (full and simplified) → 202 once durable, body appended as sent', async ({ h }) => {
    const s = await h.seed();
    const json = '{"temperature":{"value":21.5,"at":"2024-05-01T12:00:00Z"},"door":{"value":true}}';
    const full = encodeCbor({ temperature: { value: 21.5 }, door: { value: false } });
    const simplified = encodeCbor({ temperature: 22, door: true });
    const cases: [string, string, Uint8Array, 'json' | 'cbor'][] = [
      ['PUT', 'application/json', bytes(json), 'json'],
      ['PUT', 'application/json; charset=utf-8', bytes(json), 'json'],
      ['POST', 'application/json', bytes(json), 'json'],
      ['PUT', 'application/cbor', full, 'cbor'],
      ['PUT', 'application/cbor', simplified, 'cbor'],
    ];
    for (const [method, contentType, body, format] of cases) {
      const before = h.appended.length;
      const res = await h.request(method, `/device/${s.deviceId}/state`, { token: s.deviceToken, body, contentType });
      assert.is(res.status, 202, res.text);
      assert.is(res.headers.get('content-type'), 'application/json');
      assert.is(res.headers.get('cache-control'), 'no-store', 'an accepted uplink is not cached');
      assert.is(res.headers.get('content-length'), String(Buffer.byteLength(res.text)));
      // Time-ordered (engine/kernel/ids.ts newUplinkId): the receive time, then 20 bits.
      assert.match(res.json.uplinkId, /^[0-9A-F]{16}$/);
      assert.is(BigInt(`0x${res.json.uplinkId}`) >> 20n, BigInt(h.clock.now()));
      assert.is(res.json.receivedAt, new Date(h.clock.now()).toISOString());
      // 202 comes only after the log confirmed the append.
      assert.is(h.appended.length, before + 1);
      const env = h.appended[before];
      assert.equal([env.id, env.channel, env.contentType, env.deviceId, env.asset, env.receivedAt], [res.json.uplinkId, 'http', format, s.deviceId, undefined, h.clock.now()]);
      assert.equal(Buffer.from(env.body), Buffer.from(body));
    }
    const byUser = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.userToken, body: json, contentType: 'application/json' });
    assert.is(byUser.status, 202, 'a user of the ground may send states');
  });

  test('asset state on both path shapes, PUT and POST', async ({ h }) => {
    const s = await h.seed();
    const paths = [`/device/${s.deviceId}/asset/temperature/state`, `/asset/${s.assetIds.temperature}/state`];
    for (const path of paths) {
      for (const method of ['PUT', 'POST']) {
        const body = `{"value":${method === 'PUT' ? 20 : 21},"at":"2024-05-01T12:00:00.123456"}`;
        const res = await h.request(method, path, { token: s.deviceToken, body, contentType: 'application/json' });
        assert.is(res.status, 202, `${method} ${path}: ${res.text}`);
        const env = h.appended[h.appended.length - 1];
        assert.equal([env.deviceId, env.asset, env.contentType, new TextDecoder().decode(env.body)], [s.deviceId, 'temperature', 'json', body]);
      }
    }
  });

  test('uplinks are durable in the local log: a consumer reads them back keyed by device id', async ({ h }) => {
    const s = await h.seed();
    const sent: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await h.request('PUT', `/device/${s.deviceId}/state`, { token: s.deviceToken, json: { temperature: { value: i } } });
      assert.is(res.status, 202);
      sent.push(res.json.uplinkId);
    }
    const got: LogRecord[] = [];
    let done!: () => void;
    const all = new Promise<void>((resolve) => { done = resolve; });
    const consumer = h.log.consumer({
      group: `readback-${s.deviceId}`,
      topics: ['uplinks'],
      async onBatch(batch) {
        for (const r of batch.records) if (r.key === s.deviceId) got.push(r);
        if (got.length >= sent.length) done();
      },
    });
    await consumer.start();
    await all;
    await consumer.stop();
    const envelopes = got.map((r) => decodeEnvelope(r.value));
    assert.equal(envelopes.map((e) => e.id), sent, 'in order, each once');
    assert.equal(envelopes.map((e) => JSON.parse(new TextDecoder().decode(e.body)).temperature.value), [0, 1, 2, 3, 4]);
  });

  const seedStates = async (s: Seeded): Promise<StateRow[]> => {
    const rows: StateRow[] = [];
    // 25 temperature states, minutes apart, with pairs sharing a ts to exercise the cursor's tie order.
    for (let i = 0; i < 25; i++) {
      const ts = T0 + Math.floor(i / 2) * MIN;
      rows.push({ deviceId: s.deviceId, asset: 'temperature', ts, receivedAt: ts + 10, value: 10 + i, uplinkId: `up${String(i).padStart(3, '0')}${s.deviceId.slice(0, 6)}` });
    }
    rows.push({ deviceId: s.deviceId, asset: 'door', ts: T0 + 5 * MIN, receivedAt: T0 + 5 * MIN, value: true, uplinkId: `door1${s.deviceId.slice(0, 6)}` });
    await store.append(rows);
    return rows;
  };

  test('reads: latest per asset, latest of one asset ({id, state}), null before the first state', async ({ h }) => {
    const s = await h.seed([{ name: 'temperature' }, { name: 'door' }, { name: 'silent' }]);
    await seedStates(s);
    const latest = await h.request('GET', `/device/${s.deviceId}/state`, { token: s.deviceToken });
    assert.is(latest.status, 200);
    assert.equal(latest.json, {
      door: { value: true, at: new Date(T0 + 5 * MIN).toISOString() },
      temperature: { value: 34, at: new Date(T0 + 12 * MIN).toISOString() },
    });
    for (const path of [`/device/${s.deviceId}/asset/temperature/state`, `/asset/${s.assetIds.temperature}/state`]) {
      const one = await h.request('GET', path, { token: s.deviceToken });
      assert.is(one.status, 200);
      assert.equal(one.json, { id: s.assetIds.temperature, state: { value: 34, at: new Date(T0 + 12 * MIN).toISOString() } });
    }
    const none = await h.request('GET', `/device/${s.deviceId}/asset/silent/state`, { token: s.userToken });
    assert.equal(none.json, { id: s.assetIds.silent, state: null });
  });

  test('history: pages of `limit` with an opaque cursor cover every state once, in (ts, uplink) order', async ({ h }) => {
    const s = await h.seed([{ name: 'temperature' }, { name: 'door' }]);
    const rows = await seedStates(s);
    for (const order of ['desc', 'asc'] as const) {
      const expected = rows.filter((r) => r.asset === 'temperature')
        .sort((a, b) => (order === 'asc' ? 1 : -1) * (a.ts - b.ts || (a.uplinkId < b.uplinkId ? -1 : 1)))
        .map((r) => ({ value: r.value, at: new Date(r.ts).toISOString() }));
      for (const base of [`/device/${s.deviceId}/asset/temperature/states`, `/asset/${s.assetIds.temperature}/states`]) {
        const seen: unknown[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const q = `?limit=7&order=${order}${cursor ? `&cursor=${cursor}` : ''}`;
          const page = await h.request('GET', base + q, { token: s.deviceToken });
          assert.is(page.status, 200, page.text);
          seen.push(...page.json.items);
          cursor = page.json.next;
          pages++;
          assert.ok(pages < 10);
        } while (cursor);
        assert.is(pages, 4);
        assert.equal(seen, expected, `${order} ${base}`);
      }
    }
    // Default: newest first, 100 at most.
    const all = await h.request('GET', `/device/${s.deviceId}/asset/temperature/states`, { token: s.userToken });
    assert.is(all.json.items.length, 25);
    assert.is(all.json.next, undefined);
    assert.is(all.json.items[0].value, 34);
    // from inclusive, to exclusive; epoch ms and ISO both accepted.
    const from = new Date(T0 + 2 * MIN).toISOString();
    const window = await h.request('GET', `/device/${s.deviceId}/asset/temperature/states?from=${from}&to=${T0 + 4 * MIN}&order=asc`, { token: s.userToken });
    assert.equal(window.json.items.map((i: { value: number }) => i.value), [14, 15, 16, 17]);
  });

  test('aggregates per minute and hour: count, min, max, avg', async ({ h }) => {
    const s = await h.seed([{ name: 'temperature' }, { name: 'door' }]);
    await seedStates(s);
    const res = await h.request('GET', `/device/${s.deviceId}/asset/temperature/states?resolution=minute&from=${T0}&to=${T0 + 3 * MIN}`, { token: s.deviceToken });
    assert.is(res.status, 200, res.text);
    assert.is(res.json.resolution, 'minute');
    assert.equal(res.json.items, [
      { at: new Date(T0).toISOString(), count: 2, min: 10, max: 11, avg: 10.5 },
      { at: new Date(T0 + MIN).toISOString(), count: 2, min: 12, max: 13, avg: 12.5 },
      { at: new Date(T0 + 2 * MIN).toISOString(), count: 2, min: 14, max: 15, avg: 14.5 },
    ]);
    const hour = await h.request('GET', `/asset/${s.assetIds.temperature}/states?resolution=hour&from=${new Date(T0).toISOString()}&to=${T0 + 60 * MIN}`, { token: s.userToken });
    assert.equal(hour.json.items, [{ at: new Date(T0).toISOString(), count: 25, min: 10, max: 34, avg: 22 }]);
    const door = await h.request('GET', `/device/${s.deviceId}/asset/door/states?resolution=day&from=${T0 - 86_400_000}&to=${T0 + 86_400_000}`, { token: s.userToken });
    assert.equal(door.json.items.map((b: { count: number; avg: unknown }) => [b.count, b.avg]), [[1, null]]);
  });

  test('rejections: newest first with code, reason and asset', async ({ h }) => {
    const s = await h.seed();
    await h.rejections.append([
      { deviceId: s.deviceId, rejectedAt: T0, code: 'PROFILE_VIOLATION', reason: 'temperature: must be number', asset: 'temperature', uplinkId: 'u1', channel: 'http' },
      { deviceId: s.deviceId, rejectedAt: T0 + 1000, code: 'MALFORMED_CBOR', reason: 'not CBOR', asset: '', uplinkId: 'u2', channel: 'mqtt' },
    ]);
    const res = await h.request('GET', `/device/${s.deviceId}/rejections`, { token: s.deviceToken });
    assert.is(res.status, 200);
    assert.equal(res.json.items, [
      { at: new Date(T0 + 1000).toISOString(), code: 'MALFORMED_CBOR', reason: 'not CBOR', uplinkId: 'u2', channel: 'mqtt' },
      { at: new Date(T0).toISOString(), code: 'PROFILE_VIOLATION', reason: 'temperature: must be number', asset: 'temperature', uplinkId: 'u1', channel: 'http' },
    ]);
    const older = await h.request('GET', `/device/${s.deviceId}/rejections?limit=5&before=${T0 + 1000}`, { token: s.userToken });
    assert.equal(older.json.items.map((i: { code: string }) => i.code), ['PROFILE_VIOLATION']);
  });

  return test;
}

const suites = suitePerRegistry('http-edge', edgeSuite);
const teardown = suite('http edge: teardown');
teardown('close the chDB store', async () => {
  await store.close();
  rmSync(chdbDir, { recursive: true, force: true });
});
for (const s of suites) s.run();
teardown.run();
