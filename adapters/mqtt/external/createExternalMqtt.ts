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
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt';
import type { StateRow } from '../../../schemas/messages.ts';
import { FleetError, toFleetError } from '../../../engine/kernel/errors.ts';
import { newId } from '../../../engine/kernel/ids.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { feedTopic, parseUplinkTopic, routeTrustedUplink, shorten, type Refusal, uplinkContentType } from '../../../engine/access/mqttTopics.ts';
import type { CommandTransport } from '../../../engine/ports/commandTransport.ts';
import { ClientCommandTransport } from './ClientCommandTransport.ts';
import { DurableAcks } from './DurableAcks.ts';
import { checkConnack, watchBroker, type BrokerFigures } from './BrokerWatch.ts';
import type { ExternalMqttOptions } from './ExternalMqttOptions.ts';
import { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import type { MqttEdgeStats } from '../gateway/createMqttEdge.ts';

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

const SHARE_GROUP = /^[A-Za-z0-9_-]{1,64}$/;

export async function createExternalMqtt(options: ExternalMqttOptions): Promise<ExternalMqtt> {
  const logger = options.logger ?? silentLogger;
  const group = options.shareGroup ?? 'fleetstream';
  if (!SHARE_GROUP.test(group)) throw new TypeError(`createExternalMqtt: shareGroup must match ${SHARE_GROUP}`);
  const connections = options.connections ?? 32;
  if (!Number.isInteger(connections) || connections < 1) throw new TypeError('createExternalMqtt: connections must be a positive integer');
  const receiveMaximum = options.receiveMaximum ?? 128;
  if (!Number.isInteger(receiveMaximum) || receiveMaximum < 1 || receiveMaximum > 0xffff) throw new TypeError('createExternalMqtt: receiveMaximum must be an integer from 1 to 65535');
  const prefix = options.clientIdPrefix ?? `fleetstream-${newId().slice(0, 10)}`;
  const maxPayload = options.maxPayloadBytes ?? 64 * 1024;
  const maxQos0 = options.maxQos0InFlight ?? 1024;
  const retryBaseMs = options.retryBaseMs ?? 100;
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
  const inFlight = new Set<Promise<void>>();
  let qos0InFlight = 0;
  let closing = false;

  /** A refusal the channel decided itself, recorded as admission records its own. */
  const record = async (deviceId: string, refusal: Refusal, asset = ''): Promise<void> => {
    stats.refused++;
    logger.warn('mqtt: uplink refused', { deviceId, code: refusal.code, reason: refusal.reason });
    const submission = { channel: 'mqtt' as const, contentType: 'json' as const, deviceId, body: new Uint8Array(0) };
    await options.admission.refuse(submission, asset === '' ? { code: refusal.code, reason: refusal.reason } : { code: refusal.code, reason: refusal.reason, asset })
      .catch((error: unknown) => logger.error('mqtt: recording a refusal failed', { error: toFleetError(error) }));
  };

  /** One uplink: route, check, append. Throws only what may pass if tried again. */
  const ingest = async (packet: IPublishPacket): Promise<void> => {
    const topic = packet.topic;
    const parsed = parseUplinkTopic(topic);
    if (parsed === undefined) {
      // Not one of our filters' shapes (a broker bug or a `+` level holding a wildcard character).
      await record('', { ok: false, code: 'FORBIDDEN', reason: `topic "${shorten(topic)}" is not an uplink topic` });
      return;
    }
    const named = parsed.kind === 'assetState' ? '' : parsed.deviceId;
    let device = parsed.kind === 'assetState' ? await access.deviceOfAsset(parsed.assetId) : await access.device(parsed.deviceId);
    let decision = routeTrustedUplink(parsed, device);
    if (!decision.ok && decision.code === 'UNKNOWN_ASSET' && device !== undefined) {
      // The asset may have been created after the cached copy was read.
      device = await access.device(device.id, true);
      decision = routeTrustedUplink(parsed, device);
    }
    if (!decision.ok) {
      await record(device?.id ?? named, decision, parsed.kind === 'deviceAssetState' ? parsed.asset : '');
      return;
    }
    const target = decision.value;
    const body = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const format = uplinkContentType(target, body, maxPayload, packet.properties?.contentType);
    if (!format.ok) {
      await record(target.deviceId, format, target.asset ?? '');
      return;
    }
    const outcome = await options.admission.admit(device!, { channel: 'mqtt', contentType: format.value, deviceId: target.deviceId, asset: target.asset, body: new Uint8Array(body) });
    if (outcome.status === 'refused') {
      stats.refused++;
      logger.warn('mqtt: uplink refused', { deviceId: target.deviceId, code: outcome.rejections[0].code, reason: outcome.rejections[0].reason });
      return;
    }
    stats.accepted++;
  };

  /** Retries what failed retriably (log or registry unavailable), holding the acknowledgement back. */
  const handle = async (packet: IPublishPacket): Promise<void> => {
    let delay = retryBaseMs;
    for (;;) {
      try {
        await ingest(packet);
        return;
      } catch (error) {
        const failure = toFleetError(error, 'UNAVAILABLE');
        if (!failure.retriable || closing) {
          stats.dropped++;
          logger.error('mqtt: uplink dropped', { topic: shorten(packet.topic), code: failure.code, error: failure });
          return;
        }
        logger.warn('mqtt: uplink not accepted yet; retrying', { topic: shorten(packet.topic), code: failure.code, retryInMs: delay });
        await new Promise<void>((resolve) => clock.setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
  };

  const track = (work: Promise<void>): Promise<void> => {
    inFlight.add(work);
    return work.finally(() => inFlight.delete(work));
  };

  const sessionExpiry = options.sessionExpirySeconds ?? 0;
  if (!Number.isInteger(sessionExpiry) || sessionExpiry < 0 || sessionExpiry > 0xffffffff) throw new TypeError('createExternalMqtt: sessionExpirySeconds must be an integer from 0 to 4294967295');
  const clientOptions = (clientId: string): IClientOptions => ({
    protocolVersion: 5,
    clientId,
    // A persistent session keeps this instance's share of uplinks (in flight and queued) at the
    // broker while it is away, and gets them back when it reconnects with the same client id.
    clean: sessionExpiry === 0,
    properties: { sessionExpiryInterval: sessionExpiry, receiveMaximum },
    connectTimeout: options.connectTimeoutMs ?? 10_000,
    reconnectPeriod: options.reconnectPeriodMs ?? 1000,
    // Feeds are QoS 0: while the broker is away they are dropped, not queued without bound.
    queueQoSZero: false,
    // No cache of every 16-bit number in mqtt-packet (~7.5 MB of heap, built at the first CONNECT):
    // as in the embedded edge (gateway/createMqttEdge.ts).
    writeCache: false,
  });

  /** Connects; `onMessage` is in place before the CONNACK, as a resumed session may deliver at once. */
  const connect = (clientId: string, subscriber: boolean): Promise<MqttClient> => new Promise((resolve, reject) => {
    const client = mqtt.connect(options.url, clientOptions(clientId));
    if (subscriber) {
      const acks = DurableAcks.attach(client, receiveMaximum);
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
        checkConnack(connack, logger, maxPayload);
      } catch (error) {
        client.removeAllListeners();
        client.on('error', () => undefined);
        client.end(true);
        reject(error);
        return;
      }
      client.on('error', (error) => logger.warn('mqtt: broker connection error', { clientId, error: toFleetError(error) }));
      client.on('offline', () => {
        stats.disconnected++;
        logger.warn('mqtt: broker connection lost; reconnecting', { clientId });
      });
      resolve(client);
    });
  });

  const onMessage = (acks: DurableAcks, packet: IPublishPacket, callback: () => void): void => {
    if (closing && packet.qos === 0) return callback();
    const work = track(handle(packet));
    if (packet.qos !== 0) return acks.hold(packet, work, callback);
    if (qos0InFlight < maxQos0) {
      // Nothing to acknowledge: take the next message while this one is appended.
      qos0InFlight++;
      work.finally(() => qos0InFlight--);
      callback();
      return;
    }
    work.then(() => callback(), () => callback());
  };

  const clients: MqttClient[] = [];
  try {
    const publisher = await connect(`${prefix}-pub`, false);
    clients.push(publisher);
    for (let i = 0; i < connections; i++) {
      const client = await connect(`${prefix}-sub${i}`, true);
      clients.push(client);
      const filters = UPLINK_FILTERS.map((f) => `$share/${group}/${f}`);
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
        if (closing) return;
        closing = true;
        unsubscribeChanges();
        transport.close();
        const subscribers = clients.slice(1);
        // Stop the flow first (the broker then gives this group's messages to other instances),
        // with a deadline in case the broker is gone.
        let deadline: { cancel(): void } | undefined;
        await Promise.race([
          Promise.allSettled(subscribers.map((c) => c.unsubscribeAsync(UPLINK_FILTERS.map((f) => `$share/${group}/${f}`)))),
          new Promise((resolve) => { deadline = clock.setTimeout(() => resolve(undefined), 2000); }),
        ]);
        deadline?.cancel();
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        // The PUBACKs DurableAcks releases as the last uplinks settle go out before DISCONNECT.
        await new Promise((resolve) => setImmediate(resolve));
        await Promise.all(clients.map((c) => c.endAsync().catch(() => undefined)));
      },
    };
  } catch (error) {
    closing = true;
    unsubscribeChanges();
    await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
    throw error;
  }
}
