import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PGlite } from '@electric-sql/pglite';
import { createPgliteRegistry, REGISTRY_SNAPSHOT } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { pgliteExecutor } from '../../../adapters/pglite/pgliteExecutor.ts';
import { migrate } from '../../../adapters/sql-registry/migrate.ts';
import { migrations as allMigrations } from '../../../adapters/sql-registry/migrations.ts';
import { activationContract } from '../../contracts/activation.contract.ts';
import { alarmsContract } from '../../contracts/alarms.contract.ts';
import { connectivityContract } from '../../contracts/connectivity.contract.ts';
import { activationLifecycleContract } from '../../contracts/activationLifecycle.contract.ts';
import { deviceTypesContract } from '../../contracts/deviceTypes.contract.ts';
import { fleetContract } from '../../contracts/fleet.contract.ts';
import { groundKeysContract } from '../../contracts/groundKeys.contract.ts';
import { groundsContract } from '../../contracts/grounds.contract.ts';
import { quotasContract } from '../../contracts/quotas.contract.ts';
import { usageContract } from '../../contracts/usage.contract.ts';
import { auditContract } from '../../contracts/audit.contract.ts';
import { integrationsContract } from '../../contracts/integrations.contract.ts';
import { integrationDeliveriesContract } from '../../contracts/integrationDeliveries.contract.ts';
import { principalsContract } from '../../contracts/principals.contract.ts';
import { rulesContract } from '../../contracts/rules.contract.ts';
import { registryContract, rejects, type RegistryFactory } from '../../contracts/registry.contract.ts';

const inMemory: RegistryFactory = async ({ clock, quotaDefaults }) => {
  const registry = await createPgliteRegistry({ clock, quotaDefaults });
  return {
    registry,
    sql: async (text, params) => (await registry.executor.query<Record<string, unknown>>(text, params)).rows,
    dispose: () => registry.close(),
  };
};

registryContract('pglite (in memory)', inMemory).run();
principalsContract('pglite (in memory)', inMemory).run();
fleetContract('pglite (in memory)', inMemory).run();
groundsContract('pglite (in memory)', inMemory).run();
groundKeysContract('pglite (in memory)', inMemory).run();
quotasContract('pglite (in memory)', inMemory).run();
usageContract('pglite (in memory)', inMemory).run();
auditContract('pglite (in memory)', inMemory).run();
integrationsContract('pglite (in memory)', inMemory).run();
integrationDeliveriesContract('pglite (in memory)', inMemory).run();
rulesContract('pglite (in memory)', inMemory).run();
alarmsContract('pglite (in memory)', inMemory).run();
connectivityContract('pglite (in memory)', inMemory).run();
activationContract('pglite (in memory)', inMemory).run();
deviceTypesContract('pglite (in memory)', inMemory).run();
activationLifecycleContract('pglite (in memory)', inMemory).run();

const files = suite('pglite registry: data dir');

files('data survives a reopen; one open registry per data dir', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-pglite-'));
  try {
    const first = await createPgliteRegistry({ dir });
    const user = await first.createUser({ name: 'kept' });
    await rejects(createPgliteRegistry({ dir }), 'CONFLICT');
    await first.close();
    const second = await createPgliteRegistry({ dir });
    assert.equal(await second.getUser(user.entity.id), user.entity);
    assert.equal(await second.authenticate(user.token), { scope: 'user', subjectId: user.entity.id });
    const migrations = (await second.executor.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows;
    assert.equal(migrations.map((m) => Number(m.version)), allMigrations.map((m) => m.version), 'reopening applies nothing twice');
    await second.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

files('a new data dir is created apart, then opened; a creation that fails is reported and leaves nothing open', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-pglite-'));
  const broken = mkdtempSync(join(tmpdir(), 'fleetstream-pglite-'));
  try {
    const registry = await createPgliteRegistry({ dir });
    const migrations = (await registry.executor.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows;
    assert.equal(migrations.map((m) => Number(m.version)), allMigrations.map((m) => m.version), 'created with its schema');
    const user = await registry.createUser({ name: 'first' });
    assert.equal(await registry.getUser(user.entity.id), user.entity);
    await registry.close();

    // initdb cannot make its `global` directory where a file stands
    writeFileSync(join(broken, 'global'), 'not a directory');
    const error = await createPgliteRegistry({ dir: broken }).then(() => undefined, (e: unknown) => e as Error & { code?: string });
    assert.ok(error, 'refused');
    assert.is(error!.code, 'UNAVAILABLE');
    assert.match(error!.message, /creating the registry in .* failed/);
    assert.not.ok(existsSync(join(broken, 'PG_VERSION')));
    // the lock was released: a second attempt fails the same way instead of CONFLICT
    const again = await createPgliteRegistry({ dir: broken }).then(() => undefined, (e: unknown) => e as Error & { code?: string });
    assert.is(again?.code, 'UNAVAILABLE');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(broken, { recursive: true, force: true });
  }
});

files.run();

const snapshots = suite('pglite registry: snapshot of a new registry');

const schemaOf = async (query: (text: string) => Promise<Record<string, unknown>[]>) =>
  query(`SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
         WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`);

snapshots('the snapshot is current: every migration of this build, nothing left to apply', async () => {
  // Fails after a migration is added or edited, or PGlite upgraded: run `npx node scripts/registry-snapshot.ts`.
  const db = await PGlite.create({ loadDataDir: new Blob([readFileSync(REGISTRY_SNAPSHOT)]) });
  try {
    const report = await migrate(pgliteExecutor(db));
    assert.equal(report.applied, [], 'the snapshot already holds every migration');
    assert.is(report.version, allMigrations.length);
  } finally {
    await db.close();
  }
});

snapshots('a registry made from the snapshot has the schema initdb and the migrations make', async () => {
  const fresh = await PGlite.create();
  const loaded = await createPgliteRegistry();
  try {
    await migrate(pgliteExecutor(fresh));
    const expected = await schemaOf(async (text) => (await fresh.query<Record<string, unknown>>(text)).rows);
    const actual = await schemaOf(async (text) => (await loaded.executor.query<Record<string, unknown>>(text)).rows);
    assert.ok(expected.length > 20, `${expected.length} columns`);
    assert.equal(actual, expected);
  } finally {
    await fresh.close();
    await loaded.close();
  }
});

snapshots('a snapshot that does not load falls back to initdb and leaves nothing of itself', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-pglite-'));
  const bad = join(dir, 'bad.tar.gz');
  const registryDir = join(dir, 'registry');
  try {
    writeFileSync(bad, Buffer.from('not a tarball at all'));
    const registry = await createPgliteRegistry({ dir: registryDir, snapshot: bad });
    const user = await registry.createUser({ name: 'after fallback' });
    assert.equal(await registry.getUser(user.entity.id), user.entity);
    await registry.close();
    assert.ok(existsSync(join(registryDir, 'PG_VERSION')));
    const reopened = await createPgliteRegistry({ dir: registryDir });
    assert.equal(await reopened.getUser(user.entity.id), user.entity);
    await reopened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

snapshots('a new data dir is unpacked from the snapshot in this process: the schema initdb makes, files synced, data kept', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-pglite-'));
  const fresh = await PGlite.create();
  try {
    const registry = await createPgliteRegistry({ dir });
    await migrate(pgliteExecutor(fresh));
    const expected = await schemaOf(async (text) => (await fresh.query<Record<string, unknown>>(text)).rows);
    assert.equal(await schemaOf(async (text) => (await registry.executor.query<Record<string, unknown>>(text)).rows), expected);
    const user = await registry.createUser({ name: 'in an unpacked registry' });
    await registry.close();
    assert.ok(existsSync(join(dir, 'PG_VERSION')));
    assert.ok(existsSync(join(dir, 'base')));
    const reopened = await createPgliteRegistry({ dir });
    assert.equal(await reopened.getUser(user.entity.id), user.entity);
    await reopened.close();
  } finally {
    await fresh.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

snapshots('a snapshot naming a path outside its directory is refused: nothing written there, initdb instead', async () => {
  const root = mkdtempSync(join(tmpdir(), 'fleetstream-pglite-'));
  const registryDir = join(root, 'registry');
  const escape = join(root, 'escaped');
  try {
    // One ustar entry named ../escaped holding "x".
    const header = Buffer.alloc(512);
    header.write('../escaped', 0, 'latin1');
    header.write('0000644\0', 100, 'latin1');
    header.write('00000000001\0', 124, 'latin1');
    header.write('0', 156, 'latin1');
    header.write('ustar\0', 257, 'latin1');
    const body = Buffer.alloc(512);
    body.write('x');
    const bad = join(root, 'escape.tar.gz');
    writeFileSync(bad, gzipSync(Buffer.concat([header, body, Buffer.alloc(1024)])));
    const registry = await createPgliteRegistry({ dir: registryDir, snapshot: bad });
    await registry.createUser({ name: 'after initdb' });
    await registry.close();
    assert.not.ok(existsSync(escape), 'nothing written outside the registry directory');
    assert.ok(existsSync(join(registryDir, 'PG_VERSION')), 'created by initdb');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

snapshots.run();
