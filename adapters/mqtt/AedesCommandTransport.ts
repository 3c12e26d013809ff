/**
 * Asset commands to devices connected to the embedded broker (spec §4.3): published on both command
 * topic shapes, QoS 1. A command counts as delivered when a connection of the device subscribed at
 * QoS 1 acknowledges it (PUBACK), or — when it only holds QoS 0 subscriptions — once it is written.
 */
import type { Aedes, Client } from 'aedes';
import type { Clock } from '../../engine/kernel/clock.ts';
import type { AssetCommandDelivery, CommandTransport, DeliveryOutcome } from '../../engine/ports/commandTransport.ts';
import { commandTopics, topicMatches } from '../../engine/access/mqttTopics.ts';

export interface AedesCommandTransportOptions {
  broker: Aedes;
  clock: Clock;
  /** ms */
  ackTimeoutMs: number;
  /** The device a connection speaks for (device tokens), else undefined. */
  deviceOf(client: Client): string | undefined;
}

interface AckWait {
  deviceId: string;
  topics: readonly string[];
  payload: Buffer;
  resolve(outcome: DeliveryOutcome): void;
}

export class AedesCommandTransport implements CommandTransport {
  readonly #options: AedesCommandTransportOptions;
  readonly #online = new Map<string, Set<Client>>();
  readonly #listeners = new Set<(deviceId: string) => void>();
  readonly #waits = new Set<AckWait>();

  constructor(options: AedesCommandTransportOptions) {
    this.#options = options;
    const { broker } = options;
    broker.on('clientReady', (client) => {
      const deviceId = options.deviceOf(client);
      if (deviceId === undefined) return;
      let set = this.#online.get(deviceId);
      if (set === undefined) this.#online.set(deviceId, (set = new Set()));
      set.add(client);
      // A device back with a persistent session has its subscriptions again without a SUBSCRIBE.
      for (const listener of this.#listeners) listener(deviceId);
    });
    broker.on('clientDisconnect', (client) => this.#forget(client));
    broker.on('clientError', (client) => this.#forget(client));
    broker.on('subscribe', (_subs, client) => {
      const deviceId = options.deviceOf(client);
      if (deviceId !== undefined) for (const listener of this.#listeners) listener(deviceId);
    });
    broker.on('ack', (packet, client) => {
      const deviceId = options.deviceOf(client);
      if (deviceId === undefined) return;
      // Aedes keeps outgoing packets of clean sessions nowhere, so their PUBACK comes without the
      // packet. The actors keep one command in flight per device and commands are the only QoS 1
      // traffic to a device (feeds are QoS 0), so a PUBACK from the device acknowledges its wait.
      const known = packet !== undefined && packet !== null && 'topic' in packet ? packet : undefined;
      for (const wait of this.#waits) {
        if (wait.deviceId !== deviceId) continue;
        if (known !== undefined && !(wait.topics.includes(known.topic) && Buffer.from(known.payload).equals(wait.payload))) continue;
        this.#waits.delete(wait);
        wait.resolve('delivered');
        break;
      }
    });
  }

  onReachable(listener: (deviceId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async deliver(delivery: AssetCommandDelivery): Promise<DeliveryOutcome> {
    const topics = commandTopics(delivery.deviceId, delivery.asset);
    let maxQos = -1;
    for (const client of this.#online.get(delivery.deviceId) ?? []) {
      if (client.closed) continue;
      for (const [filter, sub] of Object.entries((client as unknown as { subscriptions: Record<string, { qos: number }> }).subscriptions)) {
        if (topics.some((t) => topicMatches(filter, t))) maxQos = Math.max(maxQos, sub.qos);
      }
    }
    if (maxQos < 0) return 'offline';
    const payload = Buffer.from(delivery.payload);
    let acked: Promise<DeliveryOutcome> | undefined;
    if (maxQos >= 1) {
      acked = new Promise<DeliveryOutcome>((resolve) => {
        const wait: AckWait = { deviceId: delivery.deviceId, topics, payload, resolve };
        this.#waits.add(wait);
        this.#options.clock.setTimeout(() => {
          if (this.#waits.delete(wait)) resolve('unacknowledged');
        }, this.#options.ackTimeoutMs);
      });
    }
    await Promise.all(topics.map((topic) => new Promise<void>((resolve) => {
      this.#options.broker.publish({ cmd: 'publish', topic, payload, qos: 1, retain: false, dup: false }, () => resolve());
    })));
    return acked ?? 'delivered';
  }

  close(): void {
    for (const wait of this.#waits) wait.resolve('unacknowledged');
    this.#waits.clear();
    this.#listeners.clear();
  }

  #forget(client: Client): void {
    const deviceId = this.#options.deviceOf(client);
    if (deviceId === undefined) return;
    const set = this.#online.get(deviceId);
    set?.delete(client);
    if (set !== undefined && set.size === 0) this.#online.delete(deviceId);
  }
}
