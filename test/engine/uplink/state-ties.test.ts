/**
 * Ties on `at`: states of one asset with the same measurement time read the same from every
 * endpoint — GET /device/{id}/state, GET /device/{id}/asset/{name}/state, GET /asset/{id}/state
 * and the history, whole or page by page, in both orders: by ts, then receive time, then uplink id.
 * On chDB, and on the ClickHouse server when CLICKHOUSE_URL is set (a database of its own).
 */
import * as assert from 'uvu/assert';
import { createService, type Service } from '../../../app/createService.ts';
import { createJsonLogger } from '../../../engine/kernel/logger.ts';
import { defaultConfig } from '../../../schemas/config.ts';
import { requestJson } from '../../support/lpwanStack.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const AT = '2026-03-01T12:00:00.000Z';

function ties(label: string, clickhouseUrl?: string) {
  const test = suite<{ service: Service; tmp: ReturnType<typeof tempDir>; base: string; token: string; deviceId: string; assetId: string}>(`ties on at: ${label}`);

  const start = async (ctx: { service: Service; tmp: ReturnType<typeof tempDir>; base: string }) => {
    ctx.service = await createService({
      config: {
        ...defaultConfig,
        dataDir: `${ctx.tmp.dir}/data`,
        http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
        metrics: { host: '127.0.0.1', port: 0 },
        mqtt: { host: '127.0.0.1', port: -1 },
        engine: { ...defaultConfig.engine, partitions: 1, batchDelayMs: 10 },
        ...(clickhouseUrl ? { clickhouseUrl, clickhouseDatabase: `fleetstream_ties_${process.pid}` } : {}),
      },
      logger: createJsonLogger({ level: 'error', write: () => undefined }),
    });
    ctx.base = `http://127.0.0.1:${ctx.service.httpPort}`;
  };

  test.before(async (ctx) => {
    ctx.tmp = tempDir('state-ties');
    await start(ctx);
    const user = await ctx.service.registry.createUser({ name: 'ties' });
    const ground = await ctx.service.registry.createGround({ name: 'ties', userId: user.entity.id });
    const created = await ctx.service.registry.createDevice({ groundId: ground.id, name: `ties-${label}`, assets: [{ name: 'v', is: 'sensor', profile: { type: 'integer' } }] });
    Object.assign(ctx, { token: user.token, deviceId: created.device.id, assetId: created.device.assets[0].id });
    const deviceToken = created.token;
    // Two states sent over HTTP (receive times from the clock) ...
    for (const value of [100, 101]) {
      const r = await fetch(`${ctx.base}/device/${ctx.deviceId}/asset/v/state`, {
        method: 'PUT', headers: { authorization: `Bearer ${deviceToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ value, at: AT }),
      });
      assert.is(r.status, 202);
    }
    await waitFor(async () => ((await requestJson(ctx.base, 'GET', `/device/${ctx.deviceId}/asset/v/states?limit=100`, { token: ctx.token })).json?.items?.length ?? 0) === 2, 15_000, 'stored');
    // ... and states stored with chosen receive times and uplink ids: receive times against uplink
    // ids, some shared, all received after the two above.
    const ts = Date.parse(AT);
    const later = Date.now() + 60_000;
    const chosen: Array<[number, number, string]> = [[0, 5, 'zz'], [1, 9, 'aa'], [2, 9, 'ab'], [3, 9, 'b0'], [4, 7, 'zzz'], [5, 9, 'a']];
    await ctx.service.store.append(chosen.map(([value, s, uplinkId]) => ({ deviceId: ctx.deviceId, asset: 'v', ts, receivedAt: later + s * 1000, value, uplinkId })));
  });

  test.after(async (ctx) => {
    await ctx.service?.stop();
    if (clickhouseUrl) await fetch(`${clickhouseUrl}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS fleetstream_ties_${process.pid}`)}`, { method: 'POST' });
    ctx.tmp?.remove();
  });

  test('every endpoint names the same latest state; history pages read one order, the reverse of the other', async (ctx) => {
    const get = async (path: string) => (await requestJson(ctx.base, 'GET', path, { token: ctx.token })).json;
    const all = (await get(`/device/${ctx.deviceId}/asset/v/states?limit=100&order=asc`)).items as Array<{ value: number; at: string }>;
    assert.is(all.length, 8);
    assert.ok(all.every((s) => s.at === AT), 'every state has the same at');
    // What the store holds, ordered by the rule: receive time, then uplink id.
    const rows = await ctx.service.store.history({ deviceId: ctx.deviceId, asset: 'v', order: 'asc', limit: 100 });
    const expected = [...rows].sort((a, b) => a.ts - b.ts || a.receivedAt - b.receivedAt || (a.uplinkId < b.uplinkId ? -1 : 1));
    assert.equal(rows.map((r) => r.value), expected.map((r) => r.value), 'the store orders ties by receive time, then uplink id');
    assert.equal(all.map((s) => s.value), expected.map((r) => r.value));
    assert.equal(expected.map((r) => r.value).slice(2), [0, 4, 5, 1, 2, 3], 'receive time first, then uplink id');
    const latest = expected[expected.length - 1].value;
    assert.is(latest, 3);

    assert.is((await get(`/device/${ctx.deviceId}/state`)).v.value, latest, 'GET /device/{id}/state');
    assert.is((await get(`/device/${ctx.deviceId}/asset/v/state`)).state.value, latest, 'GET /device/{id}/asset/{name}/state');
    assert.is((await get(`/asset/${ctx.assetId}/state`)).state.value, latest, 'GET /asset/{id}/state');
    const desc = (await get(`/device/${ctx.deviceId}/asset/v/states?limit=100`)).items.map((s: { value: number }) => s.value);
    assert.equal(desc, [...expected].reverse().map((r) => r.value), 'newest first is the exact reverse');
    assert.is((await get(`/device/${ctx.deviceId}/asset/v/states?limit=1`)).items[0].value, latest);
    for (const order of ['asc', 'desc'] as const) {
      for (const limit of [1, 2, 4]) {
        const seen: number[] = [];
        let cursor: string | undefined;
        do {
          const page = await get(`/asset/${ctx.assetId}/states?limit=${limit}&order=${order}${cursor ? `&cursor=${cursor}` : ''}`);
          seen.push(...page.items.map((s: { value: number }) => s.value));
          cursor = page.next;
        } while (cursor !== undefined);
        assert.equal(seen, order === 'asc' ? all.map((s) => s.value) : desc, `${order} by ${limit}`);
      }
    }
  });

  test('after a restart on the same data, every endpoint reads the same order and the same latest state', async (ctx) => {
    const read = async () => {
      const get = async (path: string) => (await requestJson(ctx.base, 'GET', path, { token: ctx.token })).json;
      return {
        asc: (await get(`/device/${ctx.deviceId}/asset/v/states?limit=100&order=asc`)).items.map((s: { value: number }) => s.value),
        desc: (await get(`/asset/${ctx.assetId}/states?limit=100`)).items.map((s: { value: number }) => s.value),
        device: (await get(`/device/${ctx.deviceId}/state`)).v.value,
        asset: (await get(`/device/${ctx.deviceId}/asset/v/state`)).state.value,
      };
    };
    const before = await read();
    await ctx.service.stop();
    await start(ctx);
    const after = await read();
    assert.equal(after, before);
    assert.equal([after.device, after.asset, after.asc.at(-1), after.desc[0]], [3, 3, 3, 3]);
  });

  return test;
}

ties('chdb').run();
withEnv('state ties on a ClickHouse server', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  ties(`clickhouse server`, url).run();
});
