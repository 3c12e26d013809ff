/**
 * Asset commands through an external broker (spec §4.3, external broker mode): published with
 * mqtt.js on both command topic shapes at QoS 1 over an MQTT 5 connection.
 *
 * Fleetstream sees no device connections in this mode, so "delivered" means the broker took
 * responsibility: it acknowledged the publish (PUBACK, reason Success) on a topic some client
 * subscribes to. For a device with a persistent session the broker queues the command while the
 * device is away. MQTT 5 brokers answer "No matching subscribers" (0x10) when nobody subscribes:
 * when both topics get that answer the command stays queued (`offline`), and such devices are
 * offered to the actors again every `offlineRetryMs` and whenever the connection comes back.
 * A refusal (reason ≥ 0x80, e.g. Not authorized) fails the command with DOWNLINK_REFUSED.
 */
import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Clock, TimerHandle } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { silentLogger, type Logger } from '../../../engine/kernel/logger.ts';
import { commandTopics } from '../../../engine/access/mqttTopics.ts';
import type { AssetCommandDelivery, CommandTransport, DeliveryOutcome } from '../../../engine/ports/commandTransport.ts';

export interface ClientCommandTransportOptions {
  /** A connected MQTT 5 client used for publishing only. */
  client: MqttClient;
  clock: Clock;
  /** How long a publish waits for the broker's PUBACK before it counts as unacknowledged, ms. */
  ackTimeoutMs: number;
  /** How often commands of devices without a subscriber are tried again, ms. */
  offlineRetryMs: number;
  logger?: Logger;
}

const NO_MATCHING_SUBSCRIBERS = 0x10;

type PublishResult = { kind: 'taken' | 'nobody' | 'timeout' } | { kind: 'refused'; reasonCode: number; message: string };

export class ClientCommandTransport implements CommandTransport {
  readonly #o: ClientCommandTransportOptions;
  readonly #logger: Logger;
  /** PUBACK reason codes by message id, read by the publish callback right after. */
  readonly #reasons = new Map<number, number>();
  readonly #listeners = new Set<(deviceId: string) => void>();
  readonly #offline = new Set<string>();
  #poll: TimerHandle | undefined;
  #closed = false;

  constructor(options: ClientCommandTransportOptions) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
    // mqtt.js hands the publish callback the stored PUBLISH, not the PUBACK, so its reason code is
    // taken here: 'packetreceive' is emitted before the acknowledgement is processed.
    options.client.on('packetreceive', (packet) => {
      if (packet.cmd === 'puback' && packet.messageId !== undefined && packet.reasonCode !== undefined) this.#reasons.set(packet.messageId, packet.reasonCode);
    });
    options.client.on('connect', () => this.#wake());
  }

  onReachable(listener: (deviceId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async deliver(delivery: AssetCommandDelivery): Promise<DeliveryOutcome> {
    if (this.#closed) throw new FleetError('CLOSED', 'command transport is closed');
    if (!this.#o.client.connected) throw new FleetError('UNAVAILABLE', 'not connected to the MQTT broker');
    const topics = commandTopics(delivery.deviceId, delivery.asset);
    const payload = Buffer.from(delivery.payload);
    const results = await Promise.all(topics.map((topic) => this.#publish(topic, payload)));
    const refused = results.find((r) => r.kind === 'refused');
    if (results.some((r) => r.kind === 'taken')) {
      if (refused !== undefined) this.#logger.warn('mqtt: the broker refused one command topic', { deviceId: delivery.deviceId, commandId: delivery.commandId, reason: refused.message });
      return 'delivered';
    }
    if (refused !== undefined) {
      throw new FleetError('DOWNLINK_REFUSED', `the MQTT broker refused the command: ${refused.message} (reason 0x${refused.reasonCode.toString(16)})`);
    }
    if (results.some((r) => r.kind === 'timeout')) return 'unacknowledged';
    this.#offline.add(delivery.deviceId);
    this.#poll ??= this.#o.clock.setTimeout(() => this.#wake(), this.#o.offlineRetryMs);
    return 'offline';
  }

  close(): void {
    this.#closed = true;
    this.#poll?.cancel();
    this.#poll = undefined;
    this.#listeners.clear();
    this.#offline.clear();
  }

  #publish(topic: string, payload: Buffer): Promise<PublishResult> {
    return new Promise((resolve) => {
      const timer = this.#o.clock.setTimeout(() => resolve({ kind: 'timeout' }), this.#o.ackTimeoutMs);
      this.#o.client.publish(topic, payload, { qos: 1 }, (error, packet) => {
        timer.cancel();
        const messageId = (packet as IPublishPacket | undefined)?.messageId;
        const reasonCode = messageId === undefined ? undefined : this.#reasons.get(messageId);
        if (messageId !== undefined) this.#reasons.delete(messageId);
        if (error) {
          const code = (error as { code?: unknown }).code;
          // A reason code from the broker is an answer; anything else (connection lost) is not.
          resolve(typeof code === 'number' && code >= 0x80 ? { kind: 'refused', reasonCode: code, message: error.message } : { kind: 'timeout' });
          return;
        }
        resolve({ kind: reasonCode === NO_MATCHING_SUBSCRIBERS ? 'nobody' : 'taken' });
      });
    });
  }

  /** Offers every device found without a subscriber to the actors again. */
  #wake(): void {
    this.#poll?.cancel();
    this.#poll = undefined;
    if (this.#closed) return;
    const devices = [...this.#offline];
    this.#offline.clear();
    for (const deviceId of devices) for (const listener of this.#listeners) listener(deviceId);
  }
}
