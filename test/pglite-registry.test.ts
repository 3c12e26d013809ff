import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createPgliteRegistry } from '../adapters/pglite/createPgliteRegistry.ts';
import { migrations as allMigrations } from '../adapters/sql-registry/migrations.ts';
import { activationContract } from './contracts/activation.contract.ts';
import { activationLifecycleContract } from './contracts/activationLifecycle.contract.ts';
import { deviceTypesContract } from './contracts/deviceTypes.contract.ts';
import { registryContract, rejects, type RegistryFactory } from './contracts/registry.contract.ts';

const inMemory: RegistryFactory = async ({ clock }) => {
  const registry = await createPgliteRegistry({ clock });
  return {
    registry,
    sql: async (text, params) => (await registry.executor.query<Record<string, unknown>>(text, params)).rows,
    dispose: () => registry.close(),
  };
};

registryContract('pglite (in memory)', inMemory).run();
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
