/**
 * Readings of one batch are kept apart: a device that buffered readings offline and sends them
 * without `at` shares one uplink id and one measurement time (the receive time) among them, and
 * every one is stored and read back in item order, over HTTP (JSON and CBOR), MQTT and the
 * gateway route. Two items of one batch with the same asset and the same explicit `at` are the
 * same reading twice: the later one is refused DUPLICATE_READING, with its item index, in the
 * 202's `rejected` list, and the rest is stored.
 * On chDB (compact layout), and on the ClickHouse server when CLICKHOUSE_URL is set (18.16: the
 * legacy layout), through the whole service.
 */
import * as assert from 'uvu/assert';
import { encode as cborEncode } from 'cbor-x';
import mqtt from 'mqtt';
import { createService, type Service } from '../../../app/createService.ts';
import { createJsonLogger } from '../../../engine/kernel/logger.ts';
import { MAX_BATCH_STATES } from '../../../engine/uplink/admission/processUplink.ts';
import { defaultConfig } from '../../../schemas/config.ts';
import { requestJson } from '../../support/lpwanStack.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

interface Ctx {
  service: Service;
  tmp: ReturnType<typeof tempDir>;
  base: string;
  userToken: string;
  groundId: string;
}

function readings(label: string, clickhouseUrl?: string) {
  const test = suite<Ctx>(`batch readings: ${label}`);
  const database = `fleetstream_batch_${process.pid}`;

  test.before(async (ctx) => {
    ctx.tmp = tempDir('batch-readings');
    ctx.service = await createService({
      config: {
        ...defaultConfig,
        dataDir: `${ctx.tmp.dir}/data`,
        http: { ...defaultConfig.http, host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20 },
        mqtt: { host: '127.0.0.1', port: 0 },
        engine: { ...defaultConfig.engine, partitions: 2, batchDelayMs: 10 },
        ...(clickhouseUrl ? { clickhouseUrl, clickhouseDatabase: database } : {}),
      },
      logger: createJsonLogger({ level: 'error', write: () => undefined }),
    });
    ctx.base = `http://127.0.0.1:${ctx.service.httpPort}`;
    const user = await ctx.service.registry.createUser({ name: 'batch' });
    const ground = await ctx.service.registry.createGround({ name: 'batch', userId: user.entity.id });
    Object.assign(ctx, { userToken: user.token, groundId: ground.id });
  });

  test.after(async (ctx) => {
    await ctx.service?.stop();
    if (clickhouseUrl) await fetch(`${clickhouseUrl}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS ${database}`)}`, { method: 'POST' });
    ctx.tmp?.remove();
  });

  let devices = 0;
  const device = async (ctx: Ctx) => {
    const created = await ctx.service.registry.createDevice({
      groundId: ctx.groundId, name: `batch-${++devices}`,
      assets: [{ name: 'count', is: 'sensor', profile: { type: 'integer' } }, { name: 'door', is: 'sensor', profile: { type: 'boolean' } }],
    });
    return { id: created.device.id, token: created.token };
  };

  const put = (ctx: Ctx, deviceId: string, token: string, body: string | Uint8Array, contentType = 'application/json') =>
    fetch(`${ctx.base}/device/${deviceId}/state`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, body })
      .then(async (r) => ({ status: r.status, json: await r.json() as { uplinkId: string; rejected?: Array<{ item?: number; asset?: string; code: string; reason: string }> } }));

  /** Every state of an asset, oldest first, read page by page over HTTP (100 a page, the cursors between). */
  const history = async (ctx: Ctx, deviceId: string, asset: string, order: 'asc' | 'desc' = 'asc') => {
    const values: unknown[] = [];
    let cursor: string | undefined;
    do {
      const page = await requestJson(ctx.base, 'GET', `/device/${deviceId}/asset/${asset}/states?limit=100&order=${order}${cursor ? `&cursor=${cursor}` : ''}`, { token: ctx.userToken });
      assert.is(page.status, 200, page.text);
      values.push(...page.json.items.map((s: { value: unknown }) => s.value));
      cursor = page.json.next;
    } while (cursor !== undefined);
    return values;
  };
  const stored = (ctx: Ctx, deviceId: string, asset: string, count: number) =>
    waitFor(async () => (await ctx.service.store.history({ deviceId, asset, limit: 10_000 })).length >= count, 20_000, `${count} states of ${asset}`);
  const latest = async (ctx: Ctx, deviceId: string) => (await requestJson(ctx.base, 'GET', `/device/${deviceId}/state`, { token: ctx.userToken })).json;

  test('three readings without at in one batch: all three stored, read back in item order, the last is the latest', async (ctx) => {
    const d = await device(ctx);
    const r = await put(ctx, d.id, d.token, '[{"count":{"value":1}},{"count":{"value":2}},{"count":{"value":3}}]');
    assert.is(r.status, 202);
    assert.is(r.json.rejected, undefined, 'nothing refused');
    await stored(ctx, d.id, 'count', 3);
    // Give a folding merge no chance to hide: the store's reads use FINAL.
    assert.equal(await history(ctx, d.id, 'count'), [1, 2, 3]);
    assert.equal(await history(ctx, d.id, 'count', 'desc'), [3, 2, 1]);
    assert.is((await latest(ctx, d.id)).count.value, 3);
  });

  test('equal explicit at for one asset: the later item is refused DUPLICATE_READING with its index, the rest is stored', async (ctx) => {
    const d = await device(ctx);
    const at = '2026-01-01T00:00:00Z';
    const batch = [
      { count: { value: 1, at }, door: { value: true, at } },
      { count: { value: 2, at: '2026-01-01T00:01:00Z' } },
      { count: { value: 3, at }, door: { value: false, at: '2026-01-01T00:02:00Z' } },
      { count: { value: 4, at: '2026-01-01T00:00:00.000Z' } },
    ];
    const r = await put(ctx, d.id, d.token, JSON.stringify(batch));
    assert.is(r.status, 202);
    assert.equal(r.json.rejected?.map((x) => [x.item, x.asset, x.code]), [[2, 'count', 'DUPLICATE_READING'], [3, 'count', 'DUPLICATE_READING']]);
    assert.match(r.json.rejected![0].reason, /^item 2: /);
    assert.match(r.json.rejected![0].reason, /item 0/);
    await stored(ctx, d.id, 'door', 2);
    await stored(ctx, d.id, 'count', 2);
    assert.equal(await history(ctx, d.id, 'count'), [1, 2]);
    assert.equal(await history(ctx, d.id, 'door'), [true, false]);
    // Recorded as the device's rejections, as every refused entry is: each refused item, in item order.
    await waitFor(async () => (await requestJson(ctx.base, 'GET', `/device/${d.id}/rejections`, { token: ctx.userToken })).json.items.length > 1, 10_000, 'recorded');
    const recorded = (await requestJson(ctx.base, 'GET', `/device/${d.id}/rejections`, { token: ctx.userToken })).json.items;
    assert.equal(recorded.map((x: { item?: number; code: string; asset: string; uplinkId: string }) => [x.item, x.code, x.asset, x.uplinkId]),
      [[2, 'DUPLICATE_READING', 'count', r.json.uplinkId], [3, 'DUPLICATE_READING', 'count', r.json.uplinkId]]);
  });

  test(`${MAX_BATCH_STATES} readings of one asset without at: all read back, in order, in both directions`, async (ctx) => {
    const d = await device(ctx);
    const values = Array.from({ length: MAX_BATCH_STATES }, (_, i) => i * 7 % 1000);
    const r = await put(ctx, d.id, d.token, JSON.stringify(values.map((value) => ({ count: { value } }))));
    assert.is(r.status, 202);
    assert.is(r.json.rejected, undefined);
    await stored(ctx, d.id, 'count', MAX_BATCH_STATES);
    assert.equal(await history(ctx, d.id, 'count'), values);
    assert.equal(await history(ctx, d.id, 'count', 'desc'), [...values].reverse());
    assert.is((await latest(ctx, d.id)).count.value, values.at(-1));
    // A replay of the same uplink folds: the store hides rows appended again.
    const rows = values.map((value, seq) => ({ deviceId: d.id, asset: 'count', ts: 0, receivedAt: 0, value, uplinkId: r.json.uplinkId, seq }));
    const [first] = await ctx.service.store.history({ deviceId: d.id, asset: 'count', limit: 1, order: 'asc' });
    await ctx.service.store.append(rows.map((row) => ({ ...row, ts: first.ts, receivedAt: first.receivedAt })));
    assert.is((await ctx.service.store.history({ deviceId: d.id, asset: 'count', limit: 10_000 })).length, MAX_BATCH_STATES);
  });

  test('a CBOR batch without at: every reading kept, in order; equal explicit times (tag 1) refused DUPLICATE_READING', async (ctx) => {
    const d = await device(ctx);
    const r = await put(ctx, d.id, d.token, new Uint8Array(cborEncode([{ count: 5 }, { count: { value: 6 } }, { count: 7, door: true }])), 'application/cbor');
    assert.is(r.status, 202);
    assert.is(r.json.rejected, undefined);
    await stored(ctx, d.id, 'count', 3);
    assert.equal(await history(ctx, d.id, 'count'), [5, 6, 7]);
    const d2 = await device(ctx);
    const body = Buffer.concat([
      Buffer.from([0x83]),
      cborEncode({ count: { value: 1, at: '2026-01-01T00:00:00Z' } }),
      // {"count": {"value": 2, "at": 1(1767225600)}}: the same instant as epoch seconds.
      Buffer.from([0xa1, 0x65, ...Buffer.from('count'), 0xa2, 0x65, ...Buffer.from('value'), 0x02, 0x62, ...Buffer.from('at'), 0xc1, 0x1a, 0x69, 0x55, 0xb9, 0x00]),
      cborEncode({ count: { value: 3 } }),
    ]);
    const dup = await put(ctx, d2.id, d2.token, new Uint8Array(body), 'application/cbor');
    assert.is(dup.status, 202);
    assert.equal(dup.json.rejected?.map((x) => [x.item, x.asset, x.code]), [[1, 'count', 'DUPLICATE_READING']]);
    await stored(ctx, d2.id, 'count', 2);
    assert.equal(await history(ctx, d2.id, 'count'), [1, 3]);
  });

  test('the gateway route: a batch without at for one device, every reading kept in order; duplicates listed per device', async (ctx) => {
    const a = await device(ctx);
    const b = await device(ctx);
    const at = '2026-01-01T00:00:00Z';
    const r = await requestJson(ctx.base, 'POST', `/ground/${ctx.groundId}/states`, {
      token: ctx.userToken,
      json: { [a.id]: [{ count: { value: 1 } }, { count: { value: 2 } }, { count: { value: 3 } }], [b.id]: [{ count: { value: 8, at } }, { count: { value: 9, at } }] },
    });
    assert.is(r.status, 202);
    const results = r.json.results as Array<{ deviceId: string; status: string; rejected?: Array<{ item: number; code: string }> }>;
    assert.equal(results.map((x) => [x.deviceId, x.status, x.rejected?.map((y) => [y.item, y.code])]), [
      [a.id, 'accepted', undefined],
      [b.id, 'accepted', [[1, 'DUPLICATE_READING']]],
    ]);
    await stored(ctx, a.id, 'count', 3);
    await stored(ctx, b.id, 'count', 1);
    assert.equal(await history(ctx, a.id, 'count'), [1, 2, 3]);
    assert.equal(await history(ctx, b.id, 'count'), [8]);
  });

  test('MQTT: a batch without at published on device/<id>/state, every reading kept in order', async (ctx) => {
    const d = await device(ctx);
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${ctx.service.mqttPort}`, { username: d.token, password: d.token, reconnectPeriod: 0 });
    try {
      const values = Array.from({ length: 200 }, (_, i) => 1000 - i);
      await client.publishAsync(`device/${d.id}/state`, JSON.stringify(values.map((value) => ({ count: { value } }))), { qos: 1 });
      await stored(ctx, d.id, 'count', values.length);
      assert.equal(await history(ctx, d.id, 'count'), values);
      const at = '2026-01-01T00:00:00Z';
      // MQTT has no answer to list refusals in: the device's rejections are where each one shows.
      await client.publishAsync(`device/${d.id}/state`, JSON.stringify([{ door: { value: true, at } }, { door: { value: false, at } }, { door: { value: false, at } }]), { qos: 1 });
      await waitFor(async () => (await requestJson(ctx.base, 'GET', `/device/${d.id}/rejections`, { token: ctx.userToken })).json.items.length === 2, 10_000, 'both duplicates recorded');
      const recorded = (await requestJson(ctx.base, 'GET', `/device/${d.id}/rejections`, { token: ctx.userToken })).json.items;
      assert.equal(recorded.map((x: { item?: number; code: string; asset: string; channel: string }) => [x.item, x.code, x.asset, x.channel]),
        [[1, 'DUPLICATE_READING', 'door', 'mqtt'], [2, 'DUPLICATE_READING', 'door', 'mqtt']]);
      assert.match(recorded[0].reason, /^item 1: /);
      assert.match(recorded[1].reason, /^item 2: /);
      assert.equal(await history(ctx, d.id, 'door'), [true]);
    } finally {
      await client.endAsync();
    }
  });

  return test;
}

readings('chdb').run();
withEnv('batch readings on a ClickHouse server', ['CLICKHOUSE_URL'], 'scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url)', ({ CLICKHOUSE_URL: url }) => {
  readings('clickhouse server', url).run();
});
