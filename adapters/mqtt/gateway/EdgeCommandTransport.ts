/**
 * Asset commands to devices connected to the embedded edge (spec §4.3), on the command topic shapes
 * the device subscribed to, at the QoS it was granted (at most 1). A command counts as delivered when
 * a connection of the device acknowledges it (PUBACK), or — when it only holds QoS 0 subscriptions —
 * once it is written; 'offline' when no connection of the device listens on a command topic of that
 * asset (the command actors keep it and resend when onReachable tells them); 'unacknowledged' when
 * the connections that listen are at their MQTT 5 Receive Maximum of commands awaiting PUBACK (the
 * actors resend after a backoff).
 *
 * The subscriptions are found by device (Sessions.ts), the PUBLISH is encoded by hand and written
 * at once: no topic matching, no broker queue between the actor and the socket.
 */
import type { Clock, TimerHandle } from '../../../engine/kernel/clock.ts';
import type { AssetCommandDelivery, CommandTransport, DeliveryOutcome } from '../../../engine/ports/commandTransport.ts';
import { commandTopics } from '../../../engine/access/mqttTopics.ts';
import { EdgeConnection } from './EdgeConnection.ts';
import type { Sessions } from './Sessions.ts';

export interface EdgeCommandTransportOptions {
  sessions: Sessions;
  clock: Clock;
  /** ms */
  ackTimeoutMs: number;
}

export class EdgeCommandTransport implements CommandTransport {
  readonly #o: EdgeCommandTransportOptions;
  readonly #listeners = new Set<(deviceId: string) => void>();
  readonly #waits = new Set<(outcome: DeliveryOutcome) => void>();

  constructor(options: EdgeCommandTransportOptions) {
    this.#o = options;
  }

  onReachable(listener: (deviceId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A connection of `deviceId` holds a command subscription now. */
  reachable(deviceId: string): void {
    for (const listener of this.#listeners) listener(deviceId);
  }

  /** Devices with an open connection here subscribed to a command topic. */
  *listening(): Iterable<string> {
    for (const deviceId of this.#o.sessions.devices()) {
      for (const { session, entry } of this.#o.sessions.subscribersOf(deviceId) ?? []) {
        if (entry.channel === 'command' && session.holder instanceof EdgeConnection && session.holder.phase === 'open') {
          yield deviceId;
          break;
        }
      }
    }
  }

  async deliver(delivery: AssetCommandDelivery): Promise<DeliveryOutcome> {
    const { deviceId, asset } = delivery;
    const [assetTopic, deviceTopic] = commandTopics(deviceId, asset);
    const targets = new Map<EdgeConnection, Map<string, 0 | 1>>();
    for (const { session, entry } of this.#o.sessions.subscribersOf(deviceId) ?? []) {
      if (entry.channel !== 'command' || !(session.holder instanceof EdgeConnection) || session.holder.phase !== 'open') continue;
      const topic = entry.assetId !== undefined
        ? (entry.assetId === asset.id ? assetTopic : undefined)
        : (entry.asset === '+' || entry.asset === asset.name ? deviceTopic : undefined);
      if (topic === undefined) continue;
      let topics = targets.get(session.holder);
      if (topics === undefined) targets.set(session.holder, (topics = new Map()));
      topics.set(topic, Math.max(topics.get(topic) ?? 0, entry.qos) as 0 | 1);
    }
    if (targets.size === 0) return 'offline';
    let settle!: (outcome: DeliveryOutcome) => void;
    const acked = new Promise<DeliveryOutcome>((resolve) => { settle = resolve; });
    let done = false;
    let timer: TimerHandle | undefined;
    const finish = (outcome: DeliveryOutcome) => {
      if (done) return;
      done = true;
      this.#waits.delete(finish);
      timer?.cancel();
      settle(outcome);
    };
    let sent = 0;
    let awaitingAck = false;
    let full = false;
    for (const [conn, topics] of targets) {
      for (const [topic, qos] of topics) {
        // [MQTT-3.3.4-9]: a connection whose Receive Maximum is used up gets nothing at QoS 1 now.
        if (qos === 1 && !conn.canSendQos1) {
          full = true;
          continue;
        }
        if (!conn.publish(Buffer.from(topic), delivery.payload, qos, () => finish('delivered'))) continue;
        sent++;
        if (qos === 1) awaitingAck = true;
      }
    }
    // Listening but unable to take it yet: tried again after a backoff, not parked until reachable.
    if (sent === 0) return full ? 'unacknowledged' : 'offline';
    if (!awaitingAck) return 'delivered';
    this.#waits.add(finish);
    timer = this.#o.clock.setTimeout(() => finish('unacknowledged'), this.#o.ackTimeoutMs);
    return acked;
  }

  close(): void {
    for (const finish of [...this.#waits]) finish('unacknowledged');
    this.#listeners.clear();
  }
}
