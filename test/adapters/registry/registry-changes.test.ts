/**
 * The registry changes contract on both adapters: in-process, and PostgreSQL LISTEN/NOTIFY (needs
 * DATABASE_URL_TEST; each fixture listens on the channel of a schema of its own).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import * as assert from 'uvu/assert';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import type { RegistryChange, RegistryChanges } from '../../../engine/ports/registryChanges.ts';
import { InProcessRegistryChanges } from '../../../adapters/registry-changes/InProcessRegistryChanges.ts';
import { changesChannel, PostgresRegistryChanges } from '../../../adapters/registry-changes/PostgresRegistryChanges.ts';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { hashToken } from '../../../engine/access/tokens.ts';
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

  /** Waits (5 s at most) until `heard` holds `count` changes, then checks it holds exactly that many. */
  const heardAtLeast = async (heard: readonly RegistryChange[], count: number) => {
    const deadline = Date.now() + 5000;
    while (heard.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.is(heard.length, count, `${count} changes heard: ${JSON.stringify(heard)}`);
  };

  specifics('channels: one per schema, within PostgreSQL\'s 63-byte identifiers', () => {
    assert.is(changesChannel('public'), 'fleetstream_registry_public');
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

  specifics('a registry\'s transactions announce their changes, sent only if they commit, whoever makes them', async () => {
    // a schema name long enough for the hashed channel: the database and changesChannel must agree
    const schema = `announce_${randomBytes(20).toString('hex')}`;
    assert.ok(`fleetstream_registry_${schema}`.length > 63);
    const origin = 'writer0origin0';
    // the registry alone, without the publishing wrapper: a process that dies between its commit and its publish
    const registry = await createPostgresRegistry({ url, schema, origin, poolSize: 2 });
    const writer = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, origin, announcedByDatabase: true });
    const other = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, announcedByDatabase: true });
    try {
      const heard: RegistryChange[] = [];
      const echoed: RegistryChange[] = [];
      other.subscribe((c) => heard.push(c));
      writer.subscribe((c) => echoed.push(c));
      const until = (count: number) => heardAtLeast(heard, count);
      const user = await registry.createUser({ name: 'ann' });
      const ground = await registry.createGround({ name: 'site', userId: user.entity.id });
      await until(1);
      assert.equal(heard[0], { kind: 'membership-changed', groundId: ground.id, userId: user.entity.id }, 'the ground\'s first member');
      const { device, token } = await registry.createDevice({ groundId: ground.id, name: 'meter', assets: [{ name: 't', is: 'sensor' }] });
      await until(2); // the device and its asset: one change, NOTIFY folds identical ones of a transaction
      assert.equal(heard[1], { kind: 'device-changed', deviceId: device.id });
      heard.length = 0;
      await registry.upsertAsset(device.id, 'h', { is: 'sensor' });
      await until(1);
      assert.equal(heard, [{ kind: 'device-changed', deviceId: device.id }]);
      heard.length = 0;
      assert.ok(await registry.revokeToken(token));
      await until(1);
      assert.equal(heard, [{ kind: 'token-revoked', tokenHash: hashToken(token) }]);
      heard.length = 0;
      // a transaction that rolls back announces nothing; an operator's own SQL is announced (origin 'database')
      await admin(async (c) => {
        await c.query(`SET search_path = "${schema}"`);
        await c.query('BEGIN');
        await c.query('DELETE FROM memberships WHERE ground_id = $1', [ground.id]);
        await c.query('ROLLBACK');
        await c.query('DELETE FROM assets WHERE device_id = $1', [device.id]);
        await c.query('DELETE FROM devices WHERE id = $1', [device.id]);
      });
      await until(2); // the two assets' deletions fold into one device-changed; then the device's
      assert.equal(heard, [{ kind: 'device-changed', deviceId: device.id }, { kind: 'device-deleted', deviceId: device.id }]);
      assert.equal(echoed, heard, 'the writer hears what others made, and skips what its own connections announced');
      assert.is(other.stats.ignored + writer.stats.ignored, 0, 'every announcement is a valid notification');
    } finally {
      await Promise.all([writer.close(), other.close(), registry.close()]);
      await admin((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    }
  });

  specifics('a ground\'s quota set, changed and removed is announced by the transaction, also by an operator\'s SQL', async () => {
    const schema = `announce_quota_${randomBytes(4).toString('hex')}`;
    const registry = await createPostgresRegistry({ url, schema, poolSize: 2 });
    const other = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, announcedByDatabase: true });
    try {
      const heard: RegistryChange[] = [];
      other.subscribe((c) => heard.push(c));
      const user = await registry.createUser({ name: 'ann' });
      const ground = await registry.createGround({ name: 'site', userId: user.entity.id });
      await heardAtLeast(heard, 1);
      heard.length = 0;
      const started = Date.now();
      await registry.setQuota(ground.id, { statesPerSecond: 10 });
      await heardAtLeast(heard, 1);
      assert.ok(Date.now() - started < 1000, 'heard within a second');
      await registry.setQuota(ground.id, { devices: 3 });
      await registry.removeQuota(ground.id);
      await admin(async (c) => {
        await c.query(`SET search_path = "${schema}"`);
        await c.query('INSERT INTO ground_quotas (ground_id, retention_days, updated_at) VALUES ($1, 30, 0)', [ground.id]);
      });
      await heardAtLeast(heard, 4);
      assert.equal(heard, Array.from({ length: 4 }, () => ({ kind: 'quota-changed', groundId: ground.id })));
    } finally {
      await Promise.all([other.close(), registry.close()]);
      await admin((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    }
  });

  specifics('recording when devices were last seen announces nothing; any other change of a device still does', async () => {
    const schema = `announce_seen_${randomBytes(4).toString('hex')}`;
    const registry = await createPostgresRegistry({ url, schema, poolSize: 2 });
    const other = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, announcedByDatabase: true });
    try {
      const heard: RegistryChange[] = [];
      other.subscribe((c) => heard.push(c));
      const user = await registry.createUser({ name: 'ann' });
      const ground = await registry.createGround({ name: 'site', userId: user.entity.id });
      const { device } = await registry.createDevice({ groundId: ground.id, name: 'meter', assets: [{ name: 't', is: 'sensor' }] });
      const { device: second } = await registry.createDevice({ groundId: ground.id, name: 'valve', assets: [{ name: 't', is: 'sensor' }] });
      await heardAtLeast(heard, 3);
      heard.length = 0;
      await registry.recordActivity([{ deviceId: device.id, at: 1_000 }, { deviceId: second.id, at: 2_000 }]);
      await registry.recordActivity([{ deviceId: device.id, at: 3_000 }]);
      assert.is((await registry.connectivity(device.id, Date.now()))?.lastSeenAt, 3_000, 'the time is recorded');
      // notifications arrive in commit order: one made by the last-seen updates would come first
      await registry.updateDevice(second.id, { title: 'Valve' });
      await heardAtLeast(heard, 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(heard, [{ kind: 'device-changed', deviceId: second.id }]);
    } finally {
      await Promise.all([other.close(), registry.close()]);
      await admin((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    }
  });

  specifics('integrations are announced by the transactions that change them, a ground\'s deletion included', async () => {
    const schema = `announce_i_${randomBytes(4).toString('hex')}`;
    const registry = await createPostgresRegistry({ url, schema, poolSize: 2 });
    const other = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, announcedByDatabase: true });
    try {
      const heard: RegistryChange[] = [];
      other.subscribe((c) => { if (c.kind.startsWith('integration-')) heard.push(c); });
      const until = (count: number) => heardAtLeast(heard, count);
      const user = await registry.createUser({ name: 'ann' });
      const ground = await registry.createGround({ name: 'site', userId: user.entity.id });
      const { integration } = await registry.createIntegration({ groundId: ground.id, name: 'app', kind: 'webhook', url: 'https://r.example/in', events: ['state'] });
      const changed = { kind: 'integration-changed', integrationId: integration.id, groundId: ground.id } as const;
      await until(1);
      assert.equal(heard, [changed]);
      await registry.updateIntegration(integration.id, { name: 'renamed' });
      await until(2);
      await registry.rotateIntegrationSecret(integration.id, { graceMs: 0 });
      await until(3);
      assert.equal(heard, [changed, changed, changed]);
      heard.length = 0;
      assert.ok(await registry.deleteIntegration(integration.id));
      await until(1);
      assert.equal(heard, [{ kind: 'integration-deleted', integrationId: integration.id, groundId: ground.id }]);
      heard.length = 0;
      const second = await registry.createIntegration({ groundId: ground.id, name: 'b', kind: 'webhook', url: 'https://r.example/in', events: ['state'] });
      await until(1);
      heard.length = 0;
      await admin(async (c) => {
        await c.query(`SET search_path = "${schema}"`);
        await c.query('DELETE FROM grounds WHERE id = $1', [ground.id]);
      });
      await until(1);
      assert.equal(heard, [{ kind: 'integration-deleted', integrationId: second.integration.id, groundId: ground.id }], 'cascaded from the ground');
    } finally {
      await Promise.all([other.close(), registry.close()]);
      await admin((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    }
  });

  specifics('rules are announced by the transactions that change them, a ground\'s deletion included', async () => {
    const schema = `announce_r_${randomBytes(4).toString('hex')}`;
    const registry = await createPostgresRegistry({ url, schema, poolSize: 2 });
    const other = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, announcedByDatabase: true });
    try {
      const heard: RegistryChange[] = [];
      other.subscribe((c) => { if (c.kind.startsWith('rule-')) heard.push(c); });
      const until = (count: number) => heardAtLeast(heard, count);
      const user = await registry.createUser({ name: 'ann' });
      const ground = await registry.createGround({ name: 'site', userId: user.entity.id });
      const device = await registry.createDevice({ groundId: ground.id, name: 'meter' });
      const rule = await registry.createRule({ groundId: ground.id, name: 'too hot', asset: 'temp', condition: { above: 30 }, severity: 'major' });
      const changed = { kind: 'rule-changed', ruleId: rule.id, groundId: ground.id } as const;
      await until(1);
      assert.equal(heard, [changed]);
      await registry.updateRule(rule.id, { name: 'renamed' });
      await until(2);
      assert.equal(heard, [changed, changed]);
      // Evaluations lock the rule's row for their standings, and change nothing of it.
      await registry.applyEvaluation({ ruleId: rule.id, groundId: ground.id, deviceId: device.device.id, asset: 'temp', severity: 'major', at: 1, stateId: 's1', value: 31, holds: true, clears: false });
      heard.length = 0;
      assert.ok(await registry.deleteRule(rule.id));
      await until(1);
      assert.equal(heard, [{ kind: 'rule-deleted', ruleId: rule.id, groundId: ground.id }]);
      heard.length = 0;
      const second = await registry.createRule({ groundId: ground.id, name: 'b', asset: 'temp', condition: { below: 0 }, severity: 'minor' });
      await until(1);
      heard.length = 0;
      await admin(async (c) => {
        await c.query(`SET search_path = "${schema}"`);
        await c.query('DELETE FROM devices WHERE ground_id = $1', [ground.id]);
        await c.query('DELETE FROM grounds WHERE id = $1', [ground.id]);
      });
      await until(1);
      assert.equal(heard, [{ kind: 'rule-deleted', ruleId: second.id, groundId: ground.id }], 'cascaded from the ground');
    } finally {
      await Promise.all([other.close(), registry.close()]);
      await admin((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    }
  });

  specifics('announced by the database, publish tells this process only', async () => {
    const schema = `changes_d_${randomBytes(4).toString('hex')}`;
    const a = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, announcedByDatabase: true });
    const b = await PostgresRegistryChanges.open({ url, schema, clock: systemClock, announcedByDatabase: true });
    try {
      const here: unknown[] = [];
      const there: unknown[] = [];
      a.subscribe((c) => here.push(c));
      b.subscribe((c) => there.push(c));
      await a.publish({ kind: 'device-changed', deviceId: 'A'.repeat(22) });
      assert.equal(here, [{ kind: 'device-changed', deviceId: 'A'.repeat(22) }], 'delivered here before publish resolved');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(there, [], 'nothing sent: the database announces what commits');
      assert.is(a.stats.sent, 0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  specifics.run();
});
