/**
 * The Kafka log's startOffsets and deleteGroup against a real broker: the start is the low
 * watermark, which moves when records are deleted (as retention deletes them), and a group with a
 * member still in it is not deleted (CONFLICT) until the member has left. A topic's `retentionMs`
 * is its retention.ms.
 */
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import { createKafkaLog } from '../../../adapters/kafka/index.ts';
import { rejectsWith, uniqueName, waitFor } from '../../contracts/log.contract.ts';
import { TEST_SESSION_TIMEOUT_MS } from '../../support/kafkaSession.ts';
import { suite, withEnv } from '../../support/suite.ts';

withEnv('kafka-log offsets', ['KAFKA_BROKERS'], 'scripts/kafka.sh start; export KAFKA_BROKERS=$(scripts/kafka.sh brokers)', (env) => {
  const brokers = env.KAFKA_BROKERS.split(',').map((b) => b.trim()).filter(Boolean);
  const admin = new kafkajs.Kafka({ brokers, clientId: 'fleetstream-test-admin', logLevel: kafkajs.logLevel.NOTHING }).admin();
  const log = createKafkaLog({ brokers, logLevel: 'nothing', sessionTimeoutMs: TEST_SESSION_TIMEOUT_MS, heartbeatIntervalMs: 300, maxWaitMs: 200, onConsumerError: () => {} });
  const topics: string[] = [];
  const test = suite('kafka log: startOffsets and deleteGroup');

  test.before(async () => {
    await admin.connect();
  });
  test.after(async () => {
    await log.close();
    if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 10_000 }).catch(() => undefined);
    await admin.disconnect();
  });

  test('startOffsets is the oldest record kept: it moves when records are deleted, per partition', async () => {
    const topic = uniqueName('start');
    topics.push(topic);
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    const positions = await log.append(topic, Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: new TextEncoder().encode(`v${i}`) })));
    assert.equal(await log.startOffsets(topic), [0, 0]);
    // the partition holding most of the records (at least 10 of 20) loses its first 3
    const counts = [0, 1].map((p) => positions.filter((position) => position.partition === p).length);
    const fuller = counts[0] >= counts[1] ? 0 : 1;
    await admin.fetchTopicMetadata({ topics: [topic] }); // kafkajs finds the leaders in its metadata
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: fuller, offset: '3' }] });
    const expected = [0, 0];
    expected[fuller] = 3;
    assert.equal(await log.startOffsets(topic), expected, 'only the partition whose records were deleted moves');
    assert.equal(await log.endOffsets(topic), counts, 'the end does not move');
  });

  test('retentionMs is the topic\'s retention.ms, set when it is created; a bad one is refused', async () => {
    const topic = uniqueName('retention');
    topics.push(topic);
    await log.ensureTopics([{ name: topic, partitions: 1, retentionMs: 3_600_000 }]);
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }] });
    const entry = described.resources[0].configEntries.find((e) => e.configName === 'retention.ms');
    assert.is(entry?.configValue, '3600000');
    await rejectsWith(() => log.ensureTopics([{ name: uniqueName('retention'), partitions: 1, retentionMs: -1 }]), 'VALIDATION_FAILED');
  });

  test('a group with a member is not deleted (CONFLICT); once the member left it is, and deleting it again is nothing', async () => {
    const topic = uniqueName('group');
    const group = uniqueName('group');
    topics.push(topic);
    await log.ensureTopics([{ name: topic, partitions: 1 }]);
    let assigned = false;
    const consumer = log.consumer({ group, topics: [topic], onBatch: async () => undefined, onAssign: () => { assigned = true; } });
    await consumer.start();
    await waitFor(() => assigned, 30_000, 'assignment');
    await consumer.commit([{ topic, partition: 0, offset: 0 }]);
    await rejectsWith(() => log.deleteGroup(group), 'CONFLICT');
    await consumer.stop();
    await log.deleteGroup(group);
    assert.not.ok((await admin.listGroups()).groups.some((g) => g.groupId === group), 'the broker forgot the group');
    await log.deleteGroup(group);
  });

  test.run();
});
