/**
 * KafkaGroupConsumer when kafkajs stops a running consumer for good (a CRASH event with
 * restart=false): the partitions are revoked once, a new kafkajs consumer joins after the back-off,
 * and the back-off doubles while opening fails. kafkajs's consumer is replaced by a scripted
 * stand-in that the test drives by hand; the real broker, restarted under load, is exercised in
 * test/app/distributed/distributed-e2e.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kafka } from 'kafkajs';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import type { FleetError } from '../../../engine/kernel/errors.ts';
import type { TopicPartition } from '../../../engine/ports/log.ts';
import { KafkaGroupConsumer } from '../../../adapters/kafka/KafkaGroupConsumer.ts';

const EVENTS = { GROUP_JOIN: 'consumer.group_join', REBALANCING: 'consumer.rebalancing', CRASH: 'consumer.crash' };

/** One kafkajs consumer as the test sees it: its listeners, and what was called on it. */
class ScriptedConsumer {
  readonly events = EVENTS;
  readonly listeners = new Map<string, ((event: { payload: Record<string, unknown> }) => void)[]>();
  connectError: Error | undefined;
  connected = false;
  running = false;
  disconnects = 0;

  on(name: string, listener: (event: { payload: Record<string, unknown> }) => void): () => void {
    this.listeners.set(name, [...(this.listeners.get(name) ?? []), listener]);
    return () => this.listeners.set(name, (this.listeners.get(name) ?? []).filter((l) => l !== listener));
  }

  emit(name: string, payload: Record<string, unknown>): void {
    for (const listener of this.listeners.get(name) ?? []) listener({ payload });
  }

  listening(): number {
    return [...this.listeners.values()].reduce((n, ls) => n + ls.length, 0);
  }

  async connect(): Promise<void> {
    if (this.connectError) throw this.connectError;
    this.connected = true;
  }
  async subscribe(): Promise<void> {}
  /** Set to hold run() until the test releases it: kafkajs's run() joins the group before it resolves. */
  joining: Promise<void> | undefined;
  async run(): Promise<void> {
    await this.joining;
    this.running = true;
  }
  async disconnect(): Promise<void> {
    this.disconnects += 1;
    this.connected = false;
    this.running = false;
  }
  pause(): void {}
  resume(): void {}
  async commitOffsets(): Promise<void> {}
}

class FinalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KafkaJSNonRetriableError';
  }
}

function setup(options: { failOpens?: number; joining?: Promise<void> } = {}) {
  const clock = new SimulatedClock(1_000_000);
  const consumers: ScriptedConsumer[] = [];
  let failOpens = options.failOpens ?? 0;
  const kafka = {
    consumer: () => {
      const c = new ScriptedConsumer();
      c.joining = options.joining;
      // the first consumer always opens; the next `failOpens` fail to connect
      if (consumers.length > 0 && failOpens > 0) {
        failOpens -= 1;
        c.connectError = new Error('connect ECONNREFUSED 127.0.0.1:19092');
      }
      consumers.push(c);
      return c;
    },
  } as unknown as Kafka;
  const calls: string[] = [];
  const errors: { error: FleetError; stage: string }[] = [];
  let closed = 0;
  const consumer = new KafkaGroupConsumer({
    kafka,
    clock,
    partitionCount: async () => 2,
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 1000,
    rebalanceTimeoutMs: 20_000,
    maxWaitMs: 500,
    throughputWaitMs: 5,
    fullFetchBytes: 64 * 1024,
    partitionsConsumedConcurrently: 1,
    defaultMaxBatchRecords: 100,
    redeliveryBackoffMs: 1000,
    retry: { retries: 0 },
    reopenBackoffMs: { initial: 1000, max: 4000 },
    onError: (error, context) => errors.push({ error, stage: context.stage }),
    onClosed: () => { closed += 1; },
  }, {
    group: 'g',
    topics: ['t'],
    onBatch: async () => {},
    onAssign: (ps: TopicPartition[]) => { calls.push(`assign ${ps.map((p) => p.partition).join(',')}`); },
    onRevoke: async (ps: TopicPartition[]) => { calls.push(`revoke ${ps.map((p) => p.partition).join(',')}`); },
  });
  return { clock, consumers, consumer, calls, errors, closed: () => closed };
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

/** Starts the consumer; the group assigns both partitions to it. */
async function started(s: ReturnType<typeof setup>): Promise<void> {
  const starting = s.consumer.start();
  await settle();
  s.consumers[0].emit(EVENTS.GROUP_JOIN, { memberAssignment: { t: [0, 1] } });
  await starting;
  await settle();
}

test('a final crash of a running consumer revokes its partitions and opens a new consumer after the back-off', async () => {
  const s = setup();
  await started(s);
  assert.equal(s.calls, ['assign 0,1']);

  s.consumers[0].emit(EVENTS.CRASH, { error: new FinalError('The group is rebalancing'), restart: false });
  await settle();
  assert.equal(s.calls, ['assign 0,1', 'revoke 0,1'], 'revoked once, nothing assigned yet');
  assert.is(s.consumers[0].listening(), 0, 'the stopped consumer is no longer listened to');
  assert.is(s.consumers.length, 1, 'nothing is opened before the back-off');
  assert.is(s.errors.filter((e) => e.stage === 'group').length, 1, 'the crash is reported');
  assert.is(s.closed(), 0, 'the consumer is not closed');

  s.clock.advance(999);
  await settle();
  assert.is(s.consumers.length, 1);
  s.clock.advance(1);
  await settle();
  assert.is(s.consumers.length, 2, 'a new kafkajs consumer after 1 s');
  assert.ok(s.consumers[1].running, 'connected, subscribed and running');
  assert.is(s.consumer.reopens, 1);

  s.consumers[1].emit(EVENTS.GROUP_JOIN, { memberAssignment: { t: [1] } });
  await settle();
  assert.equal(s.calls, ['assign 0,1', 'revoke 0,1', 'assign 1'], 'the new member takes what the group gives it');
  await s.consumer.stop();
  assert.equal(s.calls.at(-1), 'revoke 1');
  assert.is(s.consumers[1].disconnects, 1, 'stop leaves the group with the new consumer');
  assert.is(s.closed(), 1);
});

test('while a new consumer cannot connect, the back-off doubles up to its maximum; then it joins', async () => {
  const s = setup({ failOpens: 3 });
  await started(s);
  s.consumers[0].emit(EVENTS.CRASH, { error: new FinalError('lost'), restart: false });
  await settle();
  const openedAfter: number[] = [];
  let last = s.consumers.length;
  for (let ms = 0; ms < 20_000 && s.consumers.length < 5; ms += 250) {
    s.clock.advance(250);
    await settle();
    if (s.consumers.length > last) {
      openedAfter.push(ms + 250);
      last = s.consumers.length;
    }
  }
  // 1 s, then 2 s, 4 s, and 4 s again (the maximum) after each failed connect
  assert.equal(openedAfter, [1000, 3000, 7000, 11000]);
  assert.ok(s.consumers[4].running, 'the fourth attempt connects');
  assert.is(s.errors.filter((e) => e.stage === 'group').length, 4, 'the crash and each failed attempt are reported');
  for (const c of s.consumers.slice(1, 4)) assert.is(c.disconnects, 1, 'a consumer that failed to connect is disconnected');
  await s.consumer.stop();
});

test('stop during the back-off opens nothing more', async () => {
  const s = setup();
  await started(s);
  s.consumers[0].emit(EVENTS.CRASH, { error: new FinalError('lost'), restart: false });
  await settle();
  await s.consumer.stop();
  s.clock.advance(60_000);
  await settle();
  assert.is(s.consumers.length, 1);
  assert.is(s.consumer.reopens, 0);
  assert.is(s.closed(), 1);
});

test('a crash kafkajs restarts itself opens no second consumer', async () => {
  const s = setup();
  await started(s);
  s.consumers[0].emit(EVENTS.CRASH, { error: new Error('connection lost'), restart: true });
  await settle();
  s.clock.advance(60_000);
  await settle();
  assert.is(s.consumers.length, 1);
  assert.equal(s.calls, ['assign 0,1', 'revoke 0,1']);
  s.consumers[0].emit(EVENTS.GROUP_JOIN, { memberAssignment: { t: [0, 1] } });
  await settle();
  assert.equal(s.calls, ['assign 0,1', 'revoke 0,1', 'assign 0,1']);
  await s.consumer.stop();
});

test('a final crash while joining for the first time fails start and opens nothing', async () => {
  let joined = () => {};
  const s = setup({ joining: new Promise<void>((resolve) => { joined = resolve; }) });
  const starting = s.consumer.start();
  await settle();
  s.consumers[0].emit(EVENTS.CRASH, { error: new FinalError('group authorization failed'), restart: false });
  joined();
  const outcome = await starting.then(() => 'started', (error: unknown) => (error as FleetError).message);
  assert.match(outcome, 'group authorization failed');
  s.clock.advance(60_000);
  await settle();
  assert.is(s.consumers.length, 1);
  assert.is(s.closed(), 1);
});

test.run();
