/**
 * The embedded MQTT edge (DESIGN.md §2, spec §4.1–4.3): a dedicated device gateway speaking MQTT
 * 5.0 and 3.1.1 (3.1 too) on the mqtt-packet codec, with its own framing in front so that limits
 * hold before trust (FrameReader.ts). It admits only what a device or user may do: devices
 * publish states to their own topics and subscribe to their own commands and feeds; users follow
 * feeds of their grounds. Devices connect with username = device token (the password is not
 * checked, as AllThingsTalk's SDKs send the token twice). Topic and ACL decisions are
 * engine/access/mqttTopics.ts; uplinks go through the one admission step (engine/uplink).
 *
 * Limits (MqttEdgeOptions.ts): connections and unauthenticated connections capped (beyond the
 * latter the oldest waiting one is closed), a CONNECT deadline, a smaller packet limit until
 * CONNECT is authenticated, keepalive enforced at 1.5× ([MQTT-3.1.2-24]). Registry changes close
 * the connections of a revoked token, a deleted device or a user who left a ground.
 */
import { createServer, type Server, type Socket } from 'node:net';
import mqttPacket from 'mqtt-packet';
import { createServer as createTlsServer } from 'node:tls';
import type { StateRow } from '../../../schemas/messages.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { alarmTopic, feedTopic } from '../../../engine/access/mqttTopics.ts';
import type { LiveAlarm } from '../../../schemas/live.ts';
import type { CommandTransport } from '../../../engine/ports/commandTransport.ts';
import type { RegistryChange } from '../../../engine/ports/registryChanges.ts';
import { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import { edgeLimits, type MqttEdgeOptions } from './MqttEdgeOptions.ts';
import { EdgeConnection } from './EdgeConnection.ts';
import { EdgeConnections } from './EdgeConnections.ts';
import { applyRegistryChange } from './applyRegistryChange.ts';
import { EdgeCommandTransport } from './EdgeCommandTransport.ts';
import type { EdgeContext, MqttEdgeStats } from './EdgeContext.ts';
import { Reason } from './reasonCodes.ts';
import { Sessions } from './Sessions.ts';
import { AdmissionGate } from './AdmissionGate.ts';

export type { MqttEdgeOptions } from './MqttEdgeOptions.ts';
export type { MqttEdgeStats } from './EdgeContext.ts';

export interface MqttEdge {
  /** The port listened on. */
  readonly port: number;
  readonly stats: MqttEdgeStats;
  /** Command delivery to connected devices (engine/commands). */
  readonly commands: CommandTransport;
  /** Publishes stored states as `{value, at}` on their feed topics (UplinkPipeline onStored). */
  publishStates(rows: readonly StateRow[]): void;
  /** Whether a client follows a feed now: until one does, publishStates has nobody to send to. */
  followsFeeds(): boolean;
  /** Publishes alarm changes (live `alarm` events) on their assets' alarm topics. */
  publishAlarms(alarms: readonly LiveAlarm[]): void;
  /** Whether a client follows an alarm topic now. */
  followsAlarms(): boolean;
  /**
   * A registry change: connections of a revoked token, a deleted device or a user who left the
   * ground close (subscribed to `changes` when given; otherwise the owner of `lookups` calls it).
   */
  apply(change: RegistryChange): void;
  /**
   * Takes a connection another process accepted (an embedded primary's MQTT port, app/mqttHandoff.ts),
   * with the bytes it already read from it.
   */
  accept(socket: Socket, head: Buffer): void;
  close(): Promise<void>;
}

/**
 * Readable and writable high-water mark of every client socket, bytes. A paused socket (backpressure,
 * or a connection being closed) stops reading once it holds this much, so it keeps at most one read
 * (64 KB) of a peer that goes on sending; Node's default (64 KB) let a refused flood hold two.
 * Writes are bounded by `maxOutboundBytes`, not by this.
 */
const SOCKET_HIGH_WATER_MARK = 16 * 1024;

export async function createMqttEdge(options: MqttEdgeOptions): Promise<MqttEdge> {
  // mqtt-packet otherwise builds, at the first packet it encodes (the first CONNACK), a cache of
  // every 16-bit number as a 2-byte Buffer: 65,536 objects, ~7.5 MB of heap kept for the life of
  // the process (and marked by every full GC), for no speed: a command PUBLISH encodes in ~1.5 µs
  // with it, ~1.3 µs without. Off, numbers are encoded as they are written.
  mqttPacket.writeToStream.cacheNumbers = false;
  const logger = options.logger ?? silentLogger;
  const limits = edgeLimits(options);
  const { clock } = options;
  const cacheTtlMs = options.cacheTtlMs ?? 2000;
  const access = options.lookups ?? new RegistryLookups({ registry: options.registry, clock, cacheTtlMs });
  const sessions = new Sessions({ clock, maxSessions: limits.maxSessions });
  const transport = new EdgeCommandTransport({ sessions, clock, ackTimeoutMs: limits.ackTimeoutMs });
  const connections = new EdgeConnections(limits, clock, options.presence);

  const ctx: EdgeContext<EdgeConnection> = {
    limits, clock, logger, access, admission: options.admission, sessions, stats: connections.counters, cacheTtlMs,
    gate: new AdmissionGate(limits.maxAdmissionsInFlight),
    authenticated: (conn) => connections.authenticated(conn),
    closed: (conn) => connections.closed(conn),
    reachable: (deviceId) => transport.reachable(deviceId),
    readingLive: options.readingLive ?? (() => Promise.resolve()),
  };
  const onSocket = (socket: Socket) => connections.accept(socket, ctx);

  const onChange = (change: RegistryChange) => {
    if (options.lookups === undefined) access.apply(change);
    applyRegistryChange(change, { connections: connections.all, access, sessions, logger });
  };
  const unsubscribeChanges = options.changes?.subscribe(onChange);

  const port = options.port ?? (options.tls === undefined ? 1883 : 8883);
  // Connections handed over by another process: no listener of its own.
  const server: Server | undefined = options.handedOver === true ? undefined : options.tls === undefined
    ? createServer({ highWaterMark: SOCKET_HIGH_WATER_MARK }, onSocket)
    : createTlsServer({ highWaterMark: SOCKET_HIGH_WATER_MARK, cert: options.tls.cert as never, key: options.tls.key as never, handshakeTimeout: limits.connectTimeoutMs }, onSocket);
  if (server !== undefined) {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, options.host ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
  }
  const address = server?.address();
  const boundPort = typeof address === 'object' && address !== null && address !== undefined ? address.port : port;

  return {
    port: boundPort,
    stats: connections.stats,
    commands: transport,
    publishStates(rows) {
      for (const row of rows) publishState(sessions, row);
    },
    followsFeeds: () => sessions.followsFeeds,
    publishAlarms(alarms) {
      for (const alarm of alarms) publishAlarm(sessions, alarm);
    },
    followsAlarms: () => sessions.followsAlarms,
    apply: onChange,
    accept(socket, head) {
      // Read again by the connection, first of all.
      if (head.length > 0) socket.unshift(head);
      onSocket(socket);
    },
    async close() {
      connections.stop();
      unsubscribeChanges?.();
      transport.close();
      const closed = new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
      for (const conn of [...connections.all]) conn.disconnect(Reason.SERVER_SHUTTING_DOWN, 'server shutting down');
      sessions.close();
      await closed;
    },
  };
}

/**
 * Calls `send` once per connection and topic shape (the device's topic, or the asset's by its id)
 * following `channel` of `asset` of `deviceId`, however many of its filters match; `assetId` is
 * set for the asset's topic, `qos` is the subscription's.
 */
function forEachFollower(sessions: Sessions, channel: 'feed' | 'alarm', deviceId: string, asset: string, send: (holder: EdgeConnection, assetId: string | undefined, qos: 0 | 1) => void): void {
  const subscribers = sessions.subscribersOf(deviceId);
  if (subscribers === undefined) return;
  const sent = new Set<string>();
  for (const { session, entry } of subscribers) {
    if (entry.channel !== channel || !(session.holder instanceof EdgeConnection)) continue;
    if (entry.assetId !== undefined ? entry.assetName !== asset : entry.asset !== '+' && entry.asset !== asset) continue;
    const key = `${session.clientId}\u0000${entry.assetId === undefined ? 'device' : 'asset'}`;
    if (sent.has(key)) continue;
    sent.add(key);
    send(session.holder, entry.assetId, entry.qos);
  }
}

/** An alarm change (its live event's data) to every connection following its asset's alarm topic, on the topic shape it subscribed to. */
function publishAlarm(sessions: Sessions, alarm: LiveAlarm): void {
  let payload: Buffer | undefined;
  forEachFollower(sessions, 'alarm', alarm.deviceId, alarm.asset, (holder, assetId, qos) => {
    payload ??= Buffer.from(JSON.stringify(alarm));
    // QoS 1 where the subscription asked for it: an alarm change is rare and worth its PUBACK.
    holder.publish(Buffer.from(assetId === undefined ? alarmTopic(alarm.deviceId, alarm.asset) : `asset/${assetId}/alarm`), payload, qos);
  });
}

/** A stored state as `{value, at}` to every connection following its asset's feed, on the topic shape it subscribed to. */
function publishState(sessions: Sessions, row: StateRow): void {
  let payload: Buffer | undefined;
  let deviceTopic: Buffer | undefined;
  forEachFollower(sessions, 'feed', row.deviceId, row.asset, (holder, assetId) => {
    payload ??= Buffer.from(JSON.stringify({ value: row.value, at: new Date(row.ts).toISOString() }));
    holder.publish(assetId === undefined ? (deviceTopic ??= Buffer.from(feedTopic(row.deviceId, row.asset))) : Buffer.from(`asset/${assetId}/feed`), payload, 0);
  });
}
