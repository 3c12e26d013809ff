/**
 * The log port's Consumer on a kafkajs consumer group (eachBatch, autoCommit off, nothing resolved
 * automatically).
 *
 * Rebalance guarantees (kafkajs 2.x uses the eager protocol and has no revoke hook):
 * - onRevoke(partitions) is called for every partition taken away (rebalance, crash, stop), exactly
 *   once per assignment, only after every onBatch already handed out for it has settled; no onBatch
 *   for it starts after onRevoke started, until onAssign hands it out again.
 * - onRevoke → onAssign → onBatch are called in that order, never overlapping.
 * - When the rebalance is noticed by the heartbeat this class sends between batches (the usual case
 *   while records flow), onRevoke runs and completes BEFORE kafkajs rejoins the group: the member's
 *   generation is still valid, so commits made in onRevoke are accepted and the next owner starts
 *   from them, as with the Java client's onPartitionsRevoked.
 * - When kafkajs notices it itself (an idle consumer's heartbeat, a metadata change, a crash), it
 *   rejoins without waiting: onRevoke then runs concurrently with the rejoin. Its commits are still
 *   accepted (Kafka does not check partition ownership on commit) but the next owner may already
 *   have read the older committed offset and re-deliver records: duplicates, never loss, because a
 *   commit only ever carries offsets of processed records.
 * - pause() holds until resume(), across revokes and reassignments (as the local log does).
 * - commit() refuses partitions this consumer does not hold (CONFLICT), as the local log does:
 *   Kafka itself only checks the member's generation, so a late commit could otherwise move back
 *   the progress of the partition's next owner. Commits from onRevoke are accepted.
 */
import type { Batch, Consumer as KafkaJSConsumer, EachBatchPayload, Kafka, KafkaMessage, RetryOptions } from 'kafkajs';
import type { Clock, TimerHandle } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { CommitRequest, Consumer, ConsumerOptions, LogRecord, TopicPartition } from '../../engine/ports/log.ts';
import { kafkaErrorToFleetError } from './kafkaErrors.ts';
import { validateCommits, validateConsumerOptions, validatePartitions } from './validateInput.ts';

export interface KafkaGroupConsumerSettings {
  kafka: Kafka;
  clock: Clock;
  /** Rejects NOT_FOUND when a topic does not exist (checked before joining). */
  partitionCount(topic: string): Promise<number>;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  rebalanceTimeoutMs: number;
  /** Fetch long-poll, ms: also bounds how late an idle consumer notices a rebalance. */
  maxWaitMs: number;
  /** A consumer preferring throughput (ConsumerOptions.prefer): its fetch waits for `fullFetchBytes`, at most this long. */
  throughputWaitMs: number;
  fullFetchBytes: number;
  /** Partitions whose batches are processed at the same time. */
  partitionsConsumedConcurrently: number;
  /** Records per onBatch call when ConsumerOptions.maxBatchRecords is not given. */
  defaultMaxBatchRecords: number;
  /** Delay before a batch whose onBatch rejected is delivered again, ms. */
  redeliveryBackoffMs: number;
  retry: RetryOptions;
  /** After kafkajs stops a running consumer for good, a new one is opened after `initial` ms, doubling up to `max` while opening fails. */
  reopenBackoffMs: { initial: number; max: number };
  onError(error: FleetError, context: ConsumerErrorContext): void;
  onClosed?: (consumer: KafkaGroupConsumer) => void;
}

export interface ConsumerErrorContext {
  group: string;
  topic?: string;
  partition?: number;
  /**
   * onBatch: the handler rejected (the batch is delivered again after redeliveryBackoffMs);
   * onAssign, onRevoke: the callback threw (the rebalance goes on); group: kafkajs lost the group
   * (it rejoins by itself; when its error is final, a new kafkajs consumer joins after a back-off)
   * or failed to leave it.
   */
  stage: 'onBatch' | 'onAssign' | 'onRevoke' | 'group';
}

type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** Kafka protocol errors by which a heartbeat says this member's assignment is ending. */
const GROUP_CHANGED = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'NOT_COORDINATOR_FOR_GROUP', 'FENCED_INSTANCE_ID']);

const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export class KafkaGroupConsumer implements Consumer {
  readonly #settings: KafkaGroupConsumerSettings;
  readonly #options: ConsumerOptions;
  readonly #maxBatchRecords: number;
  #consumer: KafkaJSConsumer | undefined;
  #state: State = 'new';
  /** Partitions handed out with onAssign and not yet revoked. */
  #assigned = new Map<string, TopicPartition>();
  /** True from a revoke until the next onAssign: nothing is delivered. */
  #revoked = false;
  /** onRevoke/onAssign run one after the other, in the order kafkajs reported the changes. */
  #lifecycle: Promise<void> = Promise.resolve();
  #inFlight = new Set<Promise<void>>();
  /** kafkajs has a consumer group (joined, or between joins); pause/resume reach it only then. */
  #joined = false;
  #userPaused = new Map<string, TopicPartition>();
  #backoff = new Map<string, { partition: TopicPartition; timer: TimerHandle }>();
  #removeListeners: (() => void)[] = [];
  #stopWaiters: (() => void)[] = [];
  #crash: Error | undefined;
  #reopenTimer: TimerHandle | undefined;
  #reopens = 0;
  /** A new kafkajs consumer being opened after a final crash; stop() waits for it before disconnecting. */
  #opening: Promise<void> = Promise.resolve();

  constructor(settings: KafkaGroupConsumerSettings, options: ConsumerOptions) {
    validateConsumerOptions(options);
    this.#settings = settings;
    this.#options = options;
    this.#maxBatchRecords = options.maxBatchRecords ?? settings.defaultMaxBatchRecords;
  }

  async start(): Promise<void> {
    if (this.#state !== 'new') throw new FleetError('CONFLICT', `the consumer was already started (${this.#state})`);
    this.#state = 'starting';
    try {
      for (const topic of this.#options.topics) await this.#settings.partitionCount(topic);
      await this.#open();
    } catch (error) {
      this.#state = 'stopped';
      this.#detach();
      this.#settings.onClosed?.(this);
      throw kafkaErrorToFleetError(error, `consumer ${this.#options.group}: start`);
    }
    if (this.#state !== 'starting') {
      if (this.#crash === undefined) throw new FleetError('CLOSED', `consumer ${this.#options.group} was stopped while starting`);
      // kafkajs could not join and gave up (a non-retriable crash)
      throw kafkaErrorToFleetError(this.#crash, `consumer ${this.#options.group}: start`);
    }
    this.#state = 'running';
    await this.#lifecycle; // the first onAssign has run when start() resolves
  }

  /** A kafkajs consumer of the group, connected, subscribed and running; disconnected again if any step fails. */
  async #open(): Promise<void> {
    const throughput = this.#options.prefer === 'throughput';
    const consumer = this.#settings.kafka.consumer({
      groupId: this.#options.group,
      sessionTimeout: this.#settings.sessionTimeoutMs,
      heartbeatInterval: this.#settings.heartbeatIntervalMs,
      rebalanceTimeout: this.#settings.rebalanceTimeoutMs,
      // Each fetch is a request for the broker and a socket write here: fewer, fuller ones under load.
      minBytes: throughput ? this.#settings.fullFetchBytes : 1,
      maxWaitTimeInMs: throughput ? this.#settings.throughputWaitMs : this.#settings.maxWaitMs,
      allowAutoTopicCreation: false,
      retry: this.#settings.retry,
    });
    this.#consumer = consumer;
    const { GROUP_JOIN, REBALANCING, CRASH } = consumer.events;
    this.#removeListeners.push(
      consumer.on(GROUP_JOIN, (event) => this.#onGroupJoin(event.payload.memberAssignment)),
      consumer.on(REBALANCING, () => void this.#revoke()),
      consumer.on(CRASH, (event) => this.#onCrash(event.payload.error, event.payload.restart)),
    );
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: this.#options.topics, fromBeginning: this.#options.startAt !== 'latest' });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: this.#settings.partitionsConsumedConcurrently,
        eachBatch: (payload) => this.#eachBatch(payload),
      });
    } catch (error) {
      this.#detach();
      await consumer.disconnect().catch(() => undefined);
      throw error;
    }
  }

  async commit(offsets: CommitRequest[]): Promise<void> {
    validateCommits(offsets);
    this.#checkSubscribed(offsets, 'commit');
    if (this.#state === 'new' || this.#state === 'stopped') {
      throw new FleetError('CLOSED', `consumer ${this.#options.group} is ${this.#state === 'new' ? 'not started' : 'stopped'}`);
    }
    if (offsets.length === 0) return;
    for (const o of offsets) {
      if (!this.#assigned.has(key(o.topic, o.partition))) {
        throw new FleetError('CONFLICT', `${o.topic}/${o.partition} is not assigned to this consumer of group ${this.#options.group}`, { detail: { topic: o.topic, partition: o.partition } });
      }
    }
    if (!this.#joined || !this.#consumer) {
      throw new FleetError('UNAVAILABLE', `consumer ${this.#options.group} is rejoining its group`, { retriable: true });
    }
    try {
      await this.#consumer.commitOffsets(offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: String(o.offset) })));
    } catch (error) {
      throw kafkaErrorToFleetError(error, `consumer ${this.#options.group}: commit`);
    }
  }

  pause(partitions: TopicPartition[]): void {
    validatePartitions(partitions);
    this.#checkSubscribed(partitions, 'pause');
    for (const p of partitions) this.#userPaused.set(key(p.topic, p.partition), { topic: p.topic, partition: p.partition });
    this.#applyPause(partitions);
  }

  resume(partitions: TopicPartition[]): void {
    validatePartitions(partitions);
    this.#checkSubscribed(partitions, 'resume');
    for (const p of partitions) this.#userPaused.delete(key(p.topic, p.partition));
    this.#applyPause(partitions);
  }

  seek(positions: CommitRequest[]): void {
    validateCommits(positions);
    this.#checkSubscribed(positions, 'seek');
    if (this.#state === 'new' || this.#state === 'stopped') {
      throw new FleetError('CLOSED', `consumer ${this.#options.group} is ${this.#state === 'new' ? 'not started' : 'stopped'}`);
    }
    for (const p of positions) {
      if (!this.#assigned.has(key(p.topic, p.partition))) {
        throw new FleetError('CONFLICT', `${p.topic}/${p.partition} is not assigned to this consumer of group ${this.#options.group}`, { detail: { topic: p.topic, partition: p.partition } });
      }
    }
    if (!this.#joined || !this.#consumer) {
      throw new FleetError('UNAVAILABLE', `consumer ${this.#options.group} is rejoining its group`, { retriable: true });
    }
    // kafkajs drops what it fetched of the partition before the seek, and fetches from the offset next.
    for (const p of positions) this.#consumer.seek({ topic: p.topic, partition: p.partition, offset: String(p.offset) });
  }

  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    if (this.#state === 'new') {
      this.#state = 'stopped';
      return;
    }
    if (this.#state === 'stopping') {
      await new Promise<void>((resolve) => this.#stopWaiters.push(resolve));
      return;
    }
    this.#state = 'stopping';
    this.#reopenTimer?.cancel();
    this.#reopenTimer = undefined;
    await this.#opening;
    await this.#revoke(); // kafkajs still runs: onRevoke's commits carry the live generation
    try {
      await this.#consumer?.disconnect(); // leaves the group
    } catch (error) {
      this.#report(error, { stage: 'group' });
    }
    this.#detach();
    this.#state = 'stopped';
    this.#settings.onClosed?.(this);
    for (const resolve of this.#stopWaiters.splice(0)) resolve();
  }

  #checkSubscribed(partitions: TopicPartition[], what: string): void {
    for (const p of partitions) {
      if (!this.#options.topics.includes(p.topic)) {
        throw new FleetError('VALIDATION_FAILED', `${what}: this consumer does not subscribe to ${p.topic}`, { detail: { topic: p.topic } });
      }
    }
  }

  #detach(): void {
    for (const remove of this.#removeListeners.splice(0)) remove();
    for (const { timer } of this.#backoff.values()) timer.cancel();
    this.#backoff.clear();
    this.#joined = false;
  }

  #deliverable(k: string): boolean {
    return (this.#state === 'running' || this.#state === 'starting') && !this.#revoked && this.#assigned.has(k) && !this.#userPaused.has(k) && !this.#backoff.has(k);
  }

  async #eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    await this.#lifecycle; // a pending revoke/assign completes before anything is delivered
    const k = key(batch.topic, batch.partition);
    if (!this.#deliverable(k)) return; // unresolved: kafkajs fetches it again once deliverable
    const records = toLogRecords(batch);
    for (let start = 0; start < records.length; start += this.#maxBatchRecords) {
      if (!this.#deliverable(k) || !isRunning() || isStale()) return;
      const chunk = records.slice(start, start + this.#maxBatchRecords);
      const delivery = this.#options.onBatch({ topic: batch.topic, partition: batch.partition, records: chunk });
      const tracked = Promise.resolve(delivery).then(() => undefined, () => undefined);
      this.#inFlight.add(tracked);
      try {
        await delivery;
      } catch (error) {
        this.#report(error, { stage: 'onBatch', topic: batch.topic, partition: batch.partition });
        this.#backOff({ topic: batch.topic, partition: batch.partition });
        return; // not resolved: the same records come again after the back-off
      } finally {
        this.#inFlight.delete(tracked);
      }
      resolveOffset(String(chunk[chunk.length - 1].offset));
      try {
        await heartbeat();
      } catch (error) {
        if (!GROUP_CHANGED.has(protocolType(error))) return; // kafkajs's own heartbeat reports it
        // The group is rebalancing and kafkajs will rejoin only after this callback returns:
        // revoke now, while this member's commits are still accepted. Heartbeats answered with
        // REBALANCE_IN_PROGRESS still renew the session, so a long onRevoke does not get this
        // member evicted (the group waits up to rebalanceTimeoutMs for it to rejoin).
        await this.#whileHeartbeating(heartbeat, this.#revoke());
        return;
      }
    }
  }

  async #whileHeartbeating(heartbeat: () => Promise<void>, work: Promise<void>): Promise<void> {
    let timer: TimerHandle | undefined;
    let done = false;
    const beat = (): void => {
      timer = this.#settings.clock.setTimeout(() => {
        if (done) return;
        heartbeat().catch(() => undefined).finally(() => { if (!done) beat(); });
      }, this.#settings.heartbeatIntervalMs);
    };
    beat();
    try {
      await work;
    } finally {
      done = true;
      timer?.cancel();
    }
  }

  /** Stops delivery, waits for what was handed out, then calls onRevoke once for all assigned partitions. */
  #revoke(): Promise<void> {
    if (this.#revoked || this.#assigned.size === 0) return this.#lifecycle;
    this.#revoked = true;
    const partitions = [...this.#assigned.values()];
    this.#kafkaPause(partitions, true); // no fetching while nothing may be delivered
    this.#lifecycle = this.#lifecycle.then(async () => {
      await Promise.all([...this.#inFlight]);
      try {
        await this.#options.onRevoke?.(partitions);
      } catch (error) {
        this.#report(error, { stage: 'onRevoke' });
      }
      for (const p of partitions) {
        const k = key(p.topic, p.partition);
        this.#assigned.delete(k);
        this.#backoff.get(k)?.timer.cancel();
        this.#backoff.delete(k);
      }
    });
    return this.#lifecycle;
  }

  #onGroupJoin(memberAssignment: Record<string, number[]>): void {
    this.#joined = true;
    const partitions: TopicPartition[] = [];
    for (const [topic, numbers] of Object.entries(memberAssignment)) {
      for (const partition of [...numbers].sort((a, b) => a - b)) partitions.push({ topic, partition });
    }
    // A rejoin kafkajs started without a REBALANCING event (metadata change, restart after a crash).
    if (!this.#revoked && this.#assigned.size > 0) void this.#revoke();
    this.#lifecycle = this.#lifecycle.then(() => {
      if (this.#state === 'stopping' || this.#state === 'stopped') return;
      for (const p of partitions) this.#assigned.set(key(p.topic, p.partition), p);
      this.#revoked = false;
      // kafkajs keeps pause flags per group object (a crash restart starts a fresh one) and the
      // revoke paused everything: restate the flags the user and back-offs want.
      this.#applyPause(partitions);
      if (partitions.length > 0) {
        try {
          this.#options.onAssign?.(partitions);
        } catch (error) {
          this.#report(error, { stage: 'onAssign' });
        }
      }
    });
  }

  #onCrash(error: Error, restart: boolean): void {
    this.#joined = false; // kafkajs left the group and drops its group object
    this.#crash = error;
    this.#report(error, { stage: 'group' });
    void this.#revoke();
    if (restart) return; // kafkajs rejoins by itself
    if (this.#state === 'starting') {
      // start() reports it: a group that cannot be joined at all is a configuration to fix
      this.#state = 'stopped';
      this.#detach();
      this.#settings.onClosed?.(this);
    } else if (this.#state === 'running') {
      // kafkajs disconnected for good (an error it counts as final, e.g. after a broker restart):
      // a consumer that stops here leaves its process running with nothing to do. Open a new one.
      this.#detach();
      this.#reopenLater(this.#settings.reopenBackoffMs.initial);
    }
  }

  /** Opens a new kafkajs consumer after `delayMs`, doubling the delay after each failure. */
  #reopenLater(delayMs: number): void {
    this.#reopenTimer = this.#settings.clock.setTimeout(() => {
      this.#reopenTimer = undefined;
      if (this.#state !== 'running') return;
      this.#reopens += 1;
      this.#opening = this.#open().catch((error: unknown) => {
        this.#report(error, { stage: 'group' });
        if (this.#state === 'running') this.#reopenLater(Math.min(delayMs * 2, this.#settings.reopenBackoffMs.max));
      });
    }, delayMs);
  }

  /** How many times a new kafkajs consumer was opened after one stopped for good. */
  get reopens(): number {
    return this.#reopens;
  }

  #backOff(partition: TopicPartition): void {
    const k = key(partition.topic, partition.partition);
    if (this.#backoff.has(k)) return;
    const timer = this.#settings.clock.setTimeout(() => {
      this.#backoff.delete(k);
      this.#applyPause([partition]);
    }, this.#settings.redeliveryBackoffMs);
    this.#backoff.set(k, { partition, timer });
    this.#applyPause([partition]);
  }

  /** Sets kafkajs's pause flag of each partition to what the user and the back-offs want. */
  #applyPause(partitions: TopicPartition[]): void {
    const pause: TopicPartition[] = [];
    const resume: TopicPartition[] = [];
    for (const p of partitions) {
      const k = key(p.topic, p.partition);
      (this.#userPaused.has(k) || this.#backoff.has(k) ? pause : resume).push(p);
    }
    this.#kafkaPause(pause, true);
    this.#kafkaPause(resume, false);
  }

  #kafkaPause(partitions: TopicPartition[], paused: boolean): void {
    if (!this.#joined || !this.#consumer || partitions.length === 0) return; // restated on the next join
    if (!paused) {
      // resume only what neither the user nor a back-off holds
      partitions = partitions.filter((p) => !this.#userPaused.has(key(p.topic, p.partition)) && !this.#backoff.has(key(p.topic, p.partition)));
    }
    const byTopic = new Map<string, number[]>();
    for (const p of partitions) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
    const topicPartitions = [...byTopic].map(([topic, numbers]) => ({ topic, partitions: numbers }));
    if (topicPartitions.length === 0) return;
    if (paused) this.#consumer.pause(topicPartitions);
    else this.#consumer.resume(topicPartitions);
  }

  #report(error: unknown, context: Omit<ConsumerErrorContext, 'group'>): void {
    const where = context.topic === undefined ? context.stage : `${context.stage} ${context.topic}/${context.partition}`;
    this.#settings.onError(kafkaErrorToFleetError(error, `consumer ${this.#options.group}: ${where}`), { group: this.#options.group, ...context });
  }
}

function protocolType(error: unknown): string {
  const type = typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? type : '';
}

function toLogRecords(batch: Batch): LogRecord[] {
  return batch.messages.map((m: KafkaMessage) => ({
    topic: batch.topic,
    partition: batch.partition,
    offset: Number(m.offset),
    key: m.key ? m.key.toString('utf8') : '',
    // a plain Uint8Array view (no copy): callers compare and decode it like the local log's records
    value: m.value ? new Uint8Array(m.value.buffer, m.value.byteOffset, m.value.byteLength) : new Uint8Array(0),
    timestamp: Number(m.timestamp),
  }));
}
