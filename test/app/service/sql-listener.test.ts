/**
 * The read-only SQL listener of a real embedded service (ClickHouse's HTTP interface over the
 * service's own chDB): plain HTTP as curl sends it, @clickhouse/client, the query shapes Grafana's
 * ClickHouse data source sends, every SQL block of docs/analytics.md as written; writes refused by
 * the engine with ClickHouse's error; credentials; hostile and malformed requests.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { loadConfig } from '../../../app/loadConfig.ts';
import * as assert from 'uvu/assert';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import type { Service } from '../../../app/createService.ts';
import { suite } from '../../support/suite.ts';
import { createDeviceOverHttp, startEmbeddedService } from '../../support/embeddedService.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const PASSWORD = 'analyst-password-0123456789';
const test = suite('sql listener');
const tmp = tempDir('sql-listener');
let service: Service;
let sqlBase = '';
let client: ClickHouseClient;
const T0 = Date.UTC(2026, 0, 1);
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const AUTH = { authorization: basic('default', PASSWORD) };

/** A query as curl sends it: GET with ?query=, or POST with the body. */
async function sql(query: string, init: { params?: Record<string, string>; headers?: Record<string, string>; post?: boolean } = {}) {
  const params = new URLSearchParams(init.params);
  if (!init.post) params.set('query', query);
  const res = await fetch(`${sqlBase}/?${params}`, { method: init.post ? 'POST' : 'GET', headers: init.headers ?? AUTH, body: init.post ? query : undefined });
  return { status: res.status, text: await res.text(), code: res.headers.get('x-clickhouse-exception-code'), type: res.headers.get('content-type') };
}

test.before(async () => {
  ({ service } = await startEmbeddedService({ dir: tmp.dir, sql: { host: '127.0.0.1', port: 0, user: 'default', password: PASSWORD }, stateRollups: 'on' }));
  sqlBase = `http://127.0.0.1:${service.sqlPort}`;
  const base = `http://127.0.0.1:${service.httpPort}`;
  const device = await createDeviceOverHttp(service, base, [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }]);
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${base}/device/${device.id}/asset/temperature/state`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ value: 20 + i, at: new Date(T0 + i * 60_000).toISOString() }),
    });
    assert.is(res.status, 202);
  }
  await waitFor(async () => (await sql('SELECT count() FROM fleetstream.state_rows')).text === '5\n', 15_000, 'states stored');
  client = createClient({ url: sqlBase, username: 'default', password: PASSWORD, log: { level: ClickHouseLogLevel.OFF } });
});

test.after(async () => {
  await client?.close();
  await service?.stop();
  tmp.remove();
});

test('curl: GET ?query= and POST bodies, TabSeparated by default, default_format, FORMAT, database, param_, /ping', async () => {
  assert.equal(await sql('SELECT 1'), { status: 200, text: '1\n', code: null, type: 'text/tab-separated-values; charset=UTF-8' });
  assert.is((await sql('SELECT count() FROM fleetstream.state_rows', { post: true })).text, '5\n');
  const json = await sql('SELECT asset, value_number FROM latest_states FORMAT JSON', { params: { database: 'fleetstream' } });
  assert.is(json.status, 200, json.text);
  assert.equal(JSON.parse(json.text).data, [{ asset: 'temperature', value_number: 24 }]);
  const compact = await sql('SELECT {n:UInt8} + 1 AS x', { params: { default_format: 'JSONCompact', param_n: '41' } });
  assert.equal(JSON.parse(compact.text).data, [[42]]);
  assert.is(compact.type, 'application/json; charset=UTF-8');
  // ClickHouse puts the URL's part first, the body on the next line.
  const split = await fetch(`${sqlBase}/?query=${encodeURIComponent('SELECT count()')}`, { method: 'POST', headers: AUTH, body: 'FROM fleetstream.state_rows' });
  assert.is(await split.text(), '5\n');
  const ping = await fetch(`${sqlBase}/ping`);
  assert.is(await ping.text(), 'Ok.\n');
});

test('rollups turned on in the service (--state-rollups on): the minute, hour and day tables hold the states', async () => {
  // Refreshed beside ingest, a few seconds behind it.
  const day = 'SELECT sum(states) FROM fleetstream.states_day FINAL';
  await waitFor(async () => (await sql(day)).text === '5\n', 30_000, 'rollups refreshed');
  // Beside them, while the service runs, the marker of buckets still to refresh (states_rollups_pending).
  const tables = await sql("SELECT name FROM system.tables WHERE database = 'fleetstream' AND name LIKE 'states_%' AND name NOT LIKE '%_rollups_%' ORDER BY name");
  assert.is(tables.text, 'states_day\nstates_hour\nstates_minute\n');
  assert.is((await sql('SELECT sum(states) FROM fleetstream.states_day FINAL')).text, '5\n');
});

test('@clickhouse/client: ping, query in JSONEachRow and JSON, errors as ClickHouseError with the code', async () => {
  assert.ok((await client.ping()).success);
  const rows = await (await client.query({ query: 'SELECT ts, value_number FROM fleetstream.state_rows ORDER BY ts', format: 'JSONEachRow' })).json<{ ts: string; value_number: number }>();
  assert.equal(rows.map((r) => [Number(r.ts), r.value_number]), [0, 1, 2, 3, 4].map((i) => [T0 + i * 60_000, 20 + i]));
  const parameterised = await client.query({ query: 'SELECT count() AS c FROM fleetstream.state_rows WHERE value_number > {min:Float64}', format: 'JSONEachRow', query_params: { min: 21.5 } });
  assert.equal((await parameterised.json<{ c: number | string }>()).map((r) => Number(r.c)), [3]);
  const failed = await client.command({ query: 'DROP TABLE fleetstream.states' }).then(() => undefined, (error: unknown) => error as { code?: string; type?: string });
  assert.is(failed?.code, '164');
  assert.is(failed?.type, 'READONLY');
  const wrong = createClient({ url: sqlBase, username: 'default', password: 'not-the-password-at-all', log: { level: ClickHouseLogLevel.OFF } });
  const refused = await wrong.query({ query: 'SELECT 1' }).then(() => undefined, (error: unknown) => error as { code?: string });
  assert.is(refused?.code, '516');
  await wrong.close();
});

test('the query shapes of Grafana\'s ClickHouse data source (macros expanded, settings as parameters)', async () => {
  const grafana = { default_format: 'JSON', max_execution_time: '30' };
  const shapes = [
    'SELECT version()',
    'SHOW DATABASES',
    "SELECT name FROM system.tables WHERE database = 'fleetstream'",
    'DESCRIBE TABLE fleetstream.state_rows',
    `SELECT toDateTime(intDiv(ts, 1000)) AS time, asset, value_number AS value FROM fleetstream.state_rows
     WHERE value_kind = 'number' AND ts >= toUnixTimestamp(toDateTime(${T0 / 1000 - 60})) * 1000 AND ts < toUnixTimestamp(toDateTime(${T0 / 1000 + 3600})) * 1000 ORDER BY time`,
  ];
  for (const query of shapes) {
    const res = await sql(query, { params: grafana, post: true });
    assert.is(res.status, 200, `${query}: ${res.text}`);
    assert.ok(JSON.parse(res.text).data.length > 0, query);
  }
  // clickhouse-go (the plugin's driver) reads Native.
  const native = await fetch(`${sqlBase}/?default_format=Native`, { method: 'POST', headers: AUTH, body: 'SELECT 1 AS one' });
  assert.is(native.status, 200);
  assert.ok((await native.arrayBuffer()).byteLength > 0);
});

test('every SQL block of docs/analytics.md runs as written', async () => {
  const doc = readFileSync(new URL('../../../docs/analytics.md', import.meta.url), 'utf8');
  const blocks = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length >= 8);
  for (const block of blocks) {
    const res = await sql(block, { post: true });
    assert.is(res.status, 200, `${block}\n→ ${res.text}`);
  }
});

test('writes are refused by the engine with ClickHouse\'s READONLY error, however they are dressed', async () => {
  const writes: Array<[string, Record<string, string>?]> = [
    ["INSERT INTO fleetstream.states (device_id, asset, ts) VALUES ('x', 'y', 1)"],
    ['CREATE TABLE fleetstream.evil (a Int8) ENGINE = Memory'],
    ['DROP TABLE fleetstream.states'],
    ['DROP DATABASE fleetstream'],
    ['ALTER TABLE fleetstream.states DELETE WHERE 1'],
    ['TRUNCATE TABLE fleetstream.states'],
    ['SET readonly = 0'],
    ['SELECT 1 SETTINGS readonly = 0'],
    ['SELECT 1; DROP TABLE fleetstream.states'],
    ["INSERT INTO FUNCTION file('evil.csv', 'CSV') SELECT 1"],
    ["SELECT * FROM file('/etc/passwd', 'LineAsString')"],
    ['SELECT 1', { readonly: '0' }],
  ];
  for (const [query, params] of writes) {
    const res = await sql(query, { post: true, params });
    assert.is(res.status, 403, `${query}: ${res.status} ${res.text}`);
    assert.is(res.code, '164', query);
    assert.match(res.text, /^Code: 164\. DB::Exception: .*\(READONLY\)/, query);
  }
  assert.is((await sql('SELECT count() FROM fleetstream.state_rows')).text, '5\n', 'nothing changed');
  assert.is((await sql("SELECT count() FROM system.tables WHERE name = 'evil'")).text, '0\n');
  // The service itself still writes.
  const rows = await service.store.query('SELECT count() AS c FROM fleetstream.states');
  assert.ok(Number(rows[0].c) >= 5);
});

test('a query runs no longer than max_execution_time: the client may shorten it (code 159, TIMEOUT_EXCEEDED), never lift it (0 or more)', async () => {
  const endless = 'SELECT count() FROM numbers(100000000000)';
  const shortened = await sql(endless, { params: { max_execution_time: '1' } });
  assert.is(shortened.code, '159', shortened.text);
  assert.match(shortened.text, /TIMEOUT_EXCEEDED/);
  // Asking in the query itself for none (0) or for more does not lift it.
  for (const asked of ['0', '100000']) {
    const lifted = await sql(`${endless} SETTINGS max_execution_time = ${asked}`, { params: { max_execution_time: '1' } });
    // Read-only refuses the query's own SETTINGS (164); were it let through, the deadline would stop it (159).
    assert.ok(lifted.code === '164' || lifted.code === '159', `SETTINGS max_execution_time = ${asked} in the query: ${lifted.status} ${lifted.text.slice(0, 200)}`);
  }
});

test('a wrong or missing credential is refused 401 (code 516), in every way ClickHouse reads one', async () => {
  const refusals: Array<Record<string, string>> = [
    {},
    { authorization: basic('default', 'wrong-password-0123456789') },
    { authorization: basic('other', PASSWORD) },
    { authorization: basic('default', `${PASSWORD}x`) },
    { authorization: basic('default', PASSWORD.slice(0, -1)) },
    { authorization: `Bearer ${PASSWORD}` },
    { authorization: 'Basic !!!' },
    { 'x-clickhouse-user': 'default', 'x-clickhouse-key': 'nope' },
    { 'x-clickhouse-user': 'd\u00e9fault', 'x-clickhouse-key': PASSWORD }, // a look-alike name
    { ...AUTH, 'x-clickhouse-user': 'default', 'x-clickhouse-key': PASSWORD }, // two ways at once
  ];
  for (const headers of refusals) {
    const res = await sql('SELECT 1', { headers });
    assert.is(res.status, 401, JSON.stringify(headers));
    assert.is(res.code, '516');
    assert.not.match(res.text, PASSWORD);
  }
  assert.is((await sql('SELECT 1', { headers: { 'x-clickhouse-user': 'default', 'x-clickhouse-key': PASSWORD } })).text, '1\n');
  assert.is((await sql('SELECT 1', { headers: {}, params: { user: 'default', password: PASSWORD } })).text, '1\n');
  assert.is((await sql('SELECT 1', { headers: {}, params: { user: 'default', password: 'x' } })).status, 401);
});

test('oversized, malformed and hostile requests: ClickHouse\'s errors, nothing run', async () => {
  const big = `SELECT '${'x'.repeat(300_000)}'`;
  // One at a time: each answer is checked on its own, not against the listener's cap of 4 queries at once (tested below).
  const cases: Array<[string, () => Promise<{ status: number; code: string | null; text: string }>, number, string]> = [
    ['oversized body', () => sql(big, { post: true }), 400, '62'],
    ['empty query', () => sql('', { post: true }), 400, '62'],
    ['query given twice', () => fetch(`${sqlBase}/?query=SELECT%201&query=SELECT%202`, { headers: AUTH }).then(read), 400, '36'],
    ['bad format name', () => sql('SELECT 1', { params: { default_format: 'JSON;DROP' } }), 400, '73'],
    ['unknown format', () => sql('SELECT 1', { params: { default_format: 'NoSuchFormat' } }), 400, '73'],
    ['unknown setting', () => sql('SELECT 1', { params: { no_such_setting: '1' } }), 400, '115'],
    ['setting name with SQL in it', () => sql('SELECT 1', { params: { 'max_threads = 1; DROP TABLE x; --': '1' } }), 400, '115'],
    ['setting value with quotes', () => sql('SELECT 1', { params: { max_threads: "1'; DROP TABLE fleetstream.states; --" } }), 400, ''],
    ['NUL in a parameter', () => sql('SELECT 1', { params: { max_threads: '1\u0000' } }), 400, '36'],
    ['unknown database', () => sql('SELECT 1', { params: { database: 'nosuch' } }), 404, '81'],
    ['unknown table', () => sql('SELECT * FROM fleetstream.nosuch'), 404, '60'],
    ['syntax error', () => sql('SELEC 1'), 400, '62'],
    ['unknown path', () => fetch(`${sqlBase}/nope?query=SELECT%201`, { headers: AUTH }).then(read), 404, '60'],
    ['PUT', () => fetch(`${sqlBase}/?query=SELECT%201`, { method: 'PUT', headers: AUTH }).then(read), 400, '36'],
    ['compressed body', () => fetch(`${sqlBase}/`, { method: 'POST', headers: { ...AUTH, 'content-encoding': 'gzip' }, body: 'SELECT 1' }).then(read), 400, '36'],
  ];
  for (const [what, answer, status, code] of cases) {
    const res = await answer();
    assert.is(res.status, status, `${what}: ${res.status} ${res.text.slice(0, 300)}`);
    if (code !== '') assert.is(res.code, code, what);
    assert.match(res.text, /^Code: \d+\. DB::Exception: /, what);
  }
  assert.is((await sql('SELECT count() FROM fleetstream.state_rows')).text, '5\n');
});

test('more than 4 queries at once: the rest refused 503, code 202 (TOO_MANY_SIMULTANEOUS_QUERIES), and answered again once they end', async () => {
  const slow = () => sql('SELECT sleep(1)');
  const answers = await Promise.all(Array.from({ length: 6 }, slow));
  const refused = answers.filter((a) => a.status === 503);
  assert.is(answers.filter((a) => a.status === 200).length, 4, JSON.stringify(answers.map((a) => a.status)));
  assert.is(refused.length, 2);
  for (const a of refused) {
    assert.is(a.code, '202');
    assert.match(a.text, /^Code: 202\. DB::Exception: Too many simultaneous queries\. Maximum: 4/);
  }
  assert.is((await sql('SELECT 1')).text, '1\n');
});

test('fleetstream sql: through the running service\'s admin socket, in ClickHouse\'s formats; writes refused', async () => {
  // The embedded service's environment: no server URLs (the test environment names some).
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !['CLICKHOUSE_URL', 'KAFKA_BROKERS', 'DATABASE_URL'].includes(k)));
  const cli = (...args: string[]) => promisify(execFile)(process.execPath, [new URL('../../../bin/fleetstream.ts', import.meta.url).pathname, 'sql', ...args, '--data-dir', `${tmp.dir}/data`], { env })
    .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }), (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }));
  const tsv = await cli('SELECT asset, count() FROM fleetstream.state_rows GROUP BY asset');
  assert.equal(tsv, { code: 0, stdout: 'temperature\t5\n', stderr: tsv.stderr });
  const json = await cli('SELECT max(value_number) AS top FROM fleetstream.state_rows', '--format', 'JSONEachRow');
  assert.equal(JSON.parse(json.stdout), { top: 24 });
  const refused = await cli('DROP TABLE fleetstream.states');
  assert.is(refused.code, 1);
  assert.match(refused.stderr, /Code: 164\. DB::Exception: .*\(READONLY\)/);
  const bad = await cli('SELECT 1', '--format', 'NoSuchFormat');
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /Code: 73/);
  assert.is((await cli('SELECT 1', 'SELECT 2')).code, 2, 'one query, one argument');
  const distributed = await cli('SELECT 1', '--clickhouse-url', 'http://127.0.0.1:1');
  assert.is(distributed.code, 2);
  assert.match(distributed.stderr, /query it there/);
  assert.is((await sql('SELECT count() FROM fleetstream.state_rows')).text, '5\n');
});

test('configuration: the SQL listener is off by default, needs a password, and is refused beside a ClickHouse server', () => {
  assert.is(loadConfig({}, {}).sql?.port, -1);
  assert.is(loadConfig({}, {}).sql?.host, '127.0.0.1');
  const on = loadConfig({ 'sql-port': '8124' }, { SQL_PASSWORD: PASSWORD, SQL_USER: 'analyst' });
  assert.equal(on.sql, { host: '127.0.0.1', port: 8124, user: 'analyst', password: PASSWORD });
  assert.throws(() => loadConfig({ 'sql-port': '8124' }, {}), /needs --sql-password/);
  assert.throws(() => loadConfig({ 'sql-port': '8124', 'sql-password': 'short' }, {}), /invalid configuration/);
  assert.throws(() => loadConfig({ 'sql-port': '8124', 'sql-user': 'a b' }, { SQL_PASSWORD: PASSWORD }), /invalid configuration/);
  assert.throws(() => loadConfig({ 'sql-port': '8124', 'clickhouse-url': 'http://ch:8123' }, { SQL_PASSWORD: PASSWORD }), /query that ClickHouse server directly/);
});

async function read(res: Response) {
  return { status: res.status, code: res.headers.get('x-clickhouse-exception-code'), text: await res.text() };
}

test.run();
