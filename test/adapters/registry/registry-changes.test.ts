/**
 * The registry changes contract on both adapters: in-process, and PostgreSQL LISTEN/NOTIFY (needs
 * DATABASE_URL_TEST; each fixture listens on the channel of a schema of its own).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import type { RegistryChanges } from '../../../engine/ports/registryChanges.ts';
import { InProcessRegistryChanges } from '../../../adapters/registry-changes/InProcessRegistryChanges.ts';
import { changesChannel, PostgresRegistryChanges } from '../../../adapters/registry-changes/PostgresRegistryChanges.ts';
import { registryChangesContract } from '../../contracts/registryChanges.contract.ts';
import { suite, withEnv } from '../../support/suite.ts';

registryChangesContract('in-process', async () => {
  const opened: RegistryChanges[] = [];
  return {
    shared: false,
    async open() {
      const changes = new InProcessRegistryChanges();
      opened.push(changes);
      return changes;
    },
    async dispose() {
      await Promise.all(opened.map((c) => c.close()));
    },
  };
}).run();

withEnv('postgres registry changes', ['DATABASE_URL_TEST'], 'a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/postgres', ({ DATABASE_URL_TEST: url }) => {
  const admin = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };

  registryChangesContract('postgres', async () => {
    const schema = `changes_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const opened: PostgresRegistryChanges[] = [];
    return {
      shared: true,
      async open() {
        const changes = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, reconnectInitialMs: 50, reconnectMaxMs: 500 });
        opened.push(changes);
        return changes;
      },
      async dispose() {
        await Promise.all(opened.map((c) => c.close()));
      },
      async drop(changes) {
        const origin = (changes as PostgresRegistryChanges).origin;
        const killed = await admin((c) => c.query('SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1', [`fleetstream-changes-${origin}`]));
        assert.is(killed.rowCount, 1, 'one session terminated');
      },
      async inject(payload) {
        await admin((c) => c.query('SELECT pg_notify($1, $2)', [changesChannel(schema), payload]));
      },
    };
  }).run();

  const specifics = suite('postgres registry changes: specifics');

  specifics('channels: one per schema, within PostgreSQL\'s 63-byte identifiers', () => {
    assert.is(changesChannel(undefined), 'fleetstream_registry');
    assert.is(changesChannel('tenant_a'), 'fleetstream_registry_tenant_a');
    const long = changesChannel('s'.repeat(63));
    assert.ok(long.length <= 63 && long !== changesChannel('s'.repeat(62) + 't'));
  });

  specifics('registries in other schemas do not hear each other', async () => {
    const a = await PostgresRegistryChanges.open({ url, schema: `changes_a_${randomBytes(4).toString('hex')}`, clock: systemClock });
    const b = await PostgresRegistryChanges.open({ url, schema: `changes_b_${randomBytes(4).toString('hex')}`, clock: systemClock });
    try {
      const heard: unknown[] = [];
      b.subscribe((c) => heard.push(c));
      await a.publish({ kind: 'device-changed', deviceId: 'A'.repeat(22) });
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(heard, []);
      assert.is(b.stats.ignored, 0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  specifics('a flood of bad notifications is counted, warned about at most once a second, and does not stop valid ones', async () => {
    const schema = `changes_f_${randomBytes(4).toString('hex')}`;
    const warnings: unknown[] = [];
    const logger = { ...silentLogger, warn: (message: string, fields?: Record<string, unknown>) => { warnings.push({ message, ...fields }); } };
    const a = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, logger });
    try {
      const heard: unknown[] = [];
      a.subscribe((c) => heard.push(c));
      await admin((c) => c.query("SELECT pg_notify($1, 'x' || n) FROM generate_series(1, 500) AS n", [changesChannel(schema)]));
      await admin((c) => c.query('SELECT pg_notify($1, $2)', [changesChannel(schema), JSON.stringify({ v: 1, origin: 'elsewhere', change: { kind: 'resync' } })]));
      const deadline = Date.now() + 5000;
      while (heard.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(heard, [{ kind: 'resync' }]);
      assert.is(a.stats.ignored, 500);
      assert.ok(warnings.length >= 1 && warnings.length <= 2, `${warnings.length} warnings`);
    } finally {
      await a.close();
    }
  });

  specifics('an unreachable database fails open() with UNAVAILABLE', async () => {
    const error = await PostgresRegistryChanges.open({ url: 'postgres://postgres@127.0.0.1:1/postgres', clock: systemClock, connectTimeoutMs: 1000 }).then(() => undefined, (e: unknown) => e);
    assert.is((error as { code?: string }).code, 'UNAVAILABLE');
  });

  specifics('changes published while disconnected are bounded by maxPending, the oldest dropped', async () => {
    const schema = `changes_p_${randomBytes(4).toString('hex')}`;
    const a = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, maxPending: 3, reconnectInitialMs: 60_000, reconnectMaxMs: 60_000 });
    const b = await PostgresRegistryChanges.open({ url, schema, clock: systemClock });
    try {
      const heard: string[] = [];
      b.subscribe((c) => heard.push(c.kind === 'device-changed' ? c.deviceId : c.kind));
      await admin((c) => c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`fleetstream-changes-${a.origin}`]));
      const deadline = Date.now() + 5000;
      while (a.connected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.not.ok(a.connected, 'a noticed the lost connection');
      for (let i = 0; i < 5; i++) await a.publish({ kind: 'device-changed', deviceId: `${'D'.repeat(21)}${i}` });
      assert.is(a.stats.dropped, 2);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(heard, [], 'nothing sent while disconnected');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    assert.is(a.stats.dropped, 5, 'closing before reconnecting drops the three kept');
  });

  specifics.run();
});
