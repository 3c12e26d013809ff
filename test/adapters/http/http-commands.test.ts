/**
 * Command routes of the HTTP edge (Hono in memory): user tokens of the ground only, actuators only,
 * values checked against profiles, records appended for the command pipeline, recent list.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createEdgeApp } from '../../../adapters/http/createEdgeApp.ts';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import type { CommandHistoryQuery } from '../../../engine/ports/commandHistory.ts';
import type { Registry } from '../../../engine/ports/registry.ts';
import type { CommandRecord } from '../../../schemas/commands.ts';

let registry: Registry;
const records: CommandRecord[] = [];
const listQueries: CommandHistoryQuery[] = [];
let app: ReturnType<typeof createEdgeApp>;
let userToken = '';
let deviceToken = '';
let deviceId = '';
let ledId = '';

test.before(async () => {
  registry = await createPgliteRegistry();
  const user = await registry.createUser({ name: 'u' });
  userToken = user.token;
  const ground = await registry.createGround({ name: 'g', userId: user.entity.id });
  const created = await registry.createDevice({ groundId: ground.id, name: 'd', assets: [
    { name: 'led', is: 'actuator', profile: { type: 'boolean' } },
    { name: 'temp', is: 'sensor', profile: { type: 'number' } },
  ] });
  deviceId = created.device.id;
  deviceToken = created.token;
  ledId = created.device.assets.find((a) => a.name === 'led')!.id;
  app = createEdgeApp({
    registry, clock: new SimulatedClock(Date.UTC(2026, 0, 1)),
    admission: { admit: async () => { throw new Error('not expected'); }, admitThen: () => { throw new Error('not expected'); }, refuse: async () => { throw new Error('not expected'); } },
    store: { latest: async () => [], history: async () => [], aggregate: async () => [] },
    rejections: { recent: async () => [] },
    commands: {
      append: async (r) => { records.push(r); },
      list: async (q) => {
        listQueries.push(q);
        return records.filter((r) => r.deviceId === q.deviceId).reverse().map((r) => ({
          id: r.id, deviceId: r.deviceId, kind: r.asset ? 'asset' as const : 'device' as const, asset: r.asset, value: r.value ?? r.assets,
          at: r.at ?? '', issuer: r.issuer, status: 'queued' as const, updatedAt: r.issuedAt, attempts: 0, queuedAt: r.issuedAt,
          transitions: [{ status: 'queued' as const, changedAt: r.issuedAt, attempts: 0 }],
        }));
      },
    },
  });
});
test.after(async () => registry.close());

const put = (path: string, body: unknown, token = userToken) => app.request(path, {
  method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

test('asset and device commands are accepted (202) and appended as command records', async () => {
  let r = await put(`/device/${deviceId}/asset/led/command`, { value: true, at: '2026-01-01T00:00:00Z' });
  assert.is(r.status, 202);
  const { id } = await r.json() as { id: string };
  assert.equal(records[0], { deviceId, asset: 'led', value: true, at: '2026-01-01T00:00:00Z', id, issuer: records[0].issuer, issuedAt: Date.UTC(2026, 0, 1) });
  assert.match(records[0].issuer, /^user:/);
  r = await put(`/asset/${ledId}/command`, { value: false });
  assert.is(r.status, 202);
  assert.is(records[1].asset, 'led');
  r = await put(`/device/${deviceId}/command`, { led: true });
  assert.is(r.status, 202);
  assert.equal(records[2].assets, { led: true });
  const list = await app.request(`/device/${deviceId}/commands`, { headers: { authorization: `Bearer ${userToken}` } });
  assert.is(list.status, 200);
  const items = ((await list.json()) as { items: { transitions: unknown[] }[] }).items;
  assert.is(items.length, 3);
  assert.is(items[0].transitions.length, 1);
  assert.equal(listQueries.at(-1), { deviceId, from: undefined, to: undefined, limit: 100 });
});

test('GET /device/{id}/commands: from/to as epoch ms or ISO 8601 and limit reach the history; bad ones are refused', async () => {
  const get = (query: string, token = userToken) => app.request(`/device/${deviceId}/commands${query}`, { headers: { authorization: `Bearer ${token}` } });
  let r = await get('?from=2026-01-01T00:00:00Z&to=1767312000000&limit=5');
  assert.is(r.status, 200);
  assert.equal(listQueries.at(-1), { deviceId, from: Date.UTC(2026, 0, 1), to: 1767312000000, limit: 5 });
  r = await get('', deviceToken);
  assert.is(r.status, 200, 'a device reads its own commands');
  const before = listQueries.length;
  for (const [query, status] of [
    ['?limit=0', 422], ['?limit=1001', 422], ['?limit=x', 422], ['?from=yesterday', 422], ['?to=-5', 422], ['?order=asc', 422],
    ['?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', 422],
  ] as const) {
    r = await get(query);
    assert.is(r.status, status, query);
    assert.is(r.headers.get('content-type'), 'application/problem+json');
  }
  assert.is(listQueries.length, before, 'no bad query reaches the history');
  const stranger = await registry.createUser({ name: 'stranger' });
  assert.is((await get('', stranger.token)).status, 403, 'a user outside the ground');
});

test('refusals: sensors, profile violations, bad bodies, device tokens, unknown assets', async () => {
  const before = records.length;
  const cases: [string, unknown, number, string, string?][] = [
    [`/device/${deviceId}/asset/temp/command`, { value: 1 }, 422, 'NOT_ACTUATOR'],
    [`/device/${deviceId}/asset/led/command`, { value: 'on' }, 422, 'PROFILE_VIOLATION'],
    [`/device/${deviceId}/asset/led/command`, { at: '2026-01-01T00:00:00Z' }, 422, 'VALIDATION_FAILED'],
    [`/device/${deviceId}/asset/led/command`, { value: true, at: 'soon' }, 422, 'INVALID_AT'],
    [`/device/${deviceId}/asset/led/command`, '{"value":', 400, 'MALFORMED_JSON'],
    [`/device/${deviceId}/asset/nope/command`, { value: true }, 404, 'UNKNOWN_ASSET'],
    [`/device/${deviceId}/command`, {}, 422, 'VALIDATION_FAILED'],
    [`/device/${deviceId}/command`, { led: 3 }, 422, 'PROFILE_VIOLATION'],
    [`/device/${deviceId}/command`, [true], 422, 'VALIDATION_FAILED'],
    [`/device/${deviceId}/asset/led/command`, { value: true }, 403, 'FORBIDDEN', deviceToken],
  ];
  for (const [path, body, status, code, token] of cases) {
    const r = await put(path, body, token);
    assert.is(r.status, status, `${path} ${JSON.stringify(body)}`);
    assert.is(r.headers.get('content-type'), 'application/problem+json');
    assert.is(((await r.json()) as { code: string }).code, code);
  }
  assert.is(records.length, before, 'nothing appended');
});

test.run();
