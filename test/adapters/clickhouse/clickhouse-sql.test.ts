/**
 * The engine-free parts of the ClickHouse SQL core: payload bytes, literal escaping, the SQL
 * dialect guard (DESIGN.md §2) and the vendor error tables. The SQL itself runs in the contract
 * suites (test/adapters/clickhouse/chdb-store.test.ts, test/adapters/clickhouse/clickhouse-store.test.ts).
 */
import { ClickHouseError } from '@clickhouse/client';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chdbError } from '../../../adapters/chdb/createChdbStore.ts';
import { clickhouseServerError } from '../../../adapters/clickhouse/createClickHouseStore.ts';
import { clickhouseCodeOf, fleetErrorFromClickHouseCode } from '../../../adapters/clickhouse-sql/clickhouseErrors.ts';
import { encodeStateRowsTsv } from '../../../adapters/clickhouse-sql/encodeStateRowsTsv.ts';
import { aggregateSql, historySql, latestSql } from '../../../adapters/clickhouse-sql/stateQueries.ts';
import { checkIdentifier, createDatabaseSql, createTableSql, quoteString } from '../../../adapters/clickhouse-sql/stateTable.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';

const names = { database: 'fleetstream', table: 'states' };

test('TSV payload bytes for each value kind (golden)', () => {
  const payload = encodeStateRowsTsv([
    { deviceId: 'd1', asset: 'temp', ts: 1704067200000, receivedAt: 1704067200005, value: 21.5, uplinkId: 'u1' },
    { deviceId: 'd1', asset: 'neg', ts: -1, receivedAt: 0, value: -0, uplinkId: 'u1' },
    { deviceId: 'd\t2', asset: 'a\\b', ts: 1, receivedAt: 2, value: 'x\ny\r\0z', uplinkId: 'u\n2' },
    { deviceId: 'd3', asset: 'on', ts: 1, receivedAt: 2, value: true, uplinkId: 'u3' },
    { deviceId: 'd3', asset: 'off', ts: 1, receivedAt: 2, value: false, uplinkId: 'u3', seq: 3 },
    { deviceId: 'd3', asset: 'nil', ts: 1, receivedAt: 2, value: null, uplinkId: 'u3' },
    { deviceId: 'd3', asset: 'loc', ts: 1, receivedAt: 2, value: { lat: 50.85, note: 'tab\there' }, uplinkId: 'u3' },
    { deviceId: 'd3', asset: 'big', ts: 1, receivedAt: 2, value: 1e21, uplinkId: 'u3' },
  ]);
  assert.is(
    payload.toString('utf8'),
    [
      'd1\ttemp\t1704067200000\tu1\t1704067200005\tnumber\t21.5\t21.5\t0\t0',
      'd1\tneg\t-1\tu1\t0\tnumber\t-0\t-0\t0\t0',
      'd\\t2\ta\\\\b\t1\tu\\n2\t2\tstring\t0\tx\\ny\\r\\0z\t0\t0',
      'd3\ton\t1\tu3\t2\tboolean\t0\t\t1\t0',
      'd3\toff\t1\tu3\t2\tboolean\t0\t\t0\t3',
      'd3\tnil\t1\tu3\t2\tnull\t0\t\t0\t0',
      'd3\tloc\t1\tu3\t2\tjson\t0\t{"lat":50.85,"note":"tab\\\\there"}\t0\t0',
      'd3\tbig\t1\tu3\t2\tnumber\t1e+21\t1e+21\t0\t0',
      '',
    ].join('\n'),
  );
  assert.is(encodeStateRowsTsv([]).length, 0);
});

test('string literals escape everything that could end or cut them', () => {
  assert.is(quoteString("x'); DROP TABLE states; --"), "'x\\'); DROP TABLE states; --'");
  assert.is(quoteString('a\\'), "'a\\\\'");
  assert.is(quoteString("\\'"), "'\\\\\\''");
  assert.is(quoteString('nul\0 nl\n cr\r tab\t'), "'nul\\0 nl\\n cr\\r tab\\t'");
  assert.is(quoteString('😀'), "'😀'");
});

test('identifiers are plain names only', () => {
  assert.is(checkIdentifier('fleet_stream1', 'database'), 'fleet_stream1');
  for (const bad of ['', '1abc', 'a.b', 'a`b', 'a b', "a'", 'x'.repeat(64)]) {
    assert.throws(() => checkIdentifier(bad, 'database'), /database must match/);
  }
});

test('generated SQL stays inside what ClickHouse 18.16 understands', () => {
  const statements = [
    createDatabaseSql(names),
    createTableSql(names),
    latestSql(names, "x'{id:String}"),
    historySql(names, { deviceId: 'd', asset: 'a', from: -5, to: 10, limit: 100, order: 'asc' }),
    aggregateSql(names, { deviceId: 'd', asset: 'a', from: 0, to: 10, resolution: 'day' }),
  ];
  const banned = [/DateTime64/i, /\bTTL\b/i, /\bCODEC\b/i, /LowCardinality/i, /\bMap\s*\(/, /\bJSON\b/, /\bBool\b/, /Nullable/i, /\{\w+:\w+\}/, /\bSETTINGS\b/i, /positiveModulo/i];
  for (const sql of statements) {
    const withoutLiterals = sql.replace(/'(?:[^'\\]|\\.)*'/g, "''");
    for (const pattern of banned) assert.not.match(withoutLiterals, pattern, `${pattern} in ${sql}`);
  }
  // Int64 % small literal is Int16 on 18.16; the bucket divisor must be an Int64.
  assert.match(statements[4], /ts % toInt64\(86400000\)/);
});

test('ClickHouse error codes map through the table', () => {
  const cases: Array<[number, string, boolean]> = [
    [159, 'TIMEOUT', true],
    [241, 'UNAVAILABLE', true],
    [252, 'BACKPRESSURE', true],
    [516, 'UNAVAILABLE', false],
    [60, 'INTERNAL', false],
    [62, 'INTERNAL', false],
  ];
  for (const [code, fleet, retriable] of cases) {
    const error = fleetErrorFromClickHouseCode(code, 'm', undefined);
    assert.is(error.code, fleet, String(code));
    assert.is(error.retriable, retriable, String(code));
    assert.is(error.detail?.clickhouseCode, code);
  }
});

test('the code is read from 18.16 and current error bodies', () => {
  assert.is(clickhouseCodeOf("Code: 60, e.displayText() = DB::Exception: Table x.y doesn't exist., e.what() = DB::Exception"), 60);
  assert.is(clickhouseCodeOf('Code: 241. DB::Exception: Memory limit exceeded. (MEMORY_LIMIT_EXCEEDED) (version 24.8.1)'), 241);
  assert.is(clickhouseCodeOf('<html>502 Bad Gateway</html>'), undefined);
  assert.is(clickhouseCodeOf('an error mentioning Code: 60, later'), undefined);
});

test('server adapter errors: parsed, 18.16 text, sockets, deadline, anything else', () => {
  const parsed = clickhouseServerError(new ClickHouseError({ message: 'too many parts', code: '252', type: 'TOO_MANY_PARTS' }));
  assert.is(parsed.code, 'BACKPRESSURE');
  assert.is(clickhouseServerError(new Error('Code: 202, e.displayText() = DB::Exception: Too many simultaneous queries')).code, 'UNAVAILABLE');
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:18123'), { code: 'ECONNREFUSED' });
  assert.is(clickhouseServerError(refused).code, 'UNAVAILABLE');
  assert.is(clickhouseServerError(refused).retriable, true);
  assert.is(clickhouseServerError(Object.assign(new Error('t'), { code: 'ETIMEDOUT' })).code, 'TIMEOUT');
  const controller = new AbortController();
  controller.abort();
  assert.is(clickhouseServerError(new Error('The user aborted a request.'), controller.signal).code, 'TIMEOUT');
  const bodiless = clickhouseServerError(new Error(''));
  assert.is(bodiless.code, 'UNAVAILABLE', 'an error answer without a body (a server stopping) is retried');
  assert.is(bodiless.retriable, true);
  const other = clickhouseServerError(new Error('<html>502</html>'));
  assert.is(other.code, 'INTERNAL');
  assert.is(other.retriable, false);
  const fleet = new FleetError('CLOSED', 'x');
  assert.is(clickhouseServerError(fleet), fleet);
});

test('chDB errors: stable CHDB_* codes and ClickHouse codes', () => {
  assert.is(chdbError({ code: 'CHDB_CLOSED', message: 'closed' }).code, 'CLOSED');
  assert.is(chdbError({ code: 'CHDB_TIMEOUT', message: 't' }).code, 'TIMEOUT');
  const connection = chdbError({ code: 'CHDB_CONNECTION', message: 'one data directory per process' });
  assert.is(connection.code, 'UNAVAILABLE');
  assert.is(connection.retriable, false);
  assert.is(chdbError({ code: 'CHDB_QUERY', clickhouseCode: 241, message: 'memory' }).code, 'UNAVAILABLE');
  assert.is(chdbError({ code: 'CHDB_SYNTAX', clickhouseCode: 62, message: 'syntax' }).code, 'INTERNAL');
  assert.is(chdbError('weird').code, 'INTERNAL');
});

test.run();
