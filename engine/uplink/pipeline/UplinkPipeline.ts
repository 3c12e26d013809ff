/**
 * Topic `uplinks` → state store (DESIGN.md §2, §4). A record carries the decision of the edge that
 * admitted it (`admitted`): its rows go straight to the store and its dropped entries to the dead
 * letters. A record without one is admitted in its device's order by the per-device runtime
 * (UndecidedUplinks), and a record of a device whose earlier records still wait there queues
 * behind them. Offsets are committed only after the states of every earlier record of that
 * partition are in the store and its rejections are on the dead-letter topic; a crash replays from
 * there and idempotent writes absorb the replay.
 */
import { exponentialBackoff } from '../../kernel/backoff.ts';
import type { Clock } from '../../kernel/clock.ts';
import { DeadLetterSink } from './DeadLetterSink.ts';
import { decodeEnvelope } from '../envelope.ts';
import { toFleetError, type FleetError } from '../../kernel/errors.ts';
import { TopicConsumer } from '../../consumer/TopicConsumer.ts';
import type { OffsetTracker } from '../../consumer/OffsetTracker.ts';
import type { Log, LogRecord, RecordBatch } from '../../ports/log.ts';
import { outputOf } from '../admission/admitUplink.ts';
import type { UplinkOutput } from '../admission/processUplink.ts';
import type { UndecidedUplinks, UplinkSink, UplinkWork } from './types.ts';
import type { EventWriter } from '../../events/EventWriter.ts';
import { uplinkEvents } from '../../events/eventRecords.ts';
import type { AlarmEvent } from '../../../schemas/events.ts';
import { OrderedEvents, type EventPlace } from '../../events/OrderedEvents.ts';
import { Topics, type AdmittedUplink, type DeadLetter, type StateRow, type UplinkEnvelope } from '../../../schemas/messages.ts';

/** Backoff of dead letters whose append failed retriably (as StateBatcher's defaults). */
const deadLetterBackoff = exponentialBackoff({ initialMs: 100, maxMs: 5000 });

/** Where processed rows go: resolves once they are durable (StateBatcher over a StateStore). */
export interface RowSink {
  append(rows: readonly StateRow[]): Promise<void>;
  /** append() with a callback instead of a promise (StateBatcher.appendThen); used when present. */
  appendThen?(rows: readonly StateRow[], done: (error?: FleetError) => void): void;
  flush(): Promise<void>;
}

export interface UplinkPipelineOptions<D extends UndecidedUplinks = UndecidedUplinks> {
  log: Log;
  rows: RowSink;
  /** The per-device runtime that admits records without a decision (engine/actors/DeviceActors.ts), emitting to `sink`. */
  undecided(sink: UplinkSink): D;
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
  onDeadLetters?(letters: readonly DeadLetter[]): void | Promise<void>;
  /**
   * Called with an uplink's rows once they are durable in the store (the MQTT feed publishes them).
   * Errors it throws are reported through onError and never stop the pipeline.
   */
  onStored?(rows: readonly StateRow[]): void;
  /** A store or log failure that stops progress (nothing is committed past it); also an onStored hook error, which does not. */
  onError?(error: FleetError): void;
  /**
   * Topic `events`: an uplink's stored states, and its refusals, are appended there before the
   * uplink is finished (at least once; a replay writes the same events).
   */
  events?: EventWriter;
  /**
   * The rules (engine/rules/RuleEvaluator.ts): asked for an uplink's judgement when its rows go to
   * the store, in the device's order; the judgement runs once they are durable, and the uplink is
   * finished after it.
   */
  rules?: { judgement(rows: readonly StateRow[]): (() => Promise<AlarmEvent[]>) | undefined };
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
  /** Records with the edge's decision, stored with no device actor. */
  admittedDirect: number;
}

type Admitted = UplinkEnvelope & { admitted: AdmittedUplink };

export class UplinkPipeline<D extends UndecidedUplinks = UndecidedUplinks> implements UplinkSink {
  /** The per-device runtime admitting records without a decision. */
  readonly actors: D;
  readonly deadLetters: DeadLetterSink;
  readonly #options: UplinkPipelineOptions<D>;
  readonly #consumer: TopicConsumer;
  readonly #maxInFlight: number;
  readonly #ordered: OrderedEvents | undefined;
  #inFlight = 0;
  #capacityWaiters: (() => void)[] = [];
  #drainWaiters: (() => void)[] = [];
  #failed: FleetError | undefined;
  /** Counters, plus live figures (in flight, actors) read through getters so they never go stale. */
  readonly stats: PipelineStats;

  constructor(options: UplinkPipelineOptions<D>) {
    this.#options = options;
    this.#maxInFlight = options.maxInFlight ?? 20_000;
    this.#ordered = options.events === undefined ? undefined : new OrderedEvents(options.events);
    this.deadLetters = new DeadLetterSink({ log: options.log, clock: options.clock, topic: options.deadLetterTopic, onDeadLetters: options.onDeadLetters });
    this.actors = options.undecided(this);
    this.#consumer = new TopicConsumer({
      log: options.log,
      clock: options.clock,
      group: options.group ?? 'fleetstream-engine',
      topic: options.topic ?? Topics.uplinks,
      commitIntervalMs: options.commitIntervalMs ?? 200,
      maxBatchRecords: options.maxBatchRecords,
      prefer: 'throughput', // the fleet's every uplink: fuller batches, for a few ms more when it trickles
      onBatch: (batch, tracker) => this.#onBatch(batch, tracker),
      drain: () => this.#drain(),
      onCommitError: (error) => this.#fail(error),
    });
    const pipeline = this;
    this.stats = {
      received: 0,
      stored: 0,
      rejected: 0,
      admittedDirect: 0,
      get committed() { return pipeline.#consumer.committed; },
      get inFlight() { return pipeline.#inFlight; },
      get actors() { return pipeline.actors.size; },
      get actorsCreated() { return pipeline.actors.created; },
      get actorsPassivated() { return pipeline.actors.passivated; },
    };
  }

  /** Where this uplink's events go, when topic `events` is wanted now. */
  get #events(): OrderedEvents | undefined {
    return this.#options.events?.wanted === true ? this.#ordered : undefined;
  }

  get failure(): FleetError | undefined {
    return this.#failed;
  }

  /** The topic this pipeline consumes. */
  get topic(): string {
    return this.#consumer.topic;
  }

  /**
   * The partitions this process holds, each with the offset below which every record is stored,
   * or undefined before its first batch (the group's committed offset then says where it stands).
   * Read by readiness probes and lag metrics, never on the hot path.
   */
  positions(): Map<number, number | undefined> {
    const out = new Map<number, number | undefined>();
    for (const partition of this.#consumer.assigned) out.set(partition, this.#consumer.tracker(partition)?.watermark);
    return out;
  }

  async start(): Promise<void> {
    await this.#consumer.start();
  }

  /** Stops fetching, finishes in-flight uplinks, makes them durable, commits, passivates actors. */
  async stop(): Promise<void> {
    await this.#consumer.stop();
    await this.#drain();
    await this.#consumer.commit();
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
      const tracker = this.#consumer.tracker(partition);
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
    const { partition, offset } = work;
    const place = work.events;
    const source = { partition, offset };
    // The rules' judgement takes its place in the device's order now, and runs once the rows are durable.
    const judge = rows.length > 0 ? this.#options.rules?.judgement(rows) : undefined;
    if (rows.length > 0 && rejections.length === 0) {
      // The usual uplink: rows only. Only what finishing needs is kept until they are durable.
      const then = (alarms?: AlarmEvent[]) => {
        if (place === undefined) return this.#finish(partition, offset);
        this.#ordered!.fill(partition, place, uplinkEvents(rows, [], source, alarms), (failed) => (failed !== undefined ? this.#fail(failed) : this.#finish(partition, offset)));
      };
      this.#storeThen(rows, (error) => {
        if (error !== undefined) return this.#fail(error);
        if (judge === undefined) return then();
        judge().then(then, (failed: unknown) => this.#fail(failed));
      });
      this.stats.stored += rows.length;
      return;
    }
    const durable = rows.length > 0 ? new Promise<void>((resolve, reject) => this.#storeThen(rows, (error) => (error !== undefined ? reject(error) : resolve()))) : undefined;
    const stored: Promise<AlarmEvent[] | void> | undefined = durable !== undefined && judge !== undefined ? durable.then(judge) : durable;
    const dead = rejections.length > 0 ? this.#deadLetter(work.envelope, rejections, 0) : undefined;
    this.stats.stored += rows.length;
    this.stats.rejected += rejections.length;
    // Only what finishing needs is kept until the rows are durable, not the envelope and its body:
    // with thousands of uplinks in flight, those would outlive young-generation collections.
    Promise.all([stored, dead]).then(([alarms, letters]) => {
      if (place === undefined) return this.#finish(partition, offset);
      this.#ordered!.fill(partition, place, uplinkEvents(rows, letters ?? [], source, alarms ?? []), (failed) => (failed !== undefined ? this.#fail(failed) : this.#finish(partition, offset)));
    }, (error: unknown) => this.#fail(error));
  }

  /** Stores an uplink's rows; `done` once they are durable, after onStored. */
  #storeThen(rows: readonly StateRow[], done: (error?: FleetError) => void): void {
    const sink = this.#options.rows;
    const stored = (error?: FleetError) => {
      if (error === undefined) this.#stored(rows);
      done(error);
    };
    if (sink.appendThen !== undefined) sink.appendThen(rows, stored);
    else sink.append(rows).then(() => stored(), (error: unknown) => stored(toFleetError(error)));
  }

  /**
   * Dead letters wait out a log or store outage like states do (StateBatcher): a retriable failure
   * (the log appending them, or onDeadLetters recording them) is tried again with backoff, so an
   * outage delays the partition's commits instead of stopping the pipeline. A retry may write a
   * dead letter twice, as a replay after a crash may.
   */
  #deadLetter(envelope: UplinkEnvelope, rejections: UplinkOutput['rejections'], retry: number): Promise<DeadLetter[]> {
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

  async #onBatch(batch: RecordBatch, tracker: OffsetTracker): Promise<void> {
    if (this.#failed !== undefined) return;
    for (const record of batch.records) {
      tracker.start(record.offset);
      this.#inFlight++;
      this.stats.received++;
      let envelope: UplinkEnvelope;
      try {
        envelope = decodeEnvelope(record.value);
      } catch (error) {
        this.#deadLetterRecord(record, error, this.#events?.reserve(record.partition));
        continue;
      }
      const wait = this.dispatch({ envelope, partition: record.partition, offset: record.offset, events: this.#events?.reserve(record.partition) });
      if (wait !== undefined) await wait;
    }
    if (this.#inFlight > this.#maxInFlight) {
      await new Promise<void>((resolve) => this.#capacityWaiters.push(resolve));
    }
  }

  /**
   * Hands a record on: admitted at the edge, it is stored as decided there, unless earlier records
   * of its device still wait for their admission (the device's order holds); the rest go to their
   * device's admission. Returns a promise to await when that device's queue is full.
   */
  dispatch(work: UplinkWork): Promise<void> | undefined {
    const envelope = work.envelope;
    if (envelope.admitted !== undefined && !this.actors.holds(envelope.deviceId)) {
      this.stats.admittedDirect++;
      this.emit(work, outputOf(envelope as Admitted));
      return undefined;
    }
    return this.actors.dispatch(work);
  }

  /** An undecodable record is dead-lettered under a synthetic envelope that keeps its raw bytes. */
  #deadLetterRecord(record: LogRecord, error: unknown, events: EventPlace | undefined): void {
    const envelope: UplinkEnvelope = {
      id: `log:${record.topic}:${record.partition}:${record.offset}`,
      channel: 'http',
      contentType: 'binary',
      deviceId: record.key,
      receivedAt: record.timestamp,
      body: record.value,
    };
    const reason = toFleetError(error, 'MALFORMED_PAYLOAD').message;
    this.emit({ envelope, partition: record.partition, offset: record.offset, events }, { rows: [], rejections: [{ code: 'MALFORMED_PAYLOAD', reason }] });
  }

  #finish(partition: number, offset: number): void {
    this.#consumer.finish(partition, offset);
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
    this.#consumer.halt();
    this.#options.onError?.(this.#failed);
    for (const wake of this.#drainWaiters.splice(0)) wake();
  }

  /** Flushes and waits until every dispatched uplink is durable (or the pipeline failed). */
  async #drain(): Promise<void> {
    for (;;) {
      await Promise.all([this.#options.rows.flush(), this.deadLetters.flush(), this.#options.events?.flush()]);
      if (this.#inFlight === 0 || this.#failed !== undefined) return;
      // Woken by the next finished uplink; uplinks still waiting for their device reach the sinks later.
      await new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
    }
  }
}
