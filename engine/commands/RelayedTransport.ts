/**
 * The command transport of a device's command owner when the device's MQTT session may be on
 * another process (Kafka; docs/scaling.md). A delivery becomes a request on topic
 * `command-deliveries`, addressed to the edge the device's connectivity names, or to every edge
 * when none is known; the edge that holds the session delivers it and answers with an outcome
 * record on topic `commands`, which the command pipeline hands back here (outcome). No answer
 * within `answerTimeoutMs` counts as offline, and so does the named edge's `offline`: the device
 * is then looked for on every edge at its next delivery. An edge's presence record (presence)
 * updates the connectivity and wakes the device's command actor, as a local transport's
 * onReachable does. A device no edge named is offline without a request (tracked); an owner that
 * takes over partitions asks the edges for a roll call.
 */
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { ErrorCodes, FleetError, toFleetError, type ErrorCode } from '../kernel/errors.ts';
import { randomBase62 } from '../kernel/ids.ts';
import { Listeners } from '../kernel/Listeners.ts';
import type { Connectivity } from '../actors/Connectivity.ts';
import type { AssetCommandDelivery, CommandTransport, DeliveryOutcome } from '../ports/commandTransport.ts';
import type { Log } from '../ports/log.ts';
import { encodeDeliveryRequest, type Outcome, type Presence } from './commandRecords.ts';

export interface RelayedTransportOptions {
  log: Pick<Log, 'append'>;
  clock: Clock;
  /** Topic `command-deliveries` (with its prefix). */
  topic: string;
  connectivity: Connectivity;
  /** How long an edge has to answer a request, ms: more than the edges' MQTT acknowledgement timeout. Default 15 000. */
  answerTimeoutMs?: number;
  /**
   * The edges tell where sessions are (their embedded MQTT edges): a device no edge named is
   * offline, and nothing is sent. Otherwise (an external broker, which any edge reaches) every
   * request goes to whichever edge takes it.
   */
  tracked: boolean;
  /** The partition count of topic `commands` (roll calls name partitions of it). */
  partitionCount(): Promise<number>;
  /** A roll call that could not be sent (devices already connected are then found when they next subscribe). */
  onError?(error: FleetError): void;
}

interface Waiting {
  deviceId: string;
  to: string | undefined;
  timer: TimerHandle;
  answer(outcome: DeliveryOutcome | FleetError): void;
}

const decoder = new TextDecoder();

export class RelayedTransport implements CommandTransport {
  readonly #o: RelayedTransportOptions;
  readonly #waiting = new Map<string, Waiting>();
  readonly #reachable = new Listeners<string>();
  #closed = false;

  constructor(options: RelayedTransportOptions) {
    this.#o = options;
  }

  /** Deliveries waiting for an edge's answer. */
  get waiting(): number {
    return this.#waiting.size;
  }

  onReachable(listener: (deviceId: string) => void): () => void {
    return this.#reachable.add(listener);
  }

  async deliver(delivery: AssetCommandDelivery): Promise<DeliveryOutcome> {
    if (this.#closed) throw new FleetError('CLOSED', 'command transport is closed');
    const { deviceId, commandId, asset } = delivery;
    const to = this.#o.connectivity.of(deviceId)?.edge;
    if (this.#o.tracked && to === undefined) return 'offline';
    const deliveryId = randomBase62(22);
    const answered = new Promise<DeliveryOutcome | FleetError>((resolve) => {
      const timer = this.#o.clock.setTimeout(() => this.#answer(deliveryId, 'offline', to), this.#o.answerTimeoutMs ?? 15_000);
      this.#waiting.set(deliveryId, { deviceId, to, timer, answer: resolve });
    });
    try {
      const payload = decoder.decode(delivery.payload);
      const request = { deliveryId, commandId, deviceId, asset: { id: asset.id, name: asset.name }, payload, ...(to === undefined ? {} : { to }) };
      await this.#o.log.append(this.#o.topic, [{ key: deviceId, value: encodeDeliveryRequest(request) }]);
    } catch (error) {
      this.#drop(deliveryId);
      throw error;
    }
    const outcome = await answered;
    if (outcome instanceof FleetError) throw outcome;
    return outcome;
  }

  /** An edge's answer, read from topic `commands` in the device's order. */
  outcome(deviceId: string, outcome: Outcome): void {
    const waiting = this.#waiting.get(outcome.deliveryId);
    if (waiting === undefined || waiting.deviceId !== deviceId) return;
    if (outcome.result !== 'failed') {
      this.#answer(outcome.deliveryId, outcome.result, outcome.edge);
      return;
    }
    const code: ErrorCode = outcome.code !== undefined && Object.hasOwn(ErrorCodes, outcome.code) ? outcome.code as ErrorCode : 'UNAVAILABLE';
    const failure = new FleetError(code, outcome.reason ?? `edge ${outcome.edge} could not deliver the command`, { retriable: outcome.retriable ?? true });
    this.#answer(outcome.deliveryId, failure, outcome.edge);
  }

  /** An edge holds a session of the device listening on a command topic. */
  presence(deviceId: string, presence: Presence): void {
    this.#o.connectivity.reached(deviceId, presence.edge, presence.at);
    this.#reachable.emit(deviceId);
  }

  /**
   * This owner took over partitions of topic `commands`: every edge is asked to say again which
   * devices of theirs listen (their earlier presence may lie before this owner's committed offset).
   */
  rollCall(partitions: number[]): void {
    if (!this.#o.tracked || this.#closed) return;
    this.#o.partitionCount()
      .then((count) => this.#o.log.append(this.#o.topic, [{ key: 'roll-call', value: encodeDeliveryRequest({ rollCall: { partitions, count } }) }]))
      .catch((error: unknown) => this.#o.onError?.(toFleetError(error)));
  }

  /** Pending deliveries count as unanswered (their commands are resent once the owner reads them again). */
  close(): void {
    this.#closed = true;
    for (const id of [...this.#waiting.keys()]) this.#answer(id, 'unacknowledged', undefined);
  }

  #answer(deliveryId: string, outcome: DeliveryOutcome | FleetError, edge: string | undefined): void {
    const waiting = this.#drop(deliveryId);
    if (waiting === undefined) return;
    // The edge it was sent to does not hold the session (it said so, or did not answer).
    if (outcome === 'offline' && waiting.to !== undefined) this.#o.connectivity.lost(waiting.deviceId, waiting.to);
    else if (outcome !== 'offline' && edge !== undefined && !(outcome instanceof FleetError)) this.#o.connectivity.reached(waiting.deviceId, edge, this.#o.clock.now());
    waiting.answer(outcome);
  }

  #drop(deliveryId: string): Waiting | undefined {
    const waiting = this.#waiting.get(deliveryId);
    if (waiting === undefined) return undefined;
    this.#waiting.delete(deliveryId);
    waiting.timer.cancel();
    return waiting;
  }
}
