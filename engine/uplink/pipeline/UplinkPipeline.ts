/**
 * Topic `uplinks` → device actors → state store (DESIGN.md §2, §4). Offsets are committed only
 * after the states of every earlier record of that partition are in the store and its rejections
 * are on the dead-letter topic; a crash replays from there and idempotent writes absorb the replay.
 */
import { exponentialBackoff } from '../../kernel/backoff.ts';
import type { Clock, TimerHandle } from '../../kernel/clock.ts';
import { DeadLetterSink } from './DeadLetterSink.ts';
import { decodeEnvelope } from '../envelope.ts';
import { toFleetError, type FleetError } from '../../kernel/errors.ts';
import { OffsetTracker } from './OffsetTracker.ts';
import { DeviceActors, type DeviceActorsOptions } from '../../actors/DeviceActors.ts';
import type { UplinkSink, UplinkWork } from '../../actors/DeviceActor.ts';
import type { DeviceDirectory, DeviceInfo } from '../../ports/directory.ts';
import type { CommitRequest, Consumer, Log, LogRecord, RecordBatch, TopicPartition } from '../../ports/log.ts';
import { compileDevice, type CompiledDevice } from '../admission/compileDevice.ts';
import type { UplinkOutput } from '../admission/processUplink.ts';
import { Topics, type DeadLetter, type StateRow, type UplinkEnvelope } from '../../../schemas/messages.ts';

/** Backoff of dead letters whose append failed retriably (as StateBatcher's defaults). */
const deadLetterBackoff = exponentialBackoff({ initialMs: 100, maxMs: 5000 });

/** Where processed rows go: resolves once they are durable (StateBatcher over a StateStore). */
export interface RowSink {
  append(rows: readonly StateRow[]): Promise<void>;
  /** append() with a callback instead of a promise (StateBatcher.appendThen); used when present. */
  appendThen?(rows: readonly StateRow[], done: (error?: FleetError) => void): void;
  flush(): Promise<void>;
}

export interface UplinkPipelineOptions {
  log: Log;
  rows: RowSink;
  directory: DeviceDirectory;
  clock: Clock;
  /** Consumer group of the engine processes. Default 'fleetstream-engine'. */
  group?: string;
  /** Default `uplinks`. */
  topic?: string;
  /** Where rejected uplinks go. Default `dead-letters`. */
  deadLetterTopic?: string;
  /** Uplinks dispatched and not yet durable before fetching pauses. Default 20 000. */
  maxInFlight?: number;
  /** How often advanced offsets are committed (ms). Default 200. */
  commitIntervalMs?: number;
  maxBatchRecords?: number;
  /** Compiles a device for its actor; default compileDevice with no binary decoder. */
  compile?(info: DeviceInfo): CompiledDevice;
  actors?: Omit<DeviceActorsOptions, 'directory' | 'compile' | 'sink' | 'clock'>;
  onDeadLetters?(letters: readonly DeadLetter[]): void | Promise<void>;
  /**
   * Called with an uplink's rows once they are durable in the store (the MQTT feed publishes them).
   * Errors it throws are reported through onError and never stop the pipeline.
   */
  onStored?(rows: readonly StateRow[]): void;
  /** A store or log failure that stops progress (nothing is committed past it); also an onStored hook error, which does not. */
  onError?(error: FleetError): void;
}

export interface PipelineStats {
  received: number;
  stored: number;
  rejected: number;
  inFlight: number;
  actors: number;
  actorsCreated: number;
  actorsPassivated: number;
  committed: number;
}

export class UplinkPipeline implements UplinkSink {
  readonly actors: DeviceActors;
  readonly deadLetters: DeadLetterSink;
  readonly #options: UplinkPipelineOptions;
  readonly #topic: string;
  readonly #maxInFlight: number;
  readonly #trackers = new Map<string, OffsetTracker>();
  readonly #trackerKeys: string[] = [];
  /** Partitions of the topic this consumer holds (from onAssign until onRevoke). */
  readonly #assigned = new Set<number>();
  #consumer: Consumer | undefined;
  #commitTimer: TimerHandle | undefined;
  #inFlight = 0;
  #capacityWaiters: (() => void)[] = [];
  #drainWaiters: (() => void)[] = [];
  #failed: FleetError | undefined;
  #stopping = false;
  /** Counters, plus live figures (in flight, actors) read through getters so they never go stale. */
  readonly stats: PipelineStats;

  constructor(options: UplinkPipelineOptions) {
    this.#options = options;
    this.#topic = options.topic ?? Topics.uplinks;
    this.#maxInFlight = options.maxInFlight ?? 20_000;
    this.deadLetters = new DeadLetterSink({ log: options.log, clock: options.clock, topic: options.deadLetterTopic, onDeadLetters: options.onDeadLetters });
    this.actors = new DeviceActors({
      ...options.actors,
      directory: options.directory,
      compile: options.compile ?? ((info) => compileDevice(info)),
      sink: this,
      clock: options.clock,
    });
    const pipeline = this;
    this.stats = {
      received: 0,
      stored: 0,
      rejected: 0,
      committed: 0,
      get inFlight() { return pipeline.#inFlight; },
      get actors() { return pipeline.actors.size; },
      get actorsCreated() { return pipeline.actors.created; },
      get actorsPassivated() { return pipeline.actors.passivated; },
    };
  }

  get failure(): FleetError | undefined {
    return this.#failed;
  }

  /** The topic this pipeline consumes. */
  get topic(): string {
    return this.#topic;
  }

  /**
   * The partitions this process holds, each with the offset below which every record is stored,
   * or undefined before its first batch (the group's committed offset then says where it stands).
   * Read by readiness probes and lag metrics, never on the hot path.
   */
  positions(): Map<number, number | undefined> {
    const out = new Map<number, number | undefined>();
    for (const partition of this.#assigned) out.set(partition, this.#trackers.get(this.#trackerKey(partition))?.watermark);
    return out;
  }

  async start(): Promise<void> {
    this.#consumer = this.#options.log.consumer({
      group: this.#options.group ?? 'fleetstream-engine',
      topics: [this.#topic],
      maxBatchRecords: this.#options.maxBatchRecords,
      onBatch: (batch) => this.#onBatch(batch),
      onRevoke: (partitions) => this.#onRevoke(partitions),
      onAssign: (partitions) => {
        for (const { topic, partition } of partitions) if (topic === this.#topic) this.#assigned.add(partition);
      },
    });
    await this.#consumer.start();
    this.#scheduleCommit();
  }

  /** Stops fetching, finishes in-flight uplinks, makes them durable, commits, passivates actors. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#commitTimer?.cancel();
    await this.#consumer?.stop();
    await this.#drain();
    await this.#commit();
    this.actors.stop();
  }

  /**
   * Resolves true once the states of every record of this pipeline's topic below `positions`
   * (partition → offset) are stored, false after `timeoutMs` or when the pipeline failed. A process
   * running edge and engine waits for it on stop, so what its edges accepted is stored before exit.
   */
  async caughtUp(positions: ReadonlyMap<number, number>, timeoutMs: number): Promise<boolean> {
    const clock = this.#options.clock;
    const deadline = clock.now() + timeoutMs;
    const reached = () => [...positions].every(([partition, offset]) => {
      const tracker = this.#trackers.get(this.#trackerKey(partition));
      return tracker !== undefined && tracker.inFlight === 0 && tracker.watermark >= offset;
    });
    while (!reached()) {
      if (this.#failed !== undefined || clock.now() >= deadline) return false;
      await new Promise<void>((resolve) => clock.setTimeout(resolve, 10));
    }
    return true;
  }

  /** Resolves when every dispatched uplink is durable. */
  async drained(): Promise<void> {
    await this.#drain();
  }

  emit(work: UplinkWork, out: UplinkOutput): void {
    const { rows, rejections } = out;
    const sink = this.#options.rows;
    if (rows.length > 0 && rejections.length === 0 && sink.appendThen !== undefined) {
      // The usual uplink: rows only. Only what finishing needs is kept until they are durable.
      const { partition, offset } = work;
      sink.appendThen(rows, (error) => {
        if (error !== undefined) return this.#fail(error);
        this.#stored(rows);
        this.#finish(partition, offset);
      });
      this.stats.stored += rows.length;
      return;
    }
    const stored = rows.length > 0 ? this.#options.rows.append(rows) : undefined;
    const dead = rejections.length > 0 ? this.#deadLetter(work.envelope, rejections, 0) : undefined;
    this.stats.stored += rows.length;
    this.stats.rejected += rejections.length;
    const { partition, offset } = work;
    if (stored === undefined && dead === undefined) {
      this.#finish(partition, offset);
      return;
    }
    const done = stored !== undefined && dead !== undefined ? Promise.all([stored, dead]) : (stored ?? dead)!;
    // Only what finishing needs is kept until the rows are durable, not the envelope and its body:
    // with thousands of uplinks in flight, those would outlive young-generation collections.
    done.then(() => {
      if (stored !== undefined) this.#stored(rows);
      this.#finish(partition, offset);
    }, (error: unknown) => this.#fail(error));
  }

  /**
   * Dead letters wait out a log or store outage like states do (StateBatcher): a retriable failure
   * (the log appending them, or onDeadLetters recording them) is tried again with backoff, so an
   * outage delays the partition's commits instead of stopping the pipeline. A retry may write a
   * dead letter twice, as a replay after a crash may.
   */
  #deadLetter(envelope: UplinkEnvelope, rejections: UplinkOutput['rejections'], retry: number): Promise<void> {
    return this.deadLetters.add(envelope, rejections).catch((error: unknown) => {
      const failure = toFleetError(error);
      if (!failure.retriable || this.#failed !== undefined) throw failure;
      return new Promise<void>((resolve) => this.#options.clock.setTimeout(resolve, deadLetterBackoff(retry)))
        .then(() => this.#deadLetter(envelope, rejections, retry + 1));
    });
  }

  #stored(rows: readonly StateRow[]): void {
    const onStored = this.#options.onStored;
    if (onStored === undefined) return;
    try {
      onStored(rows);
    } catch (error) {
      this.#options.onError?.(toFleetError(error));
    }
  }

  async #onBatch(batch: RecordBatch): Promise<void> {
    if (this.#failed !== undefined) return;
    const tracker = this.#tracker(batch.topic, batch.partition, batch.records[0].offset);
    for (const record of batch.records) {
      tracker.start(record.offset);
      this.#inFlight++;
      this.stats.received++;
      let envelope: UplinkEnvelope;
      try {
        envelope = decodeEnvelope(record.value);
      } catch (error) {
        this.#deadLetterRecord(record, error);
        continue;
      }
      const wait = this.actors.dispatch({ envelope, partition: record.partition, offset: record.offset });
      if (wait !== undefined) await wait;
    }
    if (this.#inFlight > this.#maxInFlight) {
      await new Promise<void>((resolve) => this.#capacityWaiters.push(resolve));
    }
  }

  /** An undecodable record is dead-lettered under a synthetic envelope that keeps its raw bytes. */
  #deadLetterRecord(record: LogRecord, error: unknown): void {
    const envelope: UplinkEnvelope = {
      id: `log:${record.topic}:${record.partition}:${record.offset}`,
      channel: 'http',
      contentType: 'binary',
      deviceId: record.key,
      receivedAt: record.timestamp,
      body: record.value,
    };
    const reason = toFleetError(error, 'MALFORMED_PAYLOAD').message;
    this.emit({ envelope, partition: record.partition, offset: record.offset }, { rows: [], rejections: [{ code: 'MALFORMED_PAYLOAD', reason }] });
  }

  /**
   * The trackers' key of a partition of this pipeline's topic, made once: one string per finished
   * uplink was a template literal, and a fresh string is hashed again on every lookup.
   */
  #trackerKey(partition: number): string {
    return (this.#trackerKeys[partition] ??= `${this.#topic}\u0000${partition}`);
  }

  #tracker(topic: string, partition: number, firstOffset: number): OffsetTracker {
    const key = `${topic}\u0000${partition}`;
    let tracker = this.#trackers.get(key);
    if (tracker === undefined) {
      tracker = new OffsetTracker(firstOffset);
      this.#trackers.set(key, tracker);
    }
    return tracker;
  }

  #finish(partition: number, offset: number): void {
    this.#trackers.get(this.#trackerKey(partition))?.finish(offset);
    this.#inFlight--;
    if (this.#inFlight <= this.#maxInFlight / 2 && this.#capacityWaiters.length > 0) {
      const waiters = this.#capacityWaiters;
      this.#capacityWaiters = [];
      for (const wake of waiters) wake();
    }
    if (this.#drainWaiters.length > 0) {
      const waiters = this.#drainWaiters;
      this.#drainWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  #fail(error: unknown): void {
    if (this.#failed !== undefined) return;
    this.#failed = toFleetError(error, 'UNAVAILABLE');
    this.#options.onError?.(this.#failed);
    for (const wake of this.#drainWaiters.splice(0)) wake();
  }

  /** Flushes and waits until every dispatched uplink is durable (or the pipeline failed). */
  async #drain(): Promise<void> {
    for (;;) {
      await Promise.all([this.#options.rows.flush(), this.deadLetters.flush()]);
      if (this.#inFlight === 0 || this.#failed !== undefined) return;
      // Woken by the next finished uplink; uplinks still waiting for their device reach the sinks later.
      await new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
    }
  }

  async #onRevoke(partitions: TopicPartition[]): Promise<void> {
    try {
      await this.#drain();
      await this.#commit();
    } finally {
      // Even when the commit failed, the partitions are gone: their next owner replays from the
      // last commit and the idempotent store absorbs the replay.
      for (const { topic, partition } of partitions) {
        this.#trackers.delete(`${topic}\u0000${partition}`);
        if (topic === this.#topic) this.#assigned.delete(partition);
      }
    }
  }

  /**
   * Commits every partition whose watermark moved. A commit the log may take later (a broker
   * restarting, the group coordinator moving: retriable errors) is handed out again on the next
   * tick; a partition the consumer no longer holds (CONFLICT, a rebalance between two ticks) is
   * dropped. Both only delay commits, never lose states: what is not committed is replayed.
   */
  async #commit(): Promise<void> {
    if (this.#failed !== undefined || this.#consumer === undefined) return;
    const offsets: CommitRequest[] = [];
    const taken: OffsetTracker[] = [];
    for (const [key, tracker] of this.#trackers) {
      const offset = tracker.takeCommit();
      if (offset === undefined) continue;
      const [topic, partition] = key.split('\u0000');
      offsets.push({ topic, partition: Number(partition), offset });
      taken.push(tracker);
    }
    if (offsets.length === 0) return;
    try {
      await this.#consumer.commit(offsets);
    } catch (error) {
      const failure = toFleetError(error);
      if (!failure.retriable && failure.code !== 'CONFLICT') throw failure;
      for (const tracker of taken) tracker.commitFailed();
      const lost = failure.code === 'CONFLICT' ? (failure.detail as Partial<TopicPartition> | undefined) : undefined;
      if (lost?.topic !== undefined && lost.partition !== undefined) this.#trackers.delete(`${lost.topic}\u0000${lost.partition}`);
      if (this.#stopping) throw failure;
      return;
    }
    this.stats.committed += offsets.length;
  }

  #scheduleCommit(): void {
    if (this.#stopping) return;
    this.#commitTimer = this.#options.clock.setTimeout(() => {
      this.#commit().catch((error: unknown) => this.#fail(error)).finally(() => this.#scheduleCommit());
    }, this.#options.commitIntervalMs ?? 200);
  }
}
