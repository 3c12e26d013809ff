/**
 * Options of createMqttEdge (the embedded MQTT 5.0 / 3.1.1 device gateway), with units and defaults.
 * The limits are what an unauthenticated peer can cost the process: see docs/mqtt.md.
 */
import type { Clock } from '../../../engine/kernel/clock.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';
import type { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import type { Registry } from '../../../engine/ports/registry.ts';
import type { RegistryChanges } from '../../../engine/ports/registryChanges.ts';
import type { UplinkAdmissionPort } from '../../../engine/ports/uplinkAdmission.ts';
import type { SessionPresence } from '../../../engine/connectivity/EdgePresence.ts';

export interface MqttEdgeOptions {
  registry: Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'memberRole'>;
  /** The engine's admission step (engine/uplink/UplinkAdmission.ts): decides, records refusals (the device's rejections), appends durably. */
  admission: UplinkAdmissionPort;
  clock: Clock;
  /** TCP port; default 1883; 0 picks a free one (see the returned `port`). */
  port?: number;
  /** Listen address; default '0.0.0.0'. */
  host?: string;
  /**
   * Resolves once what is stored from now on reaches publishStates/publishAlarms (the edge's live
   * hub taking the topic up again: LiveHub.readingFromNow); the SUBACK of a feed or alarm topic
   * waits for it. Absent: at once.
   */
  readingLive?: () => Promise<void>;
  /** No listener: another process accepts connections on `port` and hands them over (MqttEdge.accept). */
  handedOver?: boolean;
  /** PEM certificate and key: the listener speaks MQTT over TLS (port default then 8883). */
  tls?: { cert: string | Uint8Array; key: string | Uint8Array };
  /** Largest uplink payload, bytes. Default 65 536 (the HTTP edge's body limit). */
  maxPayloadBytes?: number;
  /** Largest MQTT packet once authenticated, bytes, fixed header included; refused from the fixed header on. Default 262 144. */
  maxPacketBytes?: number;
  /** Largest packet before CONNECT is authenticated (the CONNECT itself), bytes. Default 4096. */
  preAuthMaxPacketBytes?: number;
  /** Time a new connection has to send an authenticated CONNECT, ms. Default 10 000. */
  connectTimeoutMs?: number;
  /** Open connections at most; a new one beyond is closed at once. Default 100 000. */
  maxConnections?: number;
  /** Connections without an authenticated CONNECT at most; beyond, the oldest of them is closed. Default 1024. */
  maxUnauthenticated?: number;
  /** QoS 1 uplinks of one connection awaiting their PUBACK (MQTT 5 Receive Maximum); reading pauses at the bound. Default 32. */
  receiveMaximum?: number;
  /** Uplinks of all connections handed to admission and not yet answered; at the bound connections stop reading until there is room. Default 2048 (below UplinkIngest's maxPending, 4096). */
  maxAdmissionsInFlight?: number;
  /** Bytes queued for one connection's socket before its QoS 0 feed messages are dropped (counted) and reading pauses. Default 262 144. */
  maxOutboundBytes?: number;
  /** MQTT 5 Topic Alias Maximum offered to clients. Default 16. */
  topicAliasMaximum?: number;
  /** Longest session kept after a disconnect, s (MQTT 5 Session Expiry Interval is capped to it; MQTT 3.1.1 persistent sessions get it). Default 86 400. */
  maxSessionExpirySeconds?: number;
  /** Sessions kept at most (connected or not); beyond, the one disconnected longest ends. Default 100 000. */
  maxSessions?: number;
  /** Refused publishes/subscriptions one connection may make; the next one disconnects it. Default 10. */
  maxRefusals?: number;
  /** How long a token's principal and a device with its assets are reused, ms. Default 2000. */
  cacheTtlMs?: number;
  /** How long a QoS 1 command waits for the device's PUBACK before it counts as unacknowledged, ms. Default 10 000. */
  ackTimeoutMs?: number;
  /**
   * The process's registry changes (engine/ports/registryChanges.ts): cached lookups drop what a
   * change touches; connections of a revoked token (token-revoked carries hashToken(token)), of a
   * deleted device, or of a user who left the ground are closed; resync re-checks every connection.
   */
  changes?: Pick<RegistryChanges, 'subscribe'>;
  /**
   * The process's registry lookups, shared with its other edges and kept current by their owner,
   * who hands every change to the edge's apply() instead of `changes`. Absent: the edge's own.
   */
  lookups?: RegistryLookups;
  /** Told when a device's connection authenticates and when it closes (GET /device/{id} `connected`, engine/connectivity/EdgePresence.ts). */
  presence?: SessionPresence;
  logger?: Logger;
}

/** Every limit resolved to its value. */
export type MqttEdgeLimits = Required<Pick<MqttEdgeOptions,
  | 'maxPayloadBytes' | 'maxPacketBytes' | 'preAuthMaxPacketBytes' | 'connectTimeoutMs' | 'maxConnections' | 'maxUnauthenticated'
  | 'receiveMaximum' | 'maxAdmissionsInFlight' | 'maxOutboundBytes' | 'topicAliasMaximum' | 'maxSessionExpirySeconds' | 'maxSessions' | 'maxRefusals' | 'ackTimeoutMs'>>;

export function edgeLimits(o: MqttEdgeOptions): MqttEdgeLimits {
  return {
    maxPayloadBytes: o.maxPayloadBytes ?? 64 * 1024,
    maxPacketBytes: o.maxPacketBytes ?? 256 * 1024,
    preAuthMaxPacketBytes: o.preAuthMaxPacketBytes ?? 4096,
    connectTimeoutMs: o.connectTimeoutMs ?? 10_000,
    maxConnections: o.maxConnections ?? 100_000,
    maxUnauthenticated: o.maxUnauthenticated ?? 1024,
    receiveMaximum: Math.min(65_535, Math.max(1, o.receiveMaximum ?? 32)),
    maxAdmissionsInFlight: o.maxAdmissionsInFlight ?? 2048,
    maxOutboundBytes: o.maxOutboundBytes ?? 256 * 1024,
    topicAliasMaximum: Math.min(65_535, o.topicAliasMaximum ?? 16),
    maxSessionExpirySeconds: o.maxSessionExpirySeconds ?? 86_400,
    maxSessions: o.maxSessions ?? 100_000,
    maxRefusals: o.maxRefusals ?? 10,
    ackTimeoutMs: o.ackTimeoutMs ?? 10_000,
  };
}
