/**
 * What external broker mode can see of the broker's willingness to lose acknowledged uplinks
 * (docs/mqtt.md, "External broker mode: no silent drops").
 *
 * A device's QoS 1 PUBACK comes from the broker, before Fleetstream has the message; a broker that
 * then drops it (Mosquitto: past max_queued_messages / max_queued_bytes of a subscriber
 * connection) loses it silently. Two things show at run time:
 * - the MQTT 5 CONNACK: no shared subscriptions or a Maximum QoS of 0 make durable uplinks
 *   impossible, so start is refused;
 * - Mosquitto's `$SYS/broker/publish/messages/dropped` (every sys_interval, 10 s by default): each
 *   rise is logged as an error and counted (fleetstream_mqtt_broker_dropped_total). The counter is
 *   the broker's, for all its clients, so a rise may be another client's loss.
 * The queue limits themselves are not visible through MQTT; when the broker names itself Mosquitto
 * a warning at start says which settings docs/mqtt.md asks for.
 */
import type { IConnackPacket, MqttClient } from 'mqtt';
import type { Clock, TimerHandle } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';

export const SYS_VERSION = '$SYS/broker/version';
export const SYS_DROPPED = '$SYS/broker/publish/messages/dropped';

/** Refuses start when the broker's CONNACK rules out durable uplinks through shared subscriptions. */
export function checkConnack(connack: IConnackPacket, logger: Logger, maxPayloadBytes: number): void {
  const p = connack.properties ?? {};
  if (p.sharedSubscriptionAvailable === false) {
    throw new FleetError('UNAVAILABLE', 'the MQTT broker says Shared Subscription Available = 0; external broker mode takes uplinks through $share subscriptions', { retriable: false });
  }
  if (p.maximumQoS === 0) {
    throw new FleetError('UNAVAILABLE', 'the MQTT broker says Maximum QoS = 0; uplinks must reach Fleetstream at QoS 1 to be acknowledged only once durable', { retriable: false });
  }
  if (p.maximumPacketSize !== undefined && p.maximumPacketSize < maxPayloadBytes) {
    logger.warn('mqtt: the broker refuses packets larger than its Maximum Packet Size, below maxPayloadBytes', { maximumPacketSize: p.maximumPacketSize, maxPayloadBytes });
  }
}

export interface BrokerFigures {
  /** The broker's version string ($SYS/broker/version), once seen. */
  version: string | undefined;
  /** Rises of the broker's dropped-messages counter seen since start. */
  brokerDropped: number;
}

/**
 * Subscribes `client` to the broker's version and drop counter; resolves once the version is in or
 * after `waitMs`. A broker that refuses `$SYS` is logged once and not watched.
 */
export async function watchBroker(client: MqttClient, options: { logger: Logger; clock: Clock; figures: BrokerFigures; /** ms */ waitMs: number }): Promise<void> {
  const { logger, figures } = options;
  let last: number | undefined;
  let seen: () => void = () => undefined;
  const versionSeen = new Promise<void>((resolve) => { seen = resolve; });
  client.on('message', (topic, payload) => {
    if (topic === SYS_VERSION) {
      figures.version = payload.toString('utf8').slice(0, 100);
      seen();
      return;
    }
    if (topic !== SYS_DROPPED) return;
    const text = payload.toString('utf8');
    // Digits only: Number('') is 0 and would pass for a broker restart.
    if (!/^\d{1,15}$/.test(text)) return;
    const total = Number(text);
    // The first reading is the baseline; after a broker restart the counter starts again.
    if (last !== undefined && total > last) {
      figures.brokerDropped += total - last;
      logger.error('mqtt: the broker dropped messages it had acknowledged to their publishers; uplinks may be lost (docs/mqtt.md, external broker mode)', { dropped: total - last, brokerTotal: total });
    }
    last = total;
  });
  let granted: number[] = [];
  try {
    granted = (await client.subscribeAsync([SYS_VERSION, SYS_DROPPED], { qos: 0 })).map((g) => g.qos);
  } catch (error) {
    granted = (error as { packet?: { granted?: number[] } }).packet?.granted ?? [0x80, 0x80];
  }
  if (granted.some((g) => g >= 0x80)) {
    logger.warn('mqtt: the broker does not show $SYS/broker/version and $SYS/broker/publish/messages/dropped to Fleetstream; drops at the broker cannot be watched', { granted });
  }
  let timer: TimerHandle | undefined;
  await Promise.race([versionSeen, new Promise<void>((resolve) => { timer = options.clock.setTimeout(resolve, options.waitMs); })]);
  timer?.cancel();
  if (figures.version?.toLowerCase().includes('mosquitto')) {
    logger.warn('mqtt: Mosquitto drops what it queued for a subscriber beyond max_queued_messages (default 1000) after acknowledging it to the device; set max_queued_messages 0 and max_queued_bytes 0, or bounds sized for an outage (docs/mqtt.md, external broker mode)', { broker: figures.version });
  }
}
