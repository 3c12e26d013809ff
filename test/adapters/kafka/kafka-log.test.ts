/**
 * The log contract against a real Apache Kafka broker, plus what only Kafka has: request batching
 * (linger), outages, group handover. Runs when KAFKA_BROKERS is set (CI: scripts/kafka.sh start;
 * export KAFKA_BROKERS=$(scripts/kafka.sh brokers)).
 *
 * The outage test starts its own private broker with scripts/kafka.sh on free ports and a temp data
 * dir, stops it and starts it again: the shared broker is never disturbed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, unless, withEnv } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import kafkajs from 'kafkajs';
import { createKafkaLog, type KafkaLogOptions } from '../../../adapters/kafka/index.ts';
import type { FlushInfo } from '../../../adapters/kafka/LingerProducer.ts';
import { FleetError, isFleetError } from '../../../engine/kernel/errors.ts';
import type { Consumer, Log, LogRecord, ProducerRecord, RecordPosition, TopicPartition } from '../../../engine/ports/log.ts';
import { freePort } from '../../support/fleetCluster.ts';
import { TEST_SESSION_TIMEOUT_MS } from '../../support/kafkaSession.ts';
import { logContract, rejectsWith, uniqueName, waitFor } from '../../contracts/log.contract.ts';

const root = new URL('../../..', import.meta.url).pathname;

/** Settings that make group changes quick on one machine (the broker's minimum session is 6 s). */
const FAST_GROUPS: Partial<KafkaLogOptions> = {
  logLevel: 'nothing',
  sessionTimeoutMs: TEST_SESSION_TIMEOUT_MS,
  heartbeatIntervalMs: 300,
  maxWaitMs: 200,
  redeliveryBackoffMs: 200,
  onConsumerError: () => {}, // the tests look at outcomes; rejected commits during rebalances are expected
};

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const decode = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
const rec = (key: string, text: string): ProducerRecord => ({ key, value: encode(text) });
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function rejection(promise: Promise<unknown>): Promise<FleetError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(isFleetError(error), `expected a FleetError, got ${String(error)}`);
    return error as FleetError;
  }
  throw new Error('expected a rejection');
}

// ------------------------------------------------------------------------------ options, no broker

const offline = suite('kafka log: options and lifecycle (no broker needed)');

offline('bad options are refused with VALIDATION_FAILED naming the option', async () => {
  const bad: [unknown, string][] = [
    [{ brokers: [] }, 'brokers'],
    [{ brokers: ['no-port'] }, 'brokers'],
    [{ brokers: 'localhost:9092' }, 'brokers'],
    [{ brokers: ['127.0.0.1:1'], lingerMs: -1 }, 'lingerMs'],
    [{ brokers: ['127.0.0.1:1'], maxBatchRecords: 0 }, 'maxBatchRecords'],
    [{ brokers: ['127.0.0.1:1'], appendTimeoutMs: 1.5 }, 'appendTimeoutMs'],
    [{ brokers: ['127.0.0.1:1'], throughputWaitMs: -20 }, 'throughputWaitMs'],
    [{ brokers: ['127.0.0.1:1'], replicationFactor: 0 }, 'replicationFactor'],
    [{ brokers: ['127.0.0.1:1'], logLevel: 'loud' }, 'logLevel'],
    [{ brokers: ['127.0.0.1:1'], sessionTimeoutMs: 6000, heartbeatIntervalMs: 6000 }, 'heartbeatIntervalMs'],
  ];
  for (const [options, option] of bad) {
    try {
      createKafkaLog(options as KafkaLogOptions);
      assert.unreachable(`accepted ${JSON.stringify(options)}`);
    } catch (error) {
      assert.instance(error, FleetError);
      assert.is((error as FleetError).code, 'VALIDATION_FAILED');
      assert.is((error as FleetError).detail?.option, option);
    }
  }
  await rejectsWith(() => createKafkaLog(null as unknown as KafkaLogOptions), 'VALIDATION_FAILED');
});

offline('consumer options and pause arguments are validated before anything connects', async () => {
  const log = createKafkaLog({ brokers: ['127.0.0.1:1'], logLevel: 'nothing' });
  const onBatch = async () => {};
  await rejectsWith(() => log.consumer({ group: '', topics: ['t'], onBatch }), 'VALIDATION_FAILED');
  await rejectsWith(() => log.consumer({ group: 'g', topics: [], onBatch }), 'VALIDATION_FAILED');
  await rejectsWith(() => log.consumer({ group: 'g', topics: ['t'], onBatch, maxBatchRecords: 0 }), 'VALIDATION_FAILED');
  await rejectsWith(() => log.consumer({ group: 'g', topics: ['t'], onBatch, prefer: 'fast' as never }), 'VALIDATION_FAILED');
  await rejectsWith(() => log.consumer({ group: 'g', topics: ['t'], onBatch: 'no' as never }), 'VALIDATION_FAILED');
  const consumer = log.consumer({ group: 'g', topics: ['t'], onBatch });
  await rejectsWith(() => consumer.pause([{ topic: 't', partition: -1 }]), 'VALIDATION_FAILED');
  await rejectsWith(() => consumer.resume([{ topic: '', partition: 0 }]), 'VALIDATION_FAILED');
  await rejectsWith(() => consumer.pause([{ topic: 'not-subscribed', partition: 0 }]), 'VALIDATION_FAILED');
  await rejectsWith(() => consumer.commit([{ topic: 'not-subscribed', partition: 0, offset: 0 }]), 'VALIDATION_FAILED');
  await rejectsWith(() => consumer.commit([{ topic: 't', partition: 0, offset: 1 }]), 'CLOSED'); // not started
  await rejectsWith(() => log.committed('g', 't', -1), 'VALIDATION_FAILED');
  await rejectsWith(() => log.partitionCount('bad topic'), 'VALIDATION_FAILED');
  await log.close();
  await rejectsWith(() => log.append('t', [rec('k', 'v')]), 'CLOSED');
  await rejectsWith(() => log.consumer({ group: 'g', topics: ['t'], onBatch }), 'CLOSED');
  await log.close(); // idempotent
});

offline('an unreachable broker fails retriably within a bounded time', async () => {
  const port = await freePort(); // nothing listens there
  const log = createKafkaLog({ brokers: [`127.0.0.1:${port}`], logLevel: 'nothing', connectionTimeoutMs: 500, appendTimeoutMs: 2000 });
  const started = Date.now();
  const ensure = await rejection(log.ensureTopics([{ name: 't', partitions: 1 }]));
  assert.is(ensure.code, 'UNAVAILABLE');
  assert.is(ensure.retriable, true);
  const consumer = log.consumer({ group: 'g', topics: ['t'], onBatch: async () => {} });
  const start = await rejection(consumer.start());
  assert.is(start.retriable, true);
  assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
  await log.close();
});

offline.run();

// -------------------------------------------------------------------------------------- real broker

withEnv('kafka-log', ['KAFKA_BROKERS'], 'scripts/kafka.sh fetch && scripts/kafka.sh start; export KAFKA_BROKERS=$(scripts/kafka.sh brokers)', (env) => {
  const brokers = env.KAFKA_BROKERS.split(',').map((b) => b.trim()).filter(Boolean);
  const admin = new kafkajs.Kafka({ brokers, clientId: 'fleetstream-test-admin', logLevel: kafkajs.logLevel.NOTHING }).admin();
  const createdTopics = new Set<string>();

  /** A Log that remembers the topics it created, so the shared broker can be tidied afterwards. */
  const tracking = (log: Log): Log => ({
    ensureTopics: async (topics) => {
      await log.ensureTopics(topics);
      for (const t of Array.isArray(topics) ? topics : []) if (typeof t?.name === 'string') createdTopics.add(t.name);
    },
    partitionCount: (topic) => log.partitionCount(topic),
    append: (topic, records) => log.append(topic, records),
    consumer: (options) => log.consumer(options),
    committed: (group, topic, partition) => log.committed(group, topic, partition),
    startOffsets: (topic) => log.startOffsets(topic),
    deleteGroup: (group) => log.deleteGroup(group),
    endOffsets: (topic) => log.endOffsets(topic),
    close: () => log.close(),
  });

  const deleteCreatedTopics = async (): Promise<void> => {
    if (createdTopics.size === 0) return;
    try {
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      const topics = [...createdTopics].filter((t) => existing.has(t));
      if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 10_000 });
    } catch (error) {
      console.log(`kafka-log: could not delete test topics: ${String(error)}`);
    }
    createdTopics.clear();
  };

  logContract(`kafka ${brokers.join(',')}`, async () => {
    const open = () => tracking(createKafkaLog({ brokers, ...FAST_GROUPS }));
    let log = open();
    return {
      get log() { return log; },
      async cleanup() {
        await log.close();
        await deleteCreatedTopics();
      },
      async reopen() {
        // a process restart: a new client, same broker
        await log.close();
        log = open();
        return log;
      },
    };
  }, { timeoutMs: 30_000, quietMs: 500 }).run();

  const kafka = suite<{ log: Log; flushes: FlushInfo[]; errors: string[] }>('kafka log: Kafka-specific');

  kafka.before.each((ctx) => {
    ctx.flushes = [];
    ctx.errors = [];
    ctx.log = tracking(createKafkaLog({
      brokers,
      ...FAST_GROUPS,
      lingerMs: 50,
      onFlush: (info) => ctx.flushes.push(info),
      onConsumerError: (error, context) => ctx.errors.push(`${context.stage}:${error.code}`),
    }));
  });

  kafka.after.each(async (ctx) => {
    await ctx.log.close();
    await deleteCreatedTopics();
  });

  kafka.after(async () => {
    await admin.disconnect(); // its socket would keep the process alive
  });

  kafka('appends arriving within lingerMs leave in one produce request, each with its own offsets', async ({ log, flushes }) => {
    const topic = uniqueName('linger');
    await log.ensureTopics([{ name: topic, partitions: 3 }]);
    const calls = Array.from({ length: 10 }, (_, i) => [rec(`device-${i}`, `a${i}`), rec(`device-${i + 10}`, `b${i}`)]);
    const positions = await Promise.all(calls.map((records) => log.append(topic, records)));
    assert.is(flushes.length, 1, `requests: ${JSON.stringify(flushes)}`);
    assert.is(flushes[0].appends, 10);
    assert.is(flushes[0].records, 20);
    // offsets are Kafka's: read every record back where its append said it is
    const byPosition = new Map<string, string>();
    calls.forEach((records, i) => records.forEach((r, j) => byPosition.set(`${positions[i][j].partition}@${positions[i][j].offset}`, decode(r.value))));
    assert.is(byPosition.size, 20, 'twenty distinct positions');
    const received: LogRecord[] = [];
    const consumer = log.consumer({ group: uniqueName('group'), topics: [topic], onBatch: async (b) => { received.push(...b.records); } });
    await consumer.start();
    await waitFor(() => received.length >= 20, 15_000, '20 records');
    for (const r of received) assert.is(decode(r.value), byPosition.get(`${r.partition}@${r.offset}`));
    await consumer.stop();
  });

  kafka('a record above the broker limit fails PAYLOAD_TOO_LARGE and the producer keeps working', async ({ log }) => {
    const topic = uniqueName('large');
    await log.ensureTopics([{ name: topic, partitions: 1 }]);
    const error = await rejection(log.append(topic, [{ key: 'k', value: new Uint8Array(2 * 1024 * 1024) }]));
    assert.is(error.code, 'PAYLOAD_TOO_LARGE');
    assert.is(error.retriable, false);
    assert.equal(await log.append(topic, [rec('k', 'small')]), [{ partition: 0, offset: 0 }]);
  });

  kafka('a new consumer instance resumes from the offsets the group committed', async ({ log }) => {
    const topic = uniqueName('handover');
    const group = uniqueName('group');
    const partitions = 4;
    await log.ensureTopics([{ name: topic, partitions }]);
    const append = async (n: number, tag: string): Promise<RecordPosition[]> =>
      log.append(topic, Array.from({ length: n }, (_, i) => rec(`device-${i % 29}`, `${tag}${i}`)));
    const member = (name: string, seen: Map<number, number[]>, owned: Set<number>) => {
      let self: Consumer;
      self = log.consumer({
        group, topics: [topic], maxBatchRecords: 25,
        onBatch: async (batch) => {
          seen.set(batch.partition, [...(seen.get(batch.partition) ?? []), ...batch.records.map((r) => r.offset)]);
          // processed = durable here: commit right away, so the group's offsets are always exact
          await self.commit([{ topic, partition: batch.partition, offset: batch.records[batch.records.length - 1].offset + 1 }]);
        },
        onAssign: (tps: TopicPartition[]) => { for (const tp of tps) owned.add(tp.partition); },
        onRevoke: async (tps: TopicPartition[]) => { for (const tp of tps) owned.delete(tp.partition); },
      });
      return self;
    };
    const seenA = new Map<number, number[]>();
    const ownedA = new Set<number>();
    const a = member('a', seenA, ownedA);
    await a.start();
    await append(200, 'x');
    const count = (m: Map<number, number[]>) => [...m.values()].reduce((n, l) => n + l.length, 0);
    await waitFor(() => count(seenA) >= 200, 15_000, 'a to process 200');
    const committedBefore: number[] = [];
    for (let p = 0; p < partitions; p++) committedBefore.push(await log.committed(group, topic, p));
    assert.is(committedBefore.reduce((x, y) => x + y, 0), 200, 'a committed everything it processed');

    const seenB = new Map<number, number[]>();
    const ownedB = new Set<number>();
    const b = member('b', seenB, ownedB);
    await b.start();
    await waitFor(() => ownedA.size > 0 && ownedB.size > 0 && ownedA.size + ownedB.size === partitions, 20_000, 'a and b to split');
    await append(200, 'y');
    await waitFor(() => count(seenA) + count(seenB) >= 400, 20_000, 'all 400 records');
    // a partition b holds is not a's to commit
    await rejectsWith(() => a.commit([{ topic, partition: [...ownedB][0], offset: 0 }]), 'CONFLICT');
    for (const p of ownedB) {
      const offsets = seenB.get(p) ?? [];
      assert.ok(offsets.length > 0, `b received partition ${p}`);
      assert.is(offsets[0], committedBefore[p], `b starts partition ${p} at the committed offset`);
      offsets.forEach((o, i) => { if (i > 0) assert.is(o, offsets[i - 1] + 1, `partition ${p} without gaps`); });
    }
    // nothing lost, nothing twice: the handover happened while a was idle and fully committed
    const all = [...seenA.values(), ...seenB.values()].flat().length;
    assert.is(all, 400);
    await Promise.all([a.stop(), b.stop()]);
  });

  kafka('a pause holds across rebalances until resume', async ({ log }) => {
    const topic = uniqueName('pause');
    const group = uniqueName('group');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    const key0 = 'device-0'; // partitionFor('device-0', 2) is 0 (asserted on the append below)
    const seen = new Map<number, number>();
    const owned = new Set<number>();
    const a = log.consumer({
      group, topics: [topic],
      onBatch: async (batch) => { seen.set(batch.partition, (seen.get(batch.partition) ?? 0) + batch.records.length); },
      onAssign: (tps) => { for (const tp of tps) owned.add(tp.partition); },
      onRevoke: async (tps) => { for (const tp of tps) owned.delete(tp.partition); },
    });
    await a.start();
    a.pause([{ topic, partition: 0 }]);
    const b = log.consumer({ group, topics: [topic], onBatch: async () => {} });
    await b.start();
    await waitFor(() => owned.size === 1, 20_000, 'a to hold one partition');
    await b.stop();
    await waitFor(() => owned.size === 2, 20_000, 'a to hold both partitions again');
    const [position] = await log.append(topic, [rec(key0, 'while paused')]);
    assert.is(position.partition, 0);
    await delay(700);
    assert.is(seen.get(0) ?? 0, 0, 'partition 0 still paused after two rebalances');
    a.resume([{ topic, partition: 0 }]);
    await waitFor(() => (seen.get(0) ?? 0) === 1, 15_000, 'partition 0 after resume');
    await a.stop();
  });

  kafka('a rejected onBatch is reported and the same records come again after the back-off', async ({ log, errors }) => {
    const topic = uniqueName('redeliver');
    await log.ensureTopics([{ name: topic, partitions: 1 }]);
    await log.append(topic, [rec('k', 'a'), rec('k', 'b')]);
    const attempts: string[][] = [];
    const consumer = log.consumer({
      group: uniqueName('group'), topics: [topic],
      onBatch: async (batch) => {
        attempts.push(batch.records.map((r) => decode(r.value)));
        if (attempts.length === 1) throw new Error('store unavailable');
      },
    });
    const started = Date.now();
    await consumer.start();
    await waitFor(() => attempts.length >= 2, 15_000, 'redelivery');
    assert.ok(Date.now() - started >= 200, 'not before redeliveryBackoffMs');
    assert.equal(attempts[1], attempts[0]);
    assert.equal(errors, ['onBatch:INTERNAL']);
    await consumer.stop();
  });

  kafka('a busy member revokes before the group rejoins: its onRevoke commits hand over exactly, no record twice', async () => {
    // its own client: a 6 s session (the broker's minimum) that the 7 s onRevoke below outlasts
    const log = tracking(createKafkaLog({ brokers, ...FAST_GROUPS, sessionTimeoutMs: 6000 }));
    const topic = uniqueName('revoke');
    const group = uniqueName('group');
    await log.ensureTopics([{ name: topic, partitions: 2 }]);
    const processed = new Map<number, number>();
    const committedAtRevoke = new Map<number, number>();
    const deliveries: string[] = [];
    const firstOfB = new Map<number, number>();
    const revokeFailures: string[] = [];
    let revokes = 0;
    let a: Consumer;
    a = log.consumer({
      group, topics: [topic], maxBatchRecords: 5,
      onBatch: async (batch) => {
        await delay(20); // a slow store: a is inside onBatch most of the time when b joins
        for (const r of batch.records) deliveries.push(`${r.partition}@${r.offset}`);
        processed.set(batch.partition, batch.records[batch.records.length - 1].offset + 1);
      },
      // a commits only when partitions are taken away: b can only start right after a's last record
      // if this ran (and committed) before the group moved on. The first one takes longer than the
      // session timeout: heartbeats during onRevoke must keep a in the group.
      onRevoke: async (tps) => {
        if (revokes++ === 0) await delay(7000);
        const offsets = tps.filter((tp) => processed.has(tp.partition)).map((tp) => ({ ...tp, offset: processed.get(tp.partition)! }));
        try {
          await a.commit(offsets);
          for (const o of offsets) committedAtRevoke.set(o.partition, o.offset);
        } catch (error) {
          revokeFailures.push(String(error));
        }
      },
    });
    try {
      await a.start();
      await log.append(topic, Array.from({ length: 600 }, (_, i) => rec(`device-${i % 31}`, `v${i}`)));
      await waitFor(() => processed.size === 2, 15_000, 'a busy on both partitions');
      const b = log.consumer({
        group, topics: [topic],
        onBatch: async (batch) => {
          if (!firstOfB.has(batch.partition)) firstOfB.set(batch.partition, batch.records[0].offset);
          for (const r of batch.records) deliveries.push(`${r.partition}@${r.offset}`);
        },
      });
      await b.start();
      await waitFor(() => new Set(deliveries).size >= 600, 30_000, 'all 600 records');
      assert.equal(revokeFailures, []);
      assert.ok(firstOfB.size > 0, 'b received a partition');
      for (const [partition, offset] of firstOfB) {
        assert.is(offset, committedAtRevoke.get(partition), `b starts partition ${partition} where a's onRevoke committed`);
      }
      assert.is(deliveries.length, 600, 'no record delivered twice');
    } finally {
      await log.close();
    }
  });

  kafka.run();

  // ------------------------------------------------------------------------------ private broker

  const libs = process.env.KAFKA_LIBS_DIR ?? join(root, '.cache/kafka/libs');
  const fetched = existsSync(libs) && readdirSync(libs).some((f) => f.startsWith('kafka_2.13-'));
  unless('kafka-log: broker outage', fetched ? undefined : `Kafka jars not found in ${libs} (scripts/kafka.sh fetch)`, () => {
    const outage = suite('kafka log: broker outage (private broker)');

    outage('append while the broker is down rejects retriably within appendTimeoutMs; it works again after restart', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'fleetstream-kafka-'));
      const port = await freePort();
      const env = {
        KAFKA_PORT: String(port),
        KAFKA_CONTROLLER_PORT: String(await freePort()),
        KAFKA_DATA_DIR: dataDir,
        KAFKA_LIBS_DIR: libs,
        KAFKA_HEAP: '-Xmx256m -Xms128m',
      };
      const log = createKafkaLog({ brokers: [`127.0.0.1:${port}`], logLevel: 'nothing', appendTimeoutMs: 3000, connectionTimeoutMs: 1000 });
      try {
        await script('start', env);
        const topic = 'outage';
        await log.ensureTopics([{ name: topic, partitions: 2 }]);
        assert.equal((await log.append(topic, [rec('k', 'before')])).length, 1);

        await script('stop', env);
        const started = Date.now();
        const error = await rejection(log.append(topic, [rec('k', 'during')]));
        const took = Date.now() - started;
        assert.ok(error.retriable, `${error.code} must be retriable`);
        assert.ok(['TIMEOUT', 'UNAVAILABLE'].includes(error.code), error.code);
        assert.ok(took <= 3000 + 1500, `rejected after ${took} ms`);

        await script('start', env);
        // the caller's retry loop: the first attempts may still meet the reconnecting client
        let positions: RecordPosition[] | undefined;
        for (let attempt = 0; attempt < 10 && !positions; attempt++) {
          try {
            positions = await log.append(topic, [rec('k', 'after')]);
          } catch (e) {
            assert.ok(isFleetError(e) && e.retriable, `retriable while recovering: ${String(e)}`);
          }
        }
        assert.ok(positions, 'append works again after the broker is back');
        const received: string[] = [];
        const consumer = log.consumer({ group: 'outage-group', topics: [topic], onBatch: async (b) => { received.push(...b.records.map((r) => decode(r.value))); } });
        await consumer.start();
        await waitFor(() => received.includes('before') && received.includes('after'), 15_000, 'records from before and after the outage');
        await consumer.stop();
      } finally {
        await log.close();
        await script('stop', env).catch(() => undefined);
        rmSync(dataDir, { recursive: true, force: true });
      }
    });

    outage.run();
  });
});

function script(command: 'start' | 'stop', env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(root, 'scripts/kafka.sh'), command], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`kafka.sh ${command} exited ${code}: ${output}`))));
  });
}
