/**
 * Fleetstream's client connections to the external broker (mqtt.js, MQTT 5): connected with the
 * mode's session and flow settings, the CONNACK checked (BrokerWatch.ts checkConnack), and the
 * subscriber connections' shared subscriptions to the uplink topics made and their grants checked.
 */
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt';
import { FleetError, toFleetError } from '../../../engine/kernel/errors.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';
import { checkConnack } from './BrokerWatch.ts';
import { DurableAcks } from './DurableAcks.ts';

export interface BrokerClientOptions {
  url: string;
  logger: Logger;
  receiveMaximum: number;
  sessionExpirySeconds: number;
  connectTimeoutMs: number;
  reconnectPeriodMs: number;
  maxPayloadBytes: number;
  /** A connection to the broker was lost (mqtt.js reconnects). */
  onOffline(): void;
}

function clientOptions(o: BrokerClientOptions, clientId: string): IClientOptions {
  return {
    protocolVersion: 5,
    clientId,
    // A persistent session keeps this instance's share of uplinks (in flight and queued) at the
    // broker while it is away, and gets them back when it reconnects with the same client id.
    clean: o.sessionExpirySeconds === 0,
    properties: { sessionExpiryInterval: o.sessionExpirySeconds, receiveMaximum: o.receiveMaximum },
    connectTimeout: o.connectTimeoutMs,
    reconnectPeriod: o.reconnectPeriodMs,
    // Feeds are QoS 0: while the broker is away they are dropped, not queued without bound.
    queueQoSZero: false,
    // No cache of every 16-bit number in mqtt-packet (~7.5 MB of heap, built at the first CONNECT):
    // as in the embedded edge (gateway/createMqttEdge.ts).
    writeCache: false,
  };
}

/**
 * Connects; a subscriber's `onMessage` (its PUBACKs held by DurableAcks) is in place before the
 * CONNACK, as a resumed session may deliver at once.
 */
export function connectBroker(
  o: BrokerClientOptions,
  clientId: string,
  onMessage?: (acks: DurableAcks, packet: IPublishPacket, callback: () => void) => void,
): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const client = mqtt.connect(o.url, clientOptions(o, clientId));
    if (onMessage !== undefined) {
      const acks = DurableAcks.attach(client, o.receiveMaximum);
      client.handleMessage = (packet, callback) => onMessage(acks, packet, callback);
    }
    const fail = (error: Error) => {
      client.removeAllListeners();
      // mqtt.js may still report the abandoned attempt (a CONNACK timeout); nobody waits for it.
      client.on('error', () => undefined);
      client.end(true);
      reject(new FleetError('UNAVAILABLE', `cannot connect to the MQTT broker: ${error.message}`, { cause: error }));
    };
    const onError = (error: Error) => fail(error);
    const onClose = () => fail(new Error('connection closed before CONNACK'));
    client.once('error', onError);
    client.once('close', onClose);
    client.once('connect', (connack) => {
      client.off('error', onError);
      client.off('close', onClose);
      try {
        checkConnack(connack, o.logger, o.maxPayloadBytes);
      } catch (error) {
        client.removeAllListeners();
        client.on('error', () => undefined);
        client.end(true);
        reject(error);
        return;
      }
      client.on('error', (error) => o.logger.warn('mqtt: broker connection error', { clientId, error: toFleetError(error) }));
      client.on('offline', () => {
        o.onOffline();
        o.logger.warn('mqtt: broker connection lost; reconnecting', { clientId });
      });
      resolve(client);
    });
  });
}

/** Subscribes to `filters` at QoS 1; fails for good unless the broker granted every one. */
export async function subscribeShared(client: MqttClient, filters: string[]): Promise<void> {
  let granted: number[];
  try {
    granted = (await client.subscribeAsync(filters, { qos: 1 })).map((g) => g.qos);
  } catch (error) {
    granted = (error as { packet?: { granted?: number[] } }).packet?.granted ?? [];
    if (granted.length === 0) throw new FleetError('UNAVAILABLE', `subscribing to the uplink topics failed: ${(error as Error).message}`, { cause: error, retriable: false });
  }
  const refused = filters.filter((_, j) => !(granted[j] < 0x80));
  if (refused.length > 0) {
    throw new FleetError('UNAVAILABLE', `the MQTT broker refused the shared subscriptions ${refused.join(', ')} (reason 0x${(granted.find((g) => g >= 0x80) ?? 0).toString(16)}); it must support MQTT 5 shared subscriptions and allow this client to read the uplink topics`, { retriable: false });
  }
}
