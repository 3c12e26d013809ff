/**
 * An edge's side of command delivery across processes (docs/scaling.md). It reads the delivery
 * requests of topic `command-deliveries` and hands each to this edge's MQTT transport; what became
 * of it goes back to the device's command owner as an outcome record on topic `commands`, keyed by
 * the device. It also tells the owner, with a presence record, each time a session of a device on
 * this edge starts listening on a command topic.
 *
 * With the embedded MQTT edge each edge reads every request (its own consumer group, from the end):
 * a request addressed to another edge is skipped, one addressed to this edge is always answered,
 * and one addressed to none is answered only by an edge that holds the device's session (the
 * others stay silent; the owner counts silence as offline). With an external broker every edge can
 * deliver every command: the edges share one group, so each request reaches one of them.
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import type { OffsetTracker } from '../consumer/OffsetTracker.ts';
import { TopicConsumer } from '../consumer/TopicConsumer.ts';
import type { CommandTransport, DeliveryOutcome } from '../ports/commandTransport.ts';
import { partitionFor, type Log, type RecordBatch } from '../ports/log.ts';
import type { DeliveryRequest } from '../../schemas/commands.ts';
import { decodeDeliveryRequest, encodeOutcome, encodePresence, type Outcome } from './commandRecords.ts';

export interface DeliveryRelayOptions {
  log: Pick<Log, 'append' | 'consumer'>;
  clock: Clock;
  /** This edge's id, unique among the running edges. */
  edge: string;
  transport: CommandTransport;
  topics: { commands: string; deliveries: string };
  group: string;
  /** The transport reaches every device (an external broker): one edge answers each request. */
  shared: boolean;
  /** Default 500 ms. */
  commitIntervalMs?: number;
  /**
   * At most one presence record per device within this window, ms (a device subscribing in a loop
   * writes one per window, the last one at the window's end). Default 1000.
   */
  presenceWindowMs?: number;
  onError?(error: FleetError): void;
}

const encoder = new TextEncoder();

export class DeliveryRelay {
  readonly #o: DeliveryRelayOptions;
  readonly #consumer: TopicConsumer;
  #unsubscribe: (() => void) | undefined;
  /** Requests handed to the transport and not answered yet. */
  readonly #inFlight = new Set<Promise<void>>();
  /** Devices whose presence was written in this window, and those that asked again within it. */
  #sentInWindow = new Set<string>();
  #again = new Set<string>();
  #window: TimerHandle | undefined;
  /** Roll calls answered since start. */
  rollCalls = 0;

  constructor(options: DeliveryRelayOptions) {
    this.#o = options;
    this.#consumer = new TopicConsumer({
      log: options.log, clock: options.clock, group: options.group, topic: options.topics.deliveries,
      startAt: 'latest', commitIntervalMs: options.commitIntervalMs ?? 500,
      onBatch: async (batch, tracker) => this.#onBatch(batch, tracker),
      onCommitError: () => undefined,
    });
  }

  async start(): Promise<void> {
    this.#unsubscribe = this.#o.transport.onReachable((deviceId) => this.#present(deviceId));
    await this.#consumer.start();
  }

  /** Stops reading; the deliveries under way are answered first. */
  async stop(): Promise<void> {
    this.#unsubscribe?.();
    this.#window?.cancel();
    this.#window = undefined;
    await this.#consumer.stop();
    await Promise.all([...this.#inFlight]);
  }

  #onBatch(batch: RecordBatch, tracker: OffsetTracker): void {
    for (const record of batch.records) {
      // A request is read once: what it became goes to the owner, who asks again if it must.
      tracker.start(record.offset);
      tracker.finish(record.offset);
      const decoded = decodeDeliveryRequest(record.value);
      if (!decoded.ok) {
        this.#o.onError?.(toFleetError(new Error(`a delivery request was skipped: ${decoded.reason}`)));
        continue;
      }
      if ('rollCall' in decoded) {
        this.#answerRollCall(decoded.rollCall.partitions, decoded.rollCall.count);
        continue;
      }
      const request = decoded.request;
      if (request.to !== undefined && request.to !== this.#o.edge) continue;
      const work = this.#deliver(request).finally(() => this.#inFlight.delete(work));
      this.#inFlight.add(work);
    }
  }

  async #deliver(request: DeliveryRequest): Promise<void> {
    const { deliveryId, commandId, deviceId, asset } = request;
    let outcome: Outcome;
    try {
      const result: DeliveryOutcome = await this.#o.transport.deliver({ commandId, deviceId, asset, payload: encoder.encode(request.payload) });
      // Asked of every edge: only the one holding the session answers.
      if (result === 'offline' && request.to === undefined && !this.#o.shared) return;
      outcome = { deliveryId, commandId, edge: this.#o.edge, result };
    } catch (error) {
      const failure = toFleetError(error, 'UNAVAILABLE');
      outcome = { deliveryId, commandId, edge: this.#o.edge, result: 'failed', code: failure.code, reason: failure.message.slice(0, 1024), retriable: failure.retriable };
    }
    await this.#append(deviceId, encodeOutcome(outcome));
  }

  /** Presence records written since start, and those held back to the end of their window. */
  presences = 0;
  presencesHeld = 0;

  #present(deviceId: string): void {
    if (this.#sentInWindow.has(deviceId)) {
      if (!this.#again.has(deviceId)) this.presencesHeld++;
      this.#again.add(deviceId);
      return;
    }
    this.#sentInWindow.add(deviceId);
    this.presences++;
    this.#append(deviceId, encodePresence({ edge: this.#o.edge, at: this.#o.clock.now() }));
    this.#window ??= this.#o.clock.setTimeout(() => this.#nextWindow(), this.#o.presenceWindowMs ?? 1000);
  }

  /** The window ends: those that asked again within it are written now, and open the next one. */
  #nextWindow(): void {
    this.#window = undefined;
    const again = this.#again;
    this.#sentInWindow = new Set();
    this.#again = new Set();
    for (const deviceId of again) this.#present(deviceId);
  }

  /** Presence again for this edge's listening devices of those partitions of topic `commands`. */
  #answerRollCall(partitions: number[], count: number): void {
    this.rollCalls++;
    const wanted = new Set(partitions);
    const at = this.#o.clock.now();
    const records = [];
    for (const deviceId of this.#o.transport.listening?.() ?? []) {
      if (wanted.has(partitionFor(deviceId, count))) records.push({ key: deviceId, value: encodePresence({ edge: this.#o.edge, at }) });
    }
    if (records.length === 0) return;
    this.#o.log.append(this.#o.topics.commands, records).catch((error: unknown) => this.#o.onError?.(toFleetError(error)));
  }

  #append(deviceId: string, value: Uint8Array): Promise<void> {
    return this.#o.log.append(this.#o.topics.commands, [{ key: deviceId, value }]).then(
      () => undefined,
      // Unanswered: the owner counts it as offline and asks again when the device is reachable.
      (error: unknown) => this.#o.onError?.(toFleetError(error)),
    );
  }
}
