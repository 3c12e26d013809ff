/**
 * External broker mode (DESIGN.md §2, docs/mqtt.md): instead of the embedded edge,
 * Fleetstream connects to a broker as an MQTT 5 client (mqtt.js), takes the uplink topics of spec
 * §4.1/§4.2 through shared subscriptions (`$share/<group>/…`, so several instances split the load),
 * publishes commands (spec §4.3) and feeds there.
 *
 * The broker authenticated the publisher and enforced its ACLs; a shared subscription does not say
 * who published, so the topic is trusted: `device/<id>/…` is that device's uplink. Payloads get the
 * embedded edge's checks (engine/access/checkUplinkPayload.ts, MQTT 5 content type when present);
 * unknown devices and assets and bad payloads are acknowledged, dropped and recorded as rejections.
 *
 * Durability: a QoS 1 uplink is acknowledged to the broker only once it is durable in topic
 * `uplinks` (DurableAcks.ts holds its PUBACK), while the connection reads on: up to Receive Maximum
 * uplinks per connection are appended at once and share the log's group commit. While the log or
 * registry is unavailable the message is retried with a backoff and stays unacknowledged, which
 * also holds the broker back (it sends at most Receive Maximum unacknowledged messages per
 * connection). What the broker cannot hand over it queues per connection and, past its limits,
 * drops after the device had its PUBACK: docs/mqtt.md says which broker settings prevent that;
 * BrokerWatch.ts checks what the broker shows.
 */
import type { MqttClient } from 'mqtt';
import type { StateRow } from '../../../schemas/messages.ts';
import type { Clock } from '../../../engine/kernel/clock.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { feedTopic } from '../../../engine/access/mqttTopics.ts';
import type { CommandTransport } from '../../../engine/ports/commandTransport.ts';
import { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import type { MqttEdgeStats } from '../gateway/createMqttEdge.ts';
import { ClientCommandTransport } from './ClientCommandTransport.ts';
import { watchBroker, type BrokerFigures } from './BrokerWatch.ts';
import { externalSettings, type ExternalMqttOptions } from './ExternalMqttOptions.ts';
import { ExternalUplinks } from './ExternalUplinks.ts';
import { connectBroker, subscribeShared, type BrokerClientOptions } from './connectBroker.ts';

export type { ExternalMqttOptions } from './ExternalMqttOptions.ts';

/** Spec §4.1, §4.2. */
export const UPLINK_FILTERS = ['device/+/state', 'device/+/asset/+/state', 'asset/+/state'] as const;

export interface ExternalMqtt {
  /**
   * `dropped`: uplinks given up by Fleetstream (failed for good, or in hand at close); `brokerDropped`:
   * rises of the broker's own drop counter (BrokerWatch.ts); `brokerVersion` as the broker says.
   */
  readonly stats: MqttEdgeStats & { dropped: number; brokerDropped: number; readonly brokerVersion: string | undefined };
  /** Command delivery through the broker (engine/commands). */
  readonly commands: CommandTransport;
  /** Publishes stored states as `{value, at}` on their feed topics, QoS 0 (UplinkPipeline onStored). */
  publishStates(rows: readonly StateRow[]): void;
  /** Always true: who follows a feed is the broker's to know. */
  followsFeeds(): boolean;
  /** Stops taking uplinks, lets those in hand be acknowledged, disconnects. */
  close(): Promise<void>;
}

export async function createExternalMqtt(options: ExternalMqttOptions): Promise<ExternalMqtt> {
  const logger = options.logger ?? silentLogger;
  const settings = externalSettings(options);
  const { group, connections } = settings;
  const { clock } = options;
  const access = options.lookups ?? new RegistryLookups({ registry: options.registry, clock, cacheTtlMs: options.cacheTtlMs ?? 2000 });
  // A deleted device's next uplink is refused at once rather than after the cache expires.
  const unsubscribeChanges = options.changes?.subscribe((change) => access.apply(change)) ?? (() => undefined);
  const broker: BrokerFigures = { version: undefined, brokerDropped: 0 };
  const stats = {
    accepted: 0, refused: 0, disconnected: 0, dropped: 0,
    get brokerDropped() { return broker.brokerDropped; },
    get brokerVersion() { return broker.version; },
  };
  const uplinks = new ExternalUplinks({
    access, admission: options.admission, clock, logger, counts: stats,
    maxPayloadBytes: settings.maxPayloadBytes, maxQos0InFlight: settings.maxQos0InFlight, retryBaseMs: settings.retryBaseMs,
  });
  const client: BrokerClientOptions = {
    url: options.url, logger,
    receiveMaximum: settings.receiveMaximum,
    sessionExpirySeconds: settings.sessionExpirySeconds,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    reconnectPeriodMs: options.reconnectPeriodMs ?? 1000,
    maxPayloadBytes: settings.maxPayloadBytes,
    onOffline: () => { stats.disconnected++; },
  };
  const filters = UPLINK_FILTERS.map((f) => `$share/${group}/${f}`);

  const clients: MqttClient[] = [];
  try {
    const publisher = await connectBroker(client, `${settings.clientIdPrefix}-pub`);
    clients.push(publisher);
    for (let i = 0; i < connections; i++) {
      const subscriber = await connectBroker(client, `${settings.clientIdPrefix}-sub${i}`, (acks, packet, callback) => uplinks.onMessage(acks, packet, callback));
      clients.push(subscriber);
      await subscribeShared(subscriber, filters);
    }
    await watchBroker(publisher, { logger, clock, figures: broker, waitMs: options.brokerWatchWaitMs ?? 1000 });
    const transport = new ClientCommandTransport({
      client: publisher, clock, logger,
      ackTimeoutMs: options.ackTimeoutMs ?? 10_000,
      offlineRetryMs: options.offlineRetryMs ?? 5000,
    });
    logger.info('mqtt: connected to the external broker', { connections, group });

    return {
      stats,
      commands: transport,
      publishStates(rows) {
        if (!publisher.connected) return;
        for (const row of rows) {
          const payload = Buffer.from(JSON.stringify({ value: row.value, at: new Date(row.ts).toISOString() }));
          publisher.publish(feedTopic(row.deviceId, row.asset), payload, { qos: 0 });
        }
      },
      followsFeeds: () => true,
      async close() {
        if (uplinks.closing) return;
        uplinks.closing = true;
        unsubscribeChanges();
        transport.close();
        await drainAndDisconnect(clients, filters, clock, uplinks);
      },
    };
  } catch (error) {
    uplinks.closing = true;
    unsubscribeChanges();
    await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
    throw error;
  }
}

/**
 * Stops the flow first (the broker then gives this group's messages to other instances), with a
 * deadline in case the broker is gone; lets the uplinks in hand settle, then disconnects. `clients`:
 * the publisher, then the subscribers.
 */
async function drainAndDisconnect(clients: MqttClient[], filters: string[], clock: Clock, uplinks: ExternalUplinks): Promise<void> {
  const subscribers = clients.slice(1);
  let deadline: { cancel(): void } | undefined;
  await Promise.race([
    Promise.allSettled(subscribers.map((c) => c.unsubscribeAsync(filters))),
    new Promise((resolve) => { deadline = clock.setTimeout(() => resolve(undefined), 2000); }),
  ]);
  deadline?.cancel();
  await uplinks.settled();
  // The PUBACKs DurableAcks releases as the last uplinks settle go out before DISCONNECT.
  await new Promise((resolve) => setImmediate(resolve));
  await Promise.all(clients.map((c) => c.endAsync().catch(() => undefined)));
}
