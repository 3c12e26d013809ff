/**
 * Live data in distributed mode: two engines and two edges as separate processes on Kafka,
 * PostgreSQL and the ClickHouse server. States sent to either edge are processed by either engine
 * (the devices spread over every partition, both engines hold some) and every one of them reaches
 * an SSE client and a WebSocket client on either edge, and the MQTT feed of an edge-only process.
 * Before anyone subscribes, both edges read none of topic `live` though states are published there
 * (LiveHub idleWhenUnwanted); a subscription takes reading up before it is answered, so every state
 * sent once the clients are subscribed reaches them, without a grace.
 *
 * Runs when KAFKA_BROKERS, CLICKHOUSE_URL and DATABASE_URL_TEST are set; its own topic prefix,
 * ClickHouse database and PostgreSQL schema are removed afterwards.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import mqtt from 'mqtt';
import { createPostgresRegistry } from '../../../adapters/postgres/createPostgresRegistry.ts';
import { suite, withEnv } from '../../support/suite.ts';
import { freePort, removeFleetData, startFleet, type FleetProcess, devicesOnEveryPartition } from '../../support/fleetCluster.ts';
import { openSse, openWs, type SseStream } from '../../support/liveClients.ts';
import { waitFor } from '../../support/tmp.ts';
import { sample } from '../../support/prometheusText.ts';

const PARTITIONS = 4;
const DEVICES = 8;
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;

withEnv('live-distributed', ['KAFKA_BROKERS', 'CLICKHOUSE_URL', 'DATABASE_URL_TEST'], 'scripts/kafka.sh start, scripts/clickhouse.sh start and a PostgreSQL server; see .ci/run', (env) => {
  const test = suite('live: two engines, two edges');

  test('a state processed by either engine reaches SSE, WebSocket and MQTT feed clients on either edge', async () => {
    const id = `fs_live_${RUN}`;
    const prefix = `${id}.`;
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-live-distributed-'));
    const processes: FleetProcess[] = [];
    const admin = new kafkajs.Kafka({ brokers: env.KAFKA_BROKERS.split(','), clientId: 'live-distributed', logLevel: kafkajs.logLevel.NOTHING }).admin();
    const clients: Array<{ close(): void }> = [];
    try {
      const registry = await createPostgresRegistry({ url: env.DATABASE_URL_TEST, schema: id });
      const user = await registry.createUser({ name: 'operator' });
      const ground = await registry.createGround({ name: 'fleet', userId: user.entity.id });
      // Devices on every partition, so both engines process some of them.
      const devices = await devicesOnEveryPartition(registry, ground.id, PARTITIONS, DEVICES);
      await registry.close();
      const mqttPort = await freePort();
      const baseEnv = {
        KAFKA_BROKERS: env.KAFKA_BROKERS, CLICKHOUSE_URL: env.CLICKHOUSE_URL, DATABASE_URL: env.DATABASE_URL_TEST, DATABASE_SCHEMA: id,
        CLICKHOUSE_DATABASE: id, TOPIC_PREFIX: prefix, PARTITIONS: String(PARTITIONS), MQTT_PORT: '-1', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LPWAN_APPLICATIONS_FILE: '',
      };
      let n = 0;
      const start = async (name: string, role: 'edge' | 'engine', extra: Record<string, string> = {}) => {
        const p = await startFleet({ name, role, env: { ...baseEnv, DATA_DIR: join(dir, `${name}-${n++}`), ...extra } });
        processes.push(p);
        return p;
      };
      const [edgeA, edgeB] = await Promise.all([start('edge-a', 'edge'), start('edge-b', 'edge', { MQTT_PORT: String(mqttPort), MQTT_HOST: '127.0.0.1' })]);
      await Promise.all([start('engine-a', 'engine'), start('engine-b', 'engine')]);
      await admin.connect();
      // Both engines hold partitions of `uplinks`.
      await waitFor(async () => {
        const { groups: [group] } = await admin.describeGroups([`${prefix}fleetstream-engine`]);
        return group?.state === 'Stable' && group.members.length === 2;
      }, 90_000, 'two engines in the group');

      const baseA = `http://127.0.0.1:${edgeA.httpPort}`;
      const baseB = `http://127.0.0.1:${edgeB.httpPort}`;
      const metric = async (p: FleetProcess, name: string) => sample(await (await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)).text(), name) ?? 0;
      const put = async (base: string, device: (typeof devices)[number], value: number) => {
        const res = await fetch(`${base}/device/${device.id}/asset/t/state`, {
          method: 'PUT', headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ value }),
        });
        assert.is(res.status, 202);
        await res.arrayBuffer();
      };

      // Nobody listens yet: the engines publish every stored state, the edges read none of it.
      const engines = processes.filter((p) => p.name.startsWith('engine'));
      for (const device of devices) await put(baseA, device, -1);
      await waitFor(async () => (await metric(engines[0], 'fleetstream_live_events_published_total')) + (await metric(engines[1], 'fleetstream_live_events_published_total')) >= devices.length,
        60_000, 'the engines published the states sent before anyone listened');
      for (const edge of [edgeA, edgeB]) {
        await waitFor(async () => (await metric(edge, 'fleetstream_live_reading')) === 0, 10_000, `${edge.name} stops reading topic live`);
        assert.is(await metric(edge, 'fleetstream_live_events_received_total'), 0, `${edge.name} read nothing of topic live`);
      }

      const groundOnA = await openSse(`${baseA}/ground/${ground.id}/live?kinds=state`, user.token);
      const groundOnB = await openSse(`${baseB}/ground/${ground.id}/live?kinds=state`, user.token);
      clients.push(groundOnA, groundOnB);
      assert.is(groundOnA.status, 200);
      assert.is(groundOnB.status, 200);
      const ws = await openWs(`ws://127.0.0.1:${edgeB.httpPort}/live`);
      clients.push({ close: () => ws.ws.close() });
      ws.send({ type: 'auth', token: user.token });
      ws.send({ type: 'subscribe', ground: ground.id, kinds: ['state'] });
      await ws.next((f) => f.type === 'subscribed', 30_000);
      const feeds: string[] = [];
      const device0 = devices[0];
      const feedClient = await mqtt.connectAsync(`mqtt://127.0.0.1:${mqttPort}`, { username: device0.token, password: device0.token, reconnectPeriod: 0 });
      clients.push({ close: () => void feedClient.endAsync() });
      feedClient.on('message', (_topic, payload) => feeds.push(payload.toString()));
      await feedClient.subscribeAsync(`device/${device0.id}/asset/t/feed`, { qos: 0 });
      // Each answer above came once its edge read topic live again, from its end: no grace needed.
      for (const edge of [edgeA, edgeB]) assert.is(await metric(edge, 'fleetstream_live_reading'), 1, `${edge.name} reads topic live`);

      const expected = new Set<string>();
      let value = 0;
      for (let round = 0; round < 3; round++) {
        for (const [i, device] of devices.entries()) {
          const base = i % 2 === 0 ? baseA : baseB;
          value++;
          await put(base, device, value);
          expected.add(`${device.id}:${value}`);
        }
      }
      const keysOf = (stream: SseStream) => new Set(stream.events.map((e) => JSON.parse(e.data) as { deviceId: string; value: number }).map((s) => `${s.deviceId}:${s.value}`));
      const wsKeys = () => new Set(ws.frames.filter((f) => f.type === 'state').map((f) => f.data as { deviceId: string; value: number }).map((s) => `${s.deviceId}:${s.value}`));
      const complete = (keys: Set<string>) => [...expected].every((k) => keys.has(k));
      await waitFor(() => complete(keysOf(groundOnA)) && complete(keysOf(groundOnB)) && complete(wsKeys()), 60_000,
        `every state on both edges (A ${keysOf(groundOnA).size}, B ${keysOf(groundOnB).size}, ws ${wsKeys().size} of ${expected.size})`);
      // Each exactly once.
      assert.is(groundOnA.events.length, expected.size);
      assert.is(groundOnB.events.length, expected.size);
      await waitFor(() => feeds.length >= 3, 30_000, 'the MQTT feed of device 0 on the edge-only process');
      assert.equal(feeds.map((f) => (JSON.parse(f) as { value: number }).value).sort((a, b) => a - b), [1, 1 + devices.length, 1 + 2 * devices.length]);
    } finally {
      for (const c of clients) c.close();
      await Promise.all(processes.map((p) => p.stop(10_000)));
      await removeFleetData({ admin, prefix, id, clickhouseUrl: env.CLICKHOUSE_URL, databaseUrl: env.DATABASE_URL_TEST, dir, label: 'live-distributed' });
    }
  });

  test.run();
});
