/**
 * A ground's API key across two edges on PostgreSQL and Kafka: a key revoked over HTTP on edge A
 * loses its SSE stream and its WebSocket on edge B within 1 s (the tokens table's trigger announces
 * the revocation to every process), and a key that expires loses them on edge B at its expiry.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { removeFleetData, startFleet, type FleetProcess } from '../../support/fleetCluster.ts';
import { openSse, openWs, type WsClient } from '../../support/liveClients.ts';
import { auditUntil, hasEntry } from '../../support/auditLog.ts';

const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;

/** Whether `done` settles at most `ms` after `since` (performance.now(); may lie ahead: an expiry). */
const within = async (done: Promise<unknown>, since: number, ms: number, what: string) => {
  const wait = Math.max(0, since + ms + 500 - performance.now());
  const at = await Promise.race([done.then(() => performance.now()), new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), wait))]);
  assert.ok(at - since <= ms, `${what}: ended after ${(at - since).toFixed(0)} ms`);
};

withEnv('keys-distributed', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('ground keys: two edges');

  test('a key revoked through edge A, or expired, loses its streams on edge B within 1 s', async () => {
    const id = `fs_keys_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-keys-distributed-'));
    const processes: FleetProcess[] = [];
    const admin = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'keys-distributed', logLevel: kafkajs.logLevel.NOTHING }).admin();
    const clients: Array<{ close(): void }> = [];
    try {
      const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
      const user = await registry.createUser({ name: 'owner' });
      const member = await registry.createUser({ name: 'member' });
      const ground = await registry.createGround({ name: 'fleet', userId: user.entity.id });
      const device = await registry.createDevice({ groundId: ground.id, name: 'thermo', assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
      await registry.close();
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: '2', MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '',
      };
      const [edgeA, edgeB] = await Promise.all(['edge-a', 'edge-b'].map(async (name) => {
        const p = await startFleet({ name, role: 'edge', env: { ...baseEnv, DATA_DIR: join(dir, name) } });
        processes.push(p);
        return p;
      }));
      const baseA = `http://127.0.0.1:${edgeA.httpPort}`;
      const baseB = `http://127.0.0.1:${edgeB.httpPort}`;
      const createKey = async (body: Record<string, unknown>) => {
        const res = await fetch(`${baseA}/ground/${ground.id}/keys`, { method: 'POST', headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        assert.is(res.status, 201);
        return (await res.json()) as { id: string; token: string; expiresAt?: number };
      };
      const streamsOnB = async (token: string) => {
        const sse = await openSse(`${baseB}/device/${device.device.id}/live`, token);
        clients.push(sse);
        assert.is(sse.status, 200);
        const ws: WsClient = await openWs(`ws://127.0.0.1:${edgeB.httpPort}/live`);
        clients.push({ close: () => ws.ws.close() });
        ws.send({ type: 'auth', token });
        ws.send({ type: 'subscribe', ground: ground.id });
        await ws.next((f) => f.type === 'subscribed', 30_000);
        return { sse, ws };
      };

      const revoked = await createKey({ name: 'revoked', role: 'viewer' });
      const onB = await streamsOnB(revoked.token);
      const since = performance.now();
      const res = await fetch(`${baseA}/ground/${ground.id}/keys/${revoked.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${user.token}` } });
      assert.is(res.status, 204);
      await within(onB.sse.ended, since, 1000, 'SSE on edge B');
      await within(onB.ws.closed, since, 1000, 'WebSocket on edge B');
      assert.is((await onB.ws.closed).code, 1008);
      const refused = await fetch(`${baseB}/ground/${ground.id}`, { headers: { authorization: `Bearer ${revoked.token}` } });
      assert.equal([refused.status, ((await refused.json()) as { code: string }).code], [401, 'UNAUTHORIZED']);

      const expiring = await createKey({ name: 'expiring', role: 'editor', expiresAt: Date.now() + 3_000 });
      const expiringOnB = await streamsOnB(expiring.token);
      const expiresIn = expiring.expiresAt! - Date.now();
      assert.ok(expiresIn > 0, 'the streams opened before the expiry');
      const at = performance.now() + expiresIn;
      await within(expiringOnB.sse.ended, at, 1000, 'SSE on edge B at expiry');
      await within(expiringOnB.ws.closed, at, 1000, 'WebSocket on edge B at expiry');
      const expired = await fetch(`${baseA}/device/${device.device.id}`, { headers: { authorization: `Bearer ${expiring.token}` } });
      assert.is(expired.status, 401);

      // The ground's one audit log holds the changes made through each edge (both edges' recorders, one registry).
      const putMember = async (base: string, role: string) => (await fetch(`${base}/ground/${ground.id}/members/${member.entity.id}`, {
        method: 'PUT', headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ role }),
      })).status;
      assert.is(await putMember(baseA, 'viewer'), 201);
      assert.is(await putMember(baseB, 'editor'), 200);
      const renamed = await fetch(`${baseB}/ground/${ground.id}`, { method: 'PATCH', headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'renamed on b' }) });
      assert.is(renamed.status, 200);
      const get = async (path: string, token: string) => {
        const res = await fetch(baseB + path, { headers: { authorization: `Bearer ${token}` } });
        return { status: res.status, json: await res.json() };
      };
      const audit = await auditUntil({ get }, ground.id, user.token, (items) => hasEntry(items, { operation: 'updateGround' }));
      assert.equal(audit.map((e) => [e.operation, e.actor.kind, e.actor.id, e.targetId, e.result.status]), [
        ['updateGround', 'user', user.entity.id, ground.id, 200],
        ['putMember', 'user', user.entity.id, member.entity.id, 200],
        ['putMember', 'user', user.entity.id, member.entity.id, 201],
        ['createKey', 'user', user.entity.id, expiring.id, 201],
        ['deleteKey', 'user', user.entity.id, revoked.id, 204],
        ['createKey', 'user', user.entity.id, revoked.id, 201],
      ]);
    } finally {
      for (const c of clients) c.close();
      await Promise.all(processes.map((p) => p.stop(10_000)));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'keys-distributed' });
    }
  });

  test.run();
});
