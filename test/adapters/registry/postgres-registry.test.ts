/**
 * The registry contract on a PostgreSQL server. Needs DATABASE_URL_TEST, e.g.
 * postgres://postgres@127.0.0.1:5432/postgres; each registry gets its own schema, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { suite, withEnv } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
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
import { dropSchema } from '../../support/postgresSchema.ts';

const url = process.env.DATABASE_URL_TEST;


function schemaName(): string {
  return `registry_test_${process.pid}_${randomBytes(4).toString('hex')}`;
}

withEnv('postgres registry', ['DATABASE_URL_TEST'], 'a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/postgres', ({ DATABASE_URL_TEST: url }) => {
  const isolated: RegistryFactory = async ({ clock, quotaDefaults }) => {
    const schema = schemaName();
    const registry = await createPostgresRegistry({ url, schema, clock, poolSize: 4, quotaDefaults });
    return {
      registry,
      sql: async (text, params) => (await registry.executor.query<Record<string, unknown>>(text, params)).rows,
      dispose: async () => {
        await registry.close();
        await dropSchema(url!, schema);
      },
    };
  };
  registryContract('postgres', isolated).run();
  principalsContract('postgres', isolated).run();
  fleetContract('postgres', isolated).run();
  groundsContract('postgres', isolated).run();
  groundKeysContract('postgres', isolated).run();
  quotasContract('postgres', isolated).run();
  usageContract('postgres', isolated).run();
  auditContract('postgres', isolated).run();
  integrationsContract('postgres', isolated).run();
  integrationDeliveriesContract('postgres', isolated).run();
  rulesContract('postgres', isolated).run();
  alarmsContract('postgres', isolated).run();
  connectivityContract('postgres', isolated).run();
  activationContract('postgres', isolated).run();
  deviceTypesContract('postgres', isolated).run();
  activationLifecycleContract('postgres', isolated).run();

  const server = suite('postgres registry: server specifics');

  server('schemas isolate registries; a second process on one schema migrates nothing twice', async () => {
    const a = schemaName();
    const b = schemaName();
    try {
      const [ra, rb] = await Promise.all([createPostgresRegistry({ url, schema: a }), createPostgresRegistry({ url, schema: b })]);
      const user = await ra.createUser({ name: 'only in a' });
      assert.is(await rb.getUser(user.entity.id), undefined);
      // Two more registries start at once on schema a: the advisory lock lets one migrate.
      const [r1, r2] = await Promise.all([createPostgresRegistry({ url, schema: a }), createPostgresRegistry({ url, schema: a })]);
      assert.equal(await r1.getUser(user.entity.id), user.entity);
      const versions = (await r2.executor.query<{ version: number }>('SELECT version FROM schema_migrations')).rows;
      assert.equal(versions.map((v) => Number(v.version)).sort((x, y) => x - y), allMigrations.map((m) => m.version));
      await Promise.all([ra.close(), rb.close(), r1.close(), r2.close()]);
    } finally {
      await dropSchema(url!, a);
      await dropSchema(url!, b);
    }
  });

  server('options are validated; an unreachable server is UNAVAILABLE', async () => {
    await rejects(createPostgresRegistry({ url, schema: 'Bad-Schema' }), 'VALIDATION_FAILED', 'schema');
    await rejects(createPostgresRegistry({ url, schema: 'x"; DROP SCHEMA public; --' }), 'VALIDATION_FAILED', 'schema');
    await rejects(createPostgresRegistry({ url: '' }), 'VALIDATION_FAILED', 'url');
    const e = await rejects(createPostgresRegistry({ url: 'postgres://postgres@127.0.0.1:1/postgres', connectTimeoutMs: 2000 }), 'UNAVAILABLE');
    assert.is(e.retriable, true);
  });

  server.run();
});
