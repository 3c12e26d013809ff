/**
 * Exports over HTTP (docs/analytics.md "Export") on the composed service, on chDB (embedded) and on
 * the ClickHouse server of CLICKHOUSE_URL (18.16): the history route's CSV, NDJSON and Parquet by
 * `format` or `Accept`, its JSON unchanged; GET /ground/{groundId}/export with its devices, assets
 * and window; 406 with `allowed`; hostile queries refused 422 naming the field; authorised as a
 * history read; at most 4 at once (503 Retry-After); a client that leaves stops the query.
 */
import * as assert from 'uvu/assert';
import type { Service } from '../../../app/createService.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import type { StateRow } from '../../../schemas/messages.ts';
import { parseCsv } from '../../contracts/stateExport.contract.ts';
import { clickhouseQuery } from '../../support/clickhouseServer.ts';
import { suite, unless } from '../../support/suite.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const ASSETS = [
  { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
  { name: 'label', is: 'sensor', profile: { type: 'string' } },
];

interface World {
  service: Service;
  base: string;
  groundId: string;
  otherGroundId: string;
  devices: { id: string; token: string }[];
  owner: string;
  viewer: string;
  outsider: string;
  /** Export queries running now in the store's engine. */
  running(): Promise<number>;
  parquet: boolean;
}

function exportSuite(name: string, clickhouseUrl: string | undefined) {
  const test = suite<{ w?: World }>(`HTTP export: ${name}`);
  const tmp = tempDir(`http-export-${clickhouseUrl === undefined ? 'chdb' : 'server'}`);
  const database = `fleetstream_http_export_${process.pid}`;
  let w!: World;

  test.before(async () => {
    // One process: the export limit and the cancellation are measured in the process holding the store.
    const { service, base } = await startEmbeddedService({ dir: tmp.dir, edgeWorkers: 1, ...(clickhouseUrl === undefined ? {} : { clickhouse: { url: clickhouseUrl, database } }) });
    const r = service.registry;
    const [owner, viewer, outsider] = await Promise.all(['owner', 'viewer', 'outsider'].map((n) => r.createUser({ name: n })));
    const ground = await r.createGround({ name: 'g', userId: owner.entity.id });
    await r.setMemberRole(ground.id, viewer.entity.id, 'viewer');
    const other = await r.createGround({ name: 'other', userId: outsider.entity.id });
    const devices = [];
    for (const n of ['a', 'b', 'c']) {
      const d = await r.createDevice({ groundId: ground.id, name: n, assets: ASSETS } as never);
      devices.push({ id: d.device.id, token: d.token });
    }
    const foreign = await r.createDevice({ groundId: other.id, name: 'x', assets: ASSETS } as never);
    const rows: StateRow[] = [];
    devices.forEach((d, i) => {
      for (let k = 0; k < 10; k++) rows.push({ deviceId: d.id, asset: 'temperature', ts: T0 + k * 60_000, receivedAt: T0 + k * 60_000 + 5, uplinkId: `u${i}-${k}`, value: i * 100 + k });
      rows.push({ deviceId: d.id, asset: 'label', ts: T0, receivedAt: T0 + 5, uplinkId: `l${i}`, value: '=cmd|calc' });
    });
    rows.push({ deviceId: foreign.device.id, asset: 'temperature', ts: T0, receivedAt: T0, uplinkId: 'f', value: -1 });
    await service.store.append(rows);
    w = {
      service, base, groundId: ground.id, otherGroundId: other.id, devices,
      owner: owner.token, viewer: viewer.token, outsider: outsider.token,
      parquet: clickhouseUrl === undefined,
      running: clickhouseUrl === undefined
        ? async () => Number((await service.store.query("SELECT count() AS n FROM system.processes WHERE query LIKE '%FINAL%' AND position(query, 'system.processes') = 0"))[0]?.n)
        : async () => Number((await clickhouseQuery(clickhouseUrl, `SELECT count() FROM system.processes WHERE query LIKE '%${database}%FINAL%' AND position(query, 'system.processes') = 0`)).trim()),
    };
  });
  test.after(async () => {
    await w?.service.stop();
    if (clickhouseUrl !== undefined) await clickhouseQuery(clickhouseUrl, `DROP DATABASE IF EXISTS ${database}`);
    tmp.remove();
  });

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  type Answer = Omit<Response, 'json'> & { json(): Promise<any> };
  const get = (path: string, token: string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Answer> =>
    fetch(w.base + path, { headers: { authorization: `Bearer ${token}`, ...headers }, signal });
  const history = (i = 0) => `/device/${w.devices[i].id}/asset/temperature/states`;

  test('the history route: JSON as before unless a format is asked; CSV, NDJSON by format or Accept, as an attachment', async () => {
    const json = await get(`${history()}?order=asc&limit=3`, w.viewer);
    assert.is(json.headers.get('content-type'), 'application/json');
    assert.equal((await json.json()).items.map((i: { value: number }) => i.value), [0, 1, 2]);
    const browser = await get(`${history()}?limit=1`, w.viewer, { accept: 'text/html,application/xhtml+xml' });
    assert.ok((await browser.json()).items.length === 1, 'an Accept naming none of the formats still gets the JSON history');
    const csv = await get(`${history()}?format=csv&from=${new Date(T0 + 60_000).toISOString()}&to=${T0 + 180_000}`, w.viewer);
    assert.is(csv.status, 200);
    assert.is(csv.headers.get('content-type'), 'text/csv; charset=utf-8; header=present');
    assert.match(csv.headers.get('content-disposition')!, new RegExp(`^attachment; filename="${w.devices[0].id}-temperature-[0-9T-]+Z\\.csv"$`));
    const [head, ...rows] = parseCsv(await csv.text());
    assert.is(head.join(','), 'device,asset,at,received_at,kind,value,uplink_id,seq');
    assert.equal(rows.map((r) => r[5]).sort(), ['1', '2']);
    const ndjson = await get(history(1), w.viewer, { accept: 'application/x-ndjson' });
    assert.is(ndjson.headers.get('content-type'), 'application/x-ndjson');
    const lines = (await ndjson.text()).trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines.map((l) => l.value).sort((a, b) => a - b), [100, 101, 102, 103, 104, 105, 106, 107, 108, 109]);
    const label = await get(`/device/${w.devices[0].id}/asset/label/states?format=csv`, w.viewer);
    assert.is(parseCsv(await label.text())[1][5], "'=cmd|calc", 'a formula-like string is guarded');
  });

  test('Parquet where the store writes it; else 406 with the formats it has; unknown formats 406', async () => {
    const parquet = await get(history(), w.viewer, { accept: 'application/vnd.apache.parquet' });
    if (w.parquet) {
      assert.is(parquet.status, 200);
      assert.is(parquet.headers.get('content-type'), 'application/vnd.apache.parquet');
      const bytes = Buffer.from(await parquet.arrayBuffer());
      assert.is(bytes.subarray(0, 4).toString('latin1'), 'PAR1');
    } else {
      assert.is(parquet.status, 406);
      const problem = await parquet.json();
      assert.is(problem.code, 'NOT_ACCEPTABLE');
      assert.equal(problem.allowed, ['csv', 'ndjson']);
    }
    for (const path of [`${history()}?format=xlsx`, `${history()}?format=CSV`, `/ground/${w.groundId}/export?format=json`]) {
      const res = await get(path, w.viewer);
      assert.is(res.status, 406, path);
      assert.is(res.headers.get('content-type'), 'application/problem+json');
      const problem = await res.json();
      assert.is(problem.code, 'NOT_ACCEPTABLE');
      assert.ok(problem.allowed.includes('csv') && problem.allowed.includes('ndjson'), JSON.stringify(problem));
    }
    const html = await get(`/ground/${w.groundId}/export`, w.viewer, { accept: 'text/html' });
    assert.is(html.status, 406);
    assert.equal((await html.json()).allowed, ['text/csv', 'application/x-ndjson', 'application/vnd.apache.parquet']);
    const q0 = await get(`/ground/${w.groundId}/export`, w.viewer, { accept: 'text/csv;q=0, application/x-ndjson;q=0.5' });
    assert.is(q0.headers.get('content-type'), 'application/x-ndjson');
    await q0.arrayBuffer();
    const paging = await get(`${history()}?format=csv&limit=5`, w.viewer);
    assert.is(paging.status, 422);
    assert.is((await paging.json()).errors[0].path, 'query.limit');
  });

  test('the ground export: every device by default, or those named; assets and [from, to); others\' devices never', async () => {
    const all = await get(`/ground/${w.groundId}/export?format=ndjson`, w.viewer);
    assert.is(all.status, 200);
    assert.match(all.headers.get('content-disposition')!, /^attachment; filename="ground-[0-9A-Za-z]{22}-[0-9T-]+Z\.ndjson"$/);
    const lines = (await all.text()).trim().split('\n').map((l) => JSON.parse(l));
    assert.is(lines.length, 33, '3 devices × (10 temperatures + a label), the other ground\'s device left out');
    const some = await get(`/ground/${w.groundId}/export?devices=${w.devices[0].id},${w.devices[2].id}&assets=temperature&from=${T0 + 120_000}&to=${new Date(T0 + 240_000).toISOString()}`, w.viewer, { accept: 'text/csv' });
    const rows = parseCsv(await some.text()).slice(1);
    assert.equal(rows.map((r) => `${r[0] === w.devices[0].id ? 'a' : 'c'}:${r[5]}`).sort(), ['a:2', 'a:3', 'c:202', 'c:203']);
  });

  test('hostile queries: 422 naming the field, nothing run', async () => {
    const g = `/ground/${w.groundId}/export`;
    const id = w.devices[0].id;
    const cases: [string, string][] = [
      [`${g}?devices=${Array.from({ length: 501 }, () => id).join(',')}`, 'query.devices'],
      [`${g}?devices=${encodeURIComponent("x') OR 1=1 --")}`, 'query.devices'],
      [`${g}?devices=${encodeURIComponent(`${id},\u0430${id.slice(1)}`)}`, 'query.devices'],
      [`${g}?devices=${id},`, 'query.devices'],
      [`${g}?devices=`, 'query.devices'],
      [`${g}?devices=${'A'.repeat(22)}`, 'query.devices'],
      [`${g}?assets=${encodeURIComponent("temperature' OR '1'='1")}`, 'query.assets'],
      [`${g}?assets=${encodeURIComponent('températuré')}`, 'query.assets'],
      [`${g}?devices=${'x,'.repeat(6000)}`, 'query.devices'],
      [`${g}?from=${T0 + 1}&to=${T0}`, 'query.from'],
      [`${g}?from=yesterday`, 'query.from'],
      [`${g}?to=2026-13-45T99:00:00Z`, 'query.to'],
      [`${g}?from=-5`, 'query.from'],
      [`${g}?limit=5`, 'query'],
      [`${history()}?format=csv&from=${T0}&to=${T0}`, 'query.from'],
    ];
    for (const [path, field] of cases) {
      const res = await get(path, w.viewer);
      assert.is(res.status, 422, path.slice(0, 120));
      const problem = await res.json();
      assert.is(problem.code, 'VALIDATION_FAILED');
      assert.ok(problem.errors.some((e: { path: string }) => e.path.startsWith(field)), `${path.slice(0, 80)}: ${JSON.stringify(problem.errors)}`);
    }
    const huge = await get(`${g}?devices=${'x,'.repeat(9000)}`, w.viewer);
    assert.is(huge.status, 431, 'a query past the request head\'s limit is refused before any route');
    assert.is((await huge.json()).code, 'HEADERS_TOO_LARGE');
    const foreign = await get(`${g}?devices=${w.devices[0].id}`, w.outsider);
    assert.is(foreign.status, 403, 'not a member');
  });

  test('authorised as a history read: members viewer and above, the device\'s own token for its history; strangers as the history route answers them', async () => {
    for (const token of [w.viewer, w.owner, w.devices[0].token]) {
      const res = await get(`${history()}?format=ndjson`, token);
      assert.is(res.status, 200);
      await res.arrayBuffer();
    }
    const json = await get(history(), w.outsider);
    const csv = await get(`${history()}?format=csv`, w.outsider);
    assert.is(csv.status, json.status, 'a stranger is answered as the JSON history answers him');
    assert.is((await csv.json()).code, (await json.json()).code);
    const otherDevice = await get(`${history(1)}?format=csv`, w.devices[0].token);
    const otherJson = await get(history(1), w.devices[0].token);
    assert.is(otherDevice.status, otherJson.status);
    await otherDevice.arrayBuffer();
    await otherJson.arrayBuffer();
    const ground = await get(`/ground/${w.groundId}/export`, w.devices[0].token);
    assert.is(ground.status, 403, 'a device token reads its own device, not its ground');
    await ground.arrayBuffer();
    assert.is((await get(`/ground/${w.groundId}/export`, 'not-a-token')).status, 401);
  });

  test('at most 4 exports at once (503 Retry-After); a client that leaves stops its query and frees its slot', async () => {
    const big = w.devices[2].id;
    const rows: StateRow[] = Array.from({ length: 400_000 }, (_, k) => ({ deviceId: big, asset: 'temperature', ts: T0 + 1_000_000 + k, receivedAt: T0 + 1_000_000 + k, uplinkId: `big-${k}`, value: k }));
    await w.service.store.append(rows);
    const aborts = Array.from({ length: 4 }, () => new AbortController());
    const open = await Promise.all(aborts.map((a) => get(`/ground/${w.groundId}/export?devices=${big}&format=ndjson`, w.viewer, {}, a.signal)));
    for (const res of open) assert.is(res.status, 200);
    // Each reads one chunk and then stops reading: its query waits on the client.
    for (const res of open) await res.body!.getReader().read();
    const busy = await get(`/ground/${w.groundId}/export?devices=${big}`, w.viewer);
    assert.is(busy.status, 503);
    assert.ok(Number(busy.headers.get('retry-after')) >= 1);
    assert.is((await busy.json()).code, 'BACKPRESSURE');
    assert.ok((await w.running()) >= 1, 'the exports\' queries are running');
    for (const a of aborts) a.abort();
    await waitFor(async () => (await w.running()) === 0, 20_000, 'the queries stopped once their clients left');
    await waitFor(async () => {
      const res = await get(`/ground/${w.groundId}/export?devices=${w.devices[0].id}&format=ndjson`, w.viewer);
      await res.arrayBuffer();
      return res.status === 200;
    }, 10_000, 'the slots are free again');
  });

  return test;
}

/**
 * Embedded edge workers reach the primary's store over the cluster channel, which carries calls,
 * not streams: their exports stream from the primary's loopback relay (app/exportRelay.ts), the
 * primary's 4-at-once limit shared by every worker, a client that leaves stopping the query.
 */
function edgeWorkerSuite() {
  const test = suite<{ service?: Service; base?: string }>('HTTP export: embedded edge workers');
  const tmp = tempDir('http-export-workers');
  test.before(async (ctx) => {
    ({ service: ctx.service, base: ctx.base } = await startEmbeddedService({ dir: tmp.dir, edgeWorkers: 2 }));
  });
  test.after(async (ctx) => {
    await ctx.service?.stop();
    tmp.remove();
  });
  test('exports through either worker: the files as in one process, Parquet too; 4 at once across workers; a client that leaves stops the query', async (ctx) => {
    const service = ctx.service!;
    const r = service.registry;
    const user = await r.createUser({ name: 'u' });
    const ground = await r.createGround({ name: 'g', userId: user.entity.id });
    const device = await r.createDevice({ groundId: ground.id, name: 'd', assets: ASSETS } as never);
    const id = device.device.id;
    await service.store.append(Array.from({ length: 400_000 }, (_, k) => ({ deviceId: id, asset: 'temperature', ts: T0 + k, receivedAt: T0 + k, uplinkId: `u${k}`, value: k })));
    const headers = { authorization: `Bearer ${user.token}` };
    const running = async () => Number((await service.store.query("SELECT count() AS n FROM system.processes WHERE query LIKE '%FINAL%' AND position(query, 'system.processes') = 0"))[0]?.n);
    // Requests land on either worker: several of each.
    for (let i = 0; i < 4; i++) {
      const csv = await fetch(`${ctx.base}/device/${id}/asset/temperature/states?format=csv&to=${T0 + 3}`, { headers });
      assert.is(csv.status, 200);
      assert.equal(parseCsv(await csv.text()).slice(1).map((row) => row[5]), ['0', '1', '2']);
      const parquet = await fetch(`${ctx.base}/ground/${ground.id}/export?format=parquet&to=${T0 + 3}`, { headers });
      assert.is(parquet.status, 200);
      assert.is(Buffer.from(await parquet.arrayBuffer()).subarray(0, 4).toString('latin1'), 'PAR1');
    }
    const aborts = Array.from({ length: 4 }, () => new AbortController());
    const open = await Promise.all(aborts.map((a) => fetch(`${ctx.base}/ground/${ground.id}/export?format=ndjson`, { headers, signal: a.signal })));
    for (const res of open) {
      assert.is(res.status, 200);
      await res.body!.getReader().read();
    }
    const busy = await fetch(`${ctx.base}/ground/${ground.id}/export`, { headers });
    assert.is(busy.status, 503);
    assert.is(((await busy.json()) as { code: string }).code, 'BACKPRESSURE');
    assert.ok(Number(busy.headers.get('retry-after')) >= 1);
    for (const a of aborts) a.abort();
    await waitFor(async () => (await running()) === 0, 20_000, 'the queries stopped once their clients left');
    await waitFor(async () => {
      const res = await fetch(`${ctx.base}/ground/${ground.id}/export?to=${T0 + 1}`, { headers });
      await res.arrayBuffer();
      return res.status === 200;
    }, 10_000, 'the slots are free again');
  });
  return test;
}

exportSuite('chdb (embedded)', undefined).run();
edgeWorkerSuite().run();
const url = process.env.CLICKHOUSE_URL;
unless('HTTP export on a ClickHouse server', url === undefined ? 'CLICKHOUSE_URL is not set (scripts/clickhouse.sh start; export CLICKHOUSE_URL=$(scripts/clickhouse.sh url))' : undefined, () => {
  exportSuite(`clickhouse server ${url}`, url).run();
});
