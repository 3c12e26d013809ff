/**
 * Integrations in distributed mode: two edges and two engines as separate processes on Kafka,
 * PostgreSQL and the ClickHouse server. An integration created through one edge is delivered by the
 * engines (each holding some partitions of its consumer group on topic `events`); states sent to
 * either edge, of devices on every partition, all reach the receiver, signed, each device's in order;
 * `GET /integrations/{id}` through the other edge shows what was delivered. An application reads the
 * same states from topic `events` with a consumer group of its own.
 *
 * Runs when KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL_TEST are set; its own topic prefix,
 * ClickHouse database and PostgreSQL schema are removed afterwards.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import { Webhook } from 'standardwebhooks';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { expandEventsRecord } from '../../../engine/events/expandEventsRecord.ts';
import type { EventsRecord } from '../../../schemas/events.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { removeFleetData, startFleet, type FleetProcess, devicesOnEveryPartition } from '../../support/fleetCluster.ts';
import { sendJson } from '../../support/sendJson.ts';
import { waitFor } from '../../support/tmp.ts';
import { startWebhookReceiver } from '../../support/webhookReceiver.ts';

const PARTITIONS = 4;
const DEVICES = 8;
const PER_DEVICE = 15;
const HOST = '127.0.0.2';
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;

withEnv('integrations-distributed', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('integrations: two edges, two engines');

  test('made on one edge, delivered by both engines: every state, signed, in order per device; topic events for applications', async () => {
    const id = `fs_integ_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-integrations-distributed-'));
    const processes: FleetProcess[] = [];
    const kafka = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'integrations-distributed', logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    const receiver = await startWebhookReceiver((_req, res) => res.writeHead(200).end(), HOST);
    const consumer = kafka.consumer({ groupId: `${prefix}an-application` });
    try {
      const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
      const user = await registry.createUser({ name: 'operator' });
      const ground = await registry.createGround({ name: 'fleet', userId: user.entity.id });
      // Devices on every partition, so both engines process some of them.
      const devices = await devicesOnEveryPartition(registry, ground.id, PARTITIONS, DEVICES);
      await registry.close();
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: String(PARTITIONS), MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '',
        INTEGRATIONS_ALLOW_HOSTS: HOST, INTEGRATIONS_BATCH_LINGER_MS: '100',
      };
      let n = 0;
      const start = async (name: string, role: 'edge' | 'engine') => {
        const p = await startFleet({ name, role, env: { ...baseEnv, DATA_DIR: join(dir, `${name}-${n++}`) } });
        processes.push(p);
        return p;
      };
      const [edgeA, edgeB] = await Promise.all([start('edge-a', 'edge'), start('edge-b', 'edge')]);
      await Promise.all([start('engine-a', 'engine'), start('engine-b', 'engine')]);
      const baseA = `http://127.0.0.1:${edgeA.httpPort}`;
      const baseB = `http://127.0.0.1:${edgeB.httpPort}`;

      const created = await sendJson(`${baseA}/ground/${ground.id}/integrations`, 'POST', user.token, { name: 'app', kind: 'webhook', url: receiver.url, events: ['state'] });
      assert.is(created.status, 201);
      const integration = await created.json() as { id: string; secret: string };
      await admin.connect();
      await waitFor(async () => {
        const { groups: [group] } = await admin.describeGroups([`${prefix}fleetstream-integration-${integration.id}`]);
        return group?.state === 'Stable' && group.members.length === 2;
      }, 90_000, 'both engines deliver the integration');

      await consumer.connect();
      await consumer.subscribe({ topic: `${prefix}events`, fromBeginning: true });
      const onTopic: string[] = [];
      await consumer.run({ eachMessage: async ({ message }) => { onTopic.push(message.value!.toString()); } });

      for (let i = 0; i < PER_DEVICE; i++) {
        for (const [k, d] of devices.entries()) {
          const base = k % 2 === 0 ? baseA : baseB;
          const res = await sendJson(`${base}/device/${d.id}/asset/t/state`, 'PUT', d.token, { value: i });
          assert.is(res.status, 202);
        }
      }
      // As many devices as it took to cover every partition: at least DEVICES.
      const total = devices.length * PER_DEVICE;
      type Event = { id: string; deviceId: string; value: number; groundId: string };
      const requests = () => receiver.received.map((r) => ({ webhookId: String(r.headers['webhook-id']), events: (JSON.parse(r.body) as { events: Event[] }).events }));
      // At least once: a partition that moves between the engines is delivered again from its
      // cursor, its batches under their webhook-ids. A receiver de-duplicating on them gets each
      // state once, each device's in order.
      const once = () => {
        const seen = new Set<string>();
        return requests().filter((r) => !seen.has(r.webhookId) && seen.add(r.webhookId)).flatMap((r) => r.events);
      };
      await waitFor(() => once().length >= total, 60_000, `${total} states delivered`);
      const events = once();
      assert.is(events.length, total, 'each state once, de-duplicated on webhook-id');
      for (const d of devices) assert.equal(events.filter((e) => e.deviceId === d.id).map((e) => e.value), [...Array(PER_DEVICE).keys()], `device ${d.id} in order`);
      assert.ok(events.every((e) => e.groundId === ground.id));
      const ids = new Map<string, Set<string>>();
      for (const r of requests()) for (const e of r.events) ids.set(e.id, (ids.get(e.id) ?? new Set()).add(r.webhookId));
      assert.ok([...ids.values()].every((set) => set.size === 1), 'an event delivered again came under the same webhook-id');
      for (const request of receiver.received) new Webhook(integration.secret).verify(request.body, request.headers as Record<string, string>);

      await waitFor(async () => {
        const view = await (await sendJson(`${baseB}/integrations/${integration.id}`, 'GET', user.token, undefined)).json() as { delivered: number };
        return view.delivered === total;
      }, 10_000, 'GET through the other edge shows every delivery');

      await waitFor(() => onTopic.length >= total, 30_000, 'an application reads the states from topic events');
      // Compact records (schemas/events.ts): an application expands them as the service does.
      const fromTopic = onTopic.map((value) => JSON.parse(value) as EventsRecord);
      assert.ok(fromTopic.reduce((sum, record) => sum + (record.states?.length ?? 0), 0) >= total);
      assert.ok(fromTopic.every((record) => expandEventsRecord(record.deviceId, record) !== undefined), 'every record expands');
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await Promise.all(processes.map((p) => p.stop()));
      await receiver.close();
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'integrations-distributed' });
    }
  });

  test.run();
});
