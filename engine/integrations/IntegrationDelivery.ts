/**
 * One integration's deliveries: its own consumer group on topic `events` (its committed offsets
 * are its cursor, kept by the log) and a DeliveryLane per partition it holds. With several engines
 * the group spreads the partitions, so each device's events are delivered from one place, in order;
 * a partition that moves is delivered by its new holder from the cursor, with the saved batches.
 *
 * When a partition is assigned, records that fell out of the log's retention between the cursor and
 * the oldest record kept are counted as dropped (records, so an upper bound of the events lost).
 */
import { TopicConsumer } from '../consumer/TopicConsumer.ts';
import type { Clock } from '../kernel/clock.ts';
import { toFleetError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import type { IntegrationDeliveries } from '../ports/integrationDeliveries.ts';
import type { Integration } from '../ports/integrationRegistry.ts';
import type { Log, LogRecord } from '../ports/log.ts';
import type { WebhookTransport } from '../ports/webhooks.ts';
import { BusyTurns } from './BusyTurns.ts';
import { DeliveryLane, type LaneHooks } from './DeliveryLane.ts';
import type { RetrySchedule } from './retrySchedule.ts';
import type { SharedParses } from './SharedParses.ts';

/** The consumer group of an integration's deliveries on topic `events`, behind the configured prefix. */
export function deliveryGroup(prefix: string, integrationId: string): string {
  return `${prefix}fleetstream-integration-${integrationId}`;
}

export interface DeliveryBatching {
  /** Events per request. Default 100. */
  maxEvents: number;
  /** Longest the first event of a batch waits for companions, ms. Default 1000. */
  lingerMs: number;
  /** Events a partition holds undelivered before it is paused. Default 10 × maxEvents. */
  maxHeldEvents: number;
}

export interface IntegrationDeliveryOptions {
  integration: Integration;
  log: Pick<Log, 'consumer' | 'committed' | 'startOffsets'>;
  /** Topic `events` (with the configured prefix). */
  topic: string;
  /** Put before the consumer group's name (the configured topic prefix). */
  groupPrefix: string;
  clock: Clock;
  journal: IntegrationDeliveries;
  transport: WebhookTransport;
  secrets(integrationId: string): Promise<readonly string[] | undefined>;
  groundOf(deviceId: string): string | undefined | Promise<string | undefined>;
  schedule: RetrySchedule;
  batching: DeliveryBatching;
  /** The parses of topic `events` shared by the integrations of the process. */
  parses?: SharedParses;
  /** Whether ingestion has more than it can do now: deliveries give way (DeliveryLaneOptions.busy). */
  busy?(): boolean;
  /** Called with this integration's outcomes; `disabled` after the integration was disabled (410). */
  hooks: LaneHooks;
  logger: Logger;
}

/** How long the secrets read for an attempt sign the attempts after it, ms (a change of the integration reads them again at once). */
const SECRETS_FOR_MS = 1000;

export class IntegrationDelivery {
  readonly #o: IntegrationDeliveryOptions;
  /** The secrets that sign, as read at `at`: one read a second for all the lanes, not one per attempt. */
  #secrets: { at: number; value: Promise<readonly string[] | undefined> } | undefined;
  readonly #consumer: TopicConsumer;
  readonly #lanes = new Map<number, DeliveryLane>();
  /** While ingestion is busy, the lanes take turns: one step of the integration a second. */
  readonly #turns = new BusyTurns();
  #settings: Integration;
  #stopped = false;

  constructor(options: IntegrationDeliveryOptions) {
    this.#o = options;
    this.#settings = options.integration;
    this.#consumer = new TopicConsumer({
      log: options.log,
      clock: options.clock,
      group: deliveryGroup(options.groupPrefix, options.integration.id),
      topic: options.topic,
      commitIntervalMs: 200,
      startAt: 'earliest',
      onBatch: (batch, tracker) => this.#lane(batch.partition).take(batch.records, tracker),
      onAssign: (partitions) => void this.#countRetentionDrops(partitions),
      onRevoked: (partitions) => {
        for (const partition of partitions) {
          this.#lanes.get(partition)?.stop();
          this.#lanes.delete(partition);
        }
      },
      onCommitError: (error) => options.logger.warn('an integration\'s cursor could not be saved', { integrationId: this.#settings.id, error: toFleetError(error).message }),
    });
  }

  get integration(): Integration {
    return this.#settings;
  }

  /** Events gathered and not yet delivered, in this process. */
  get held(): number {
    let held = 0;
    for (const lane of this.#lanes.values()) held += lane.held;
    return held;
  }

  /** New settings (URL, filters, headers): the next attempts use them. */
  update(integration: Integration): void {
    this.#settings = integration;
    // A rotated secret is among the changes: the next attempt reads them again.
    this.#secrets = undefined;
  }

  async start(): Promise<void> {
    await this.#consumer.start();
  }

  /** Stops reading and abandons what is held: it is replayed from the cursor by whoever delivers next. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const lane of this.#lanes.values()) lane.stop();
    await this.#consumer.stop();
    this.#lanes.clear();
  }

  #lane(partition: number): DeliveryLane {
    let lane = this.#lanes.get(partition);
    if (lane !== undefined) return lane;
    const o = this.#o;
    lane = new DeliveryLane({
      partition,
      settings: () => this.#settings,
      journal: o.journal,
      transport: o.transport,
      secrets: () => this.#currentSecrets(),
      groundOf: o.groundOf,
      clock: o.clock,
      schedule: o.schedule,
      ...o.batching,
      busy: o.busy,
      turns: this.#turns,
      ...(o.parses === undefined ? {} : { expand: (record: LogRecord, groundId: string) => o.parses!.expand(record, groundId) }),
      finish: (offset) => this.#consumer.finish(partition, offset),
      pause: () => this.#consumer.pause(partition),
      resume: () => this.#consumer.resume(partition),
      hooks: {
        ...o.hooks,
        delivered: (events, batch) => {
          o.hooks.delivered(events, batch);
          // Delivered after failures: the receiver is back, the other partitions need not wait out their backoff.
          if (batch.attempts > 0) for (const other of this.#lanes.values()) if (other !== lane) other.retryNow();
        },
      },
      logger: o.logger,
    });
    this.#lanes.set(partition, lane);
    return lane;
  }

  #currentSecrets(): Promise<readonly string[] | undefined> {
    const now = this.#o.clock.now();
    const held = this.#secrets;
    if (held !== undefined && now - held.at < SECRETS_FOR_MS) return held.value;
    const value = this.#o.secrets(this.#settings.id);
    const read = { at: now, value };
    this.#secrets = read;
    // A failed read is not kept: the lane retries it (DeliveryLane #persist) and must read again.
    value.catch(() => {
      if (this.#secrets === read) this.#secrets = undefined;
    });
    return value;
  }

  async #countRetentionDrops(partitions: readonly number[]): Promise<void> {
    const { log, topic, journal } = this.#o;
    const id = this.#settings.id;
    try {
      const starts = await log.startOffsets(topic);
      for (const partition of partitions) {
        const cursor = await log.committed(deliveryGroup(this.#o.groupPrefix, id), topic, partition);
        const lost = (starts[partition] ?? 0) - cursor;
        if (cursor === 0 || lost <= 0) continue;
        await journal.addDropped(id, lost);
        this.#o.hooks.dropped(lost);
        this.#o.logger.warn('events fell out of the log\'s retention before an integration delivered them', { integrationId: id, partition, records: lost });
      }
    } catch (error) {
      this.#o.logger.warn('could not count what an integration lost to retention', { integrationId: id, error: toFleetError(error).message });
    }
  }
}
