/**
 * Settings of distributed mode. Names that let deployments (and test runs) share a Kafka cluster, a
 * ClickHouse server and a PostgreSQL database: the topic/group prefix, the ClickHouse database and
 * the PostgreSQL schema; the Kafka client's append and session timeouts. Parsing and refusals here;
 * the composed service on embedded adapters uses the prefixed topics and group and the named chDB
 * database (test/app/distributed/distributed-e2e.test.ts runs them on the servers).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { edgeWorkerCount } from '../../../app/edgeWorkers.ts';
import { Session } from 'chdb';
import { createService, kafkaSettings, logNames } from '../../../app/createService.ts';
import { loadConfig } from '../../../app/loadConfig.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { loopbackConfig } from '../../support/loopbackConfig.ts';
import { sendJson } from '../../support/sendJson.ts';

test('flags and environment set the prefix, the ClickHouse database and the PostgreSQL schema', () => {
  const unset = loadConfig({}, {});
  assert.is(unset.topicPrefix, undefined);
  assert.is(unset.clickhouseDatabase, undefined);
  assert.is(unset.databaseSchema, undefined);
  const fromEnv = loadConfig({}, { TOPIC_PREFIX: 'staging.', CLICKHOUSE_DATABASE: 'fleet_staging', DATABASE_SCHEMA: 'fleet_staging' });
  assert.is(fromEnv.topicPrefix, 'staging.');
  assert.is(fromEnv.clickhouseDatabase, 'fleet_staging');
  assert.is(fromEnv.databaseSchema, 'fleet_staging');
  const flags = loadConfig({ 'topic-prefix': 'a-b_c.', 'clickhouse-database': 'Db_1', 'database-schema': 's1' }, { TOPIC_PREFIX: 'x.' });
  assert.is(flags.topicPrefix, 'a-b_c.', 'flags win over the environment');
  assert.is(flags.clickhouseDatabase, 'Db_1');
  assert.is(flags.databaseSchema, 's1');
});

test('state rollups: on unless turned off by flag or environment; nothing else accepted', () => {
  assert.is(loadConfig({}, {}).stateRollups, 'on', 'unset: on');
  assert.is(loadConfig({}, { STATE_ROLLUPS: 'off' }).stateRollups, 'off');
  assert.is(loadConfig({ 'state-rollups': 'off' }, {}).stateRollups, 'off');
  assert.is(loadConfig({ 'state-rollups': 'on' }, { STATE_ROLLUPS: 'off' }).stateRollups, 'on', 'flags win');
  assert.is(loadConfig({ 'state-rollups': 'off' }, { STATE_ROLLUPS: 'on' }).stateRollups, 'off', 'flags win');
  for (const bad of ['false', '0', 'OFF', 'off ', 'no']) assert.throws(() => loadConfig({ 'state-rollups': bad }, {}), /invalid configuration/, bad);
});

test('names that Kafka, ClickHouse or PostgreSQL would refuse (or that need quoting) fail at start', () => {
  const bad: Array<[string, string]> = [
    ['topic-prefix', 'has space'],
    ['topic-prefix', 'slash/'],
    ['topic-prefix', 'ümlaut'],
    ['topic-prefix', 'x'.repeat(201)],
    ['clickhouse-database', '1starts_with_digit'],
    ['clickhouse-database', 'drop`table'],
    ['clickhouse-database', 'with-dash'],
    ['clickhouse-database', 'a'.repeat(64)],
    ['database-schema', 'UpperCase'],
    ['database-schema', 'semi;colon'],
    ['database-schema', '9lives'],
    ['database-schema', 'b'.repeat(64)],
  ];
  for (const [flag, value] of bad) {
    assert.throws(() => loadConfig({ [flag]: value }, {}), /invalid configuration/, `${flag}=${JSON.stringify(value)}`);
  }
});

test('Kafka append and session timeouts and the throughput wait: parsed, bounded, heartbeats a third of the session at most', () => {
  const unset = loadConfig({}, {});
  assert.equal(unset.kafka, {});
  assert.equal(kafkaSettings(unset.kafka), {}, 'the Kafka adapter keeps its defaults');
  const set = loadConfig({ 'kafka-session-timeout-ms': '10000' }, { KAFKA_APPEND_TIMEOUT_MS: '2500' });
  assert.equal(set.kafka, { appendTimeoutMs: 2500, sessionTimeoutMs: 10000 });
  assert.equal(kafkaSettings(set.kafka), { appendTimeoutMs: 2500, sessionTimeoutMs: 10000, heartbeatIntervalMs: 3000 });
  assert.equal(kafkaSettings({ sessionTimeoutMs: 6000 }), { sessionTimeoutMs: 6000, heartbeatIntervalMs: 2000 });
  const wait = loadConfig({}, { KAFKA_THROUGHPUT_WAIT_MS: '50' });
  assert.equal(kafkaSettings(wait.kafka), { throughputWaitMs: 50 });
  assert.equal(kafkaSettings(loadConfig({ 'kafka-throughput-wait-ms': '0' }, {}).kafka), { throughputWaitMs: 0 });
  for (const [flag, value] of [
    ['kafka-append-timeout-ms', '0'], ['kafka-append-timeout-ms', '-5'], ['kafka-append-timeout-ms', '1.5'], ['kafka-append-timeout-ms', '600001'],
    ['kafka-session-timeout-ms', '999'], ['kafka-session-timeout-ms', '3600001'],
    ['kafka-throughput-wait-ms', '-1'], ['kafka-throughput-wait-ms', '1001'], ['kafka-throughput-wait-ms', '2.5'],
  ]) {
    assert.throws(() => loadConfig({ [flag]: value }, {}), /invalid configuration/, `${flag}=${value}`);
  }
  assert.throws(() => loadConfig({ 'kafka-append-timeout-ms': 'soon' }, {}), /must be a number/);
});

test('logNames puts the prefix before every topic and consumer group', () => {
  assert.equal(logNames({}), {
    uplinks: 'uplinks', commands: 'commands', deadLetters: 'dead-letters', live: 'live',
    engineGroup: 'fleetstream-engine', commandsGroup: 'fleetstream-commands', liveGroup: 'fleetstream-live',
    commandDeliveries: 'command-deliveries', deliveriesGroup: 'fleetstream-deliveries', events: 'events', integrationGroupPrefix: '',
  });
  assert.equal(logNames({ topicPrefix: 'run7.' }), {
    uplinks: 'run7.uplinks', commands: 'run7.commands', deadLetters: 'run7.dead-letters', live: 'run7.live',
    engineGroup: 'run7.fleetstream-engine', commandsGroup: 'run7.fleetstream-commands', liveGroup: 'run7.fleetstream-live',
    commandDeliveries: 'run7.command-deliveries', deliveriesGroup: 'run7.fleetstream-deliveries', events: 'run7.events', integrationGroupPrefix: 'run7.',
  });
});

test('the composed service uses the prefixed topics and group and the named ClickHouse database', async () => {
  const tmp = tempDir('config-names');
  const service = await createService({
    logger: silentLogger,
    config: loopbackConfig(tmp.dir, { mqtt: { host: '127.0.0.1', port: -1 }, topicPrefix: 'run7.', clickhouseDatabase: 'fleet_run7' }),
  });
  let stopped = false;
  try {
    for (const topic of ['run7.uplinks', 'run7.commands', 'run7.dead-letters', 'run7.events']) assert.is(await service.log.partitionCount(topic), 2, topic);
    const unprefixed = await service.log.partitionCount('uplinks').then(() => 'exists', (error: { code?: string }) => error.code);
    assert.is(unprefixed, 'NOT_FOUND', 'no unprefixed topic is created');

    const user = await service.registry.createUser({ name: 'u' });
    const ground = await service.registry.createGround({ name: 'g', userId: user.entity.id });
    const base = `http://127.0.0.1:${service.httpPort}`;
    const created = await sendJson(`${base}/ground/${ground.id}/devices`, 'POST', user.token, { name: 'thermo', assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
    assert.is(created.status, 201);
    const device = await created.json() as { id: string; token: string };
    const put = await sendJson(`${base}/device/${device.id}/state`, 'PUT', device.token, { t: { value: 4.5 }, nosuchasset: { value: 1 } });
    assert.is(put.status, 202);
    const committed = async () => {
      let sum = 0;
      for (const p of [0, 1]) sum += await service.log.committed('run7.fleetstream-engine', 'run7.uplinks', p);
      return sum;
    };
    await waitFor(async () => (await committed()) === 1, 15_000, 'the prefixed engine group to commit the uplink');
    const [state] = await service.store.history({ deviceId: device.id, asset: 't', limit: 10 });
    assert.is(state?.value, 4.5);
    // the unknown asset was dead-lettered on the prefixed topic (and shows in the device's rejections)
    const letters: string[] = [];
    const reader = service.log.consumer({ group: 'verify', topics: ['run7.dead-letters'], onBatch: async (b) => { letters.push(...b.records.map((r) => r.key)); } });
    await reader.start();
    await waitFor(() => letters.length === 1, 10_000, 'a dead letter on run7.dead-letters');
    await reader.stop();
    assert.equal(letters, [device.id]);
    await service.stop();
    stopped = true;
    const session = new Session(`${tmp.dir}/chdb`);
    try {
      assert.is(session.query("SELECT count() FROM system.tables WHERE database = 'fleet_run7' AND name = 'states'", 'CSV').trim(), '1');
      assert.is(session.query('SELECT count() FROM fleet_run7.states', 'CSV').trim(), '1');
      assert.is(session.query("SELECT count() FROM system.databases WHERE name = 'fleetstream'", 'CSV').trim(), '0', 'no default database');
    } finally {
      session.close();
    }
  } finally {
    if (!stopped) await service.stop();
    tmp.remove();
  }
});

test('edge workers: auto is one per core but one for a distributed --role edge and the embedded --role all, 1 elsewhere; more than one is refused where the edge cannot share its ports', () => {
  const servers = { 'kafka-brokers': '127.0.0.1:9092', 'database-url': 'postgres://x@127.0.0.1/db', 'clickhouse-url': 'http://127.0.0.1:8123' };
  const edge = loadConfig({ role: 'edge', ...servers }, {});
  assert.is(edge.edgeWorkers, 'auto');
  assert.equal([edgeWorkerCount(edge, 16), edgeWorkerCount(edge, 2), edgeWorkerCount(edge, 1)], [15, 1, 1]);
  assert.is(edgeWorkerCount(loadConfig({ role: 'edge', 'edge-workers': '4', ...servers }, {}), 2), 4);
  assert.is(edgeWorkerCount(loadConfig({}, { EDGE_WORKERS: '3', FLEETSTREAM_ROLE: 'edge', KAFKA_BROKERS: 'k:9092', DATABASE_URL: 'postgres://x@h/db', CLICKHOUSE_URL: 'http://h:8123' }), 2), 3);
  assert.equal([edgeWorkerCount(loadConfig({}, {}), 16), edgeWorkerCount(loadConfig({}, {}), 2)], [15, 1], 'embedded: the primary holds the ports, the workers the edge');
  assert.is(edgeWorkerCount(loadConfig({ 'edge-workers': '2' }, {}), 16), 2);
  assert.is(edgeWorkerCount(loadConfig({ role: 'all', ...servers }, {}), 16), 1, 'a distributed role all: one edge beside the engine');
  const tls = { 'mqtt-tls-cert': '/c.pem', 'mqtt-tls-key': '/k.pem' };
  assert.is(edgeWorkerCount(loadConfig(tls, {}), 16), 1, 'embedded MQTT over TLS: one edge');
  assert.throws(() => edgeWorkerCount(loadConfig({ 'edge-workers': '2', ...tls }, {})), /without MQTT over TLS/);
  assert.throws(() => edgeWorkerCount(loadConfig({ role: 'all', 'edge-workers': '2', ...servers }, {})), /--role edge with Kafka, PostgreSQL and ClickHouse/);
  assert.throws(() => edgeWorkerCount(loadConfig({ role: 'edge', 'edge-workers': '2', 'kafka-brokers': 'k:9092' }, {})), /--role edge with Kafka, PostgreSQL and ClickHouse/);
  for (const bad of ['0', '-1', '1.5', '257', 'many', 'auto2']) assert.throws(() => loadConfig({ 'edge-workers': bad }, {}), /edge-workers|edgeWorkers|invalid configuration/, bad);
});

test.run();
