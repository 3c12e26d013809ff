/**
 * Pieces of the SQL registry below the port: the vendor-error table, the migration runner, the
 * PGlite data-dir lock.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { LOCK_FILE, lockDataDir } from '../../../adapters/pglite/dataDirLock.ts';
import { pgliteExecutor } from '../../../adapters/pglite/pgliteExecutor.ts';
import type { SqlExecutor } from '../../../adapters/sql-registry/executor.ts';
import { migrate } from '../../../adapters/sql-registry/migrate.ts';
import { migrations } from '../../../adapters/sql-registry/migrations.ts';
import { mapSqlError } from '../../../adapters/sql-registry/sqlErrors.ts';
import { rejects } from '../../contracts/registry.contract.ts';

const errors = suite('sql errors');

errors('vendor errors map through the table to stable codes', () => {
  const cases: Array<[unknown, string, boolean, string?]> = [
    [{ code: '23505', constraint: 'assets_device_name_key', message: 'duplicate key' }, 'CONFLICT', false, 'name'],
    [{ code: '23505', constraint: 'devices_ground_name_key' }, 'CONFLICT', false, 'name'],
    [{ code: '23505', constraint: 'devices_network_dev_eui_key' }, 'CONFLICT', false, 'network'],
    [{ code: '23505', constraint: 'some_future_key' }, 'CONFLICT', false],
    [{ code: '23503', constraint: 'devices_ground_id_fkey' }, 'NOT_FOUND', false, 'groundId'],
    [{ code: '23503' }, 'NOT_FOUND', false],
    [{ code: '23514', constraint: 'assets_kind_check' }, 'VALIDATION_FAILED', false],
    [{ code: '22P05' }, 'VALIDATION_FAILED', false],
    [{ code: '22001' }, 'VALIDATION_FAILED', false],
    [{ code: '40001' }, 'UNAVAILABLE', true],
    [{ code: '40P01' }, 'UNAVAILABLE', true],
    [{ code: '08006' }, 'UNAVAILABLE', true],
    [{ code: '57P01' }, 'UNAVAILABLE', true],
    [{ code: '53300' }, 'UNAVAILABLE', true],
    [{ code: '57014' }, 'TIMEOUT', true],
    [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'UNAVAILABLE', true],
    [Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), 'UNAVAILABLE', true],
    [Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }), 'TIMEOUT', true],
    [{ code: 'XX000' }, 'INTERNAL', false],
    [{ code: '42P01', message: 'relation does not exist' }, 'INTERNAL', false],
    [{ code: 'weird' }, 'INTERNAL', false],
    [new Error('no code at all'), 'INTERNAL', false],
    ['a string', 'INTERNAL', false],
    [null, 'INTERNAL', false],
    [undefined, 'INTERNAL', false],
  ];
  for (const [vendor, code, retriable, field] of cases) {
    const e = mapSqlError(vendor);
    assert.instance(e, FleetError);
    assert.is(e.code, code, JSON.stringify(vendor));
    assert.is(e.retriable, retriable, `${JSON.stringify(vendor)} retriable`);
    if (field) assert.is(e.detail?.field, field);
    assert.is(e.cause, vendor);
  }
  const own = new FleetError('NOT_FOUND', 'x');
  assert.is(mapSqlError(own), own);
});

const runner = suite<{ db: PGlite; sql: SqlExecutor }>('migrations');
let schemaSeq = 0;

runner.before(async (ctx) => {
  ctx.db = await PGlite.create();
  ctx.sql = pgliteExecutor(ctx.db);
});
runner.after(async (ctx) => {
  await ctx.sql.close();
});
runner.before.each(async (ctx) => {
  // PGlite is one session: a fresh schema on the search_path gives each case an empty database.
  const schema = `m${++schemaSeq}`;
  await ctx.sql.exec(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
});

const one = { version: 1, name: 'one', sql: 'CREATE TABLE a (x int);' };
const two = { version: 2, name: 'two', sql: 'CREATE TABLE b (y int); INSERT INTO b VALUES (1), (2);' };

runner('applies pending migrations in order, once, stamping the clock', async ({ sql }) => {
  const clock = new SimulatedClock(1234);
  assert.equal(await migrate(sql, { clock, migrations: [one] }), { applied: [1], version: 1 });
  assert.equal(await migrate(sql, { clock, migrations: [one] }), { applied: [], version: 1 });
  assert.equal(await migrate(sql, { clock, migrations: [one, two] }), { applied: [2], version: 2 });
  const rows = (await sql.query<{ version: number; name: string; applied_at: unknown; checksum: string }>('SELECT * FROM schema_migrations ORDER BY version')).rows;
  assert.equal(rows.map((r) => [r.version, r.name, Number(r.applied_at)]), [[1, 'one', 1234], [2, 'two', 1234]]);
  assert.match(rows[0].checksum, /^[0-9a-f]{64}$/);
  assert.equal((await sql.query('SELECT y FROM b ORDER BY y')).rows, [{ y: 1 }, { y: 2 }]);
});

runner('refuses a changed migration and a database newer than the build', async ({ sql }) => {
  await migrate(sql, { migrations: [one, two] });
  const e = await rejects(migrate(sql, { migrations: [{ ...one, sql: 'CREATE TABLE a (x bigint);' }, two] }), 'INTERNAL');
  assert.match(e.message, /differs/);
  const newer = await rejects(migrate(sql, { migrations: [one] }), 'INTERNAL');
  assert.match(newer.message, /newer/);
});

runner('misnumbered lists are refused; a failing migration leaves nothing behind', async ({ sql }) => {
  await rejects(migrate(sql, { migrations: [two] }), 'INTERNAL');
  await rejects(migrate(sql, { migrations: [one, { ...two, version: 3 }] }), 'INTERNAL');
  const broken = { version: 2, name: 'broken', sql: 'CREATE TABLE c (z int); SELECT no_such_function();' };
  let failed = false;
  try {
    await migrate(sql, { migrations: [one, broken] });
  } catch (error) {
    failed = true;
    assert.is(mapSqlError(error).code, 'INTERNAL');
  }
  assert.ok(failed, 'the broken migration fails');
  const tables = (await sql.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)).rows;
  assert.equal(tables, [], 'rolled back: not even schema_migrations remains');
});

runner('the registry schema applies cleanly and records its version', async ({ sql }) => {
  const report = await migrate(sql);
  assert.equal(report.applied, migrations.map((m) => m.version));
  const tables = (await sql.query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`)).rows.map((r) => r.table_name);
  for (const t of ['assets', 'devices', 'grounds', 'memberships', 'partners', 'schema_migrations', 'tokens', 'users']) assert.ok(tables.includes(t), t);
});

const lock = suite<{ dir: string }>('pglite data-dir lock');

lock.before.each((ctx) => {
  ctx.dir = mkdtempSync(join(tmpdir(), 'fleetstream-lock-'));
});
lock.after.each((ctx) => {
  rmSync(ctx.dir, { recursive: true, force: true });
});

lock('held once per process, released on close', async ({ dir }) => {
  const release = lockDataDir(dir);
  assert.is(readFileSync(join(dir, LOCK_FILE), 'utf8').trim(), String(process.pid));
  await rejects(Promise.resolve().then(() => lockDataDir(dir)), 'CONFLICT');
  await release();
  assert.not.ok(existsSync(join(dir, LOCK_FILE)));
  const again = lockDataDir(dir);
  await again();
});

lock('a live process holding the lock keeps others out', async ({ dir }) => {
  writeFileSync(join(dir, LOCK_FILE), `${process.ppid}\n`);
  const e = await rejects(Promise.resolve().then(() => lockDataDir(dir)), 'CONFLICT');
  assert.is(e.detail?.pid, process.ppid);
});

lock('stale locks (dead pid, our own pid from an earlier life, garbage) are taken over', async ({ dir }) => {
  for (const content of ['999999999\n', `${process.pid}\n`, 'garbage', '']) {
    writeFileSync(join(dir, LOCK_FILE), content);
    const release = lockDataDir(dir);
    assert.is(readFileSync(join(dir, LOCK_FILE), 'utf8').trim(), String(process.pid));
    await release();
  }
});

lock('a missing data dir is created', async ({ dir }) => {
  const nested = join(dir, 'a', 'b');
  const release = lockDataDir(nested);
  assert.ok(existsSync(join(nested, LOCK_FILE)));
  await release();
});

errors.run();
runner.run();
lock.run();
