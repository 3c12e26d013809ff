/**
 * What every connection of the embedded edge shares: limits, lookups, admission, sessions, figures.
 */
import type { Clock } from '../../../engine/kernel/clock.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';
import type { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import type { UplinkAdmissionPort } from '../../../engine/ports/uplinkAdmission.ts';
import type { MqttEdgeLimits } from './MqttEdgeOptions.ts';
import type { Sessions } from './Sessions.ts';
import type { AdmissionGate } from './AdmissionGate.ts';

export interface MqttEdgeStats {
  accepted: number;
  refused: number;
  disconnected: number;
  /** Connections refused at CONNECT (unknown or partner token, client id of another principal, registry unavailable, an MQTT 5 CONNECT asking for what the edge does not offer). */
  connectionsRefused?: number;
  /** Connections closed for a packet above the limit (declared in its fixed header). */
  oversized?: number;
  /** Connections closed for a protocol violation (malformed packet, wrong protocol name, second CONNECT…). */
  protocolErrors?: number;
  /** QoS 0 feed messages not sent because the connection's outbound queue was full. */
  feedDropped?: number;
  /** Clients connected now (read when asked). */
  readonly connected?: number;
  /** Connections without an authenticated CONNECT now (read when asked). */
  readonly unauthenticated?: number;
}

/**
 * `Connection`: the edge's connection (EdgeConnection.ts), which holds this context; the edge
 * tells connections apart by identity only.
 */
export interface EdgeContext<Connection> {
  readonly limits: MqttEdgeContextLimits;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly access: RegistryLookups;
  readonly admission: UplinkAdmissionPort;
  readonly sessions: Sessions;
  readonly gate: AdmissionGate;
  readonly stats: Required<Omit<MqttEdgeStats, 'connected' | 'unauthenticated'>>;
  /** Cached device lookups are reused this long, ms. */
  readonly cacheTtlMs: number;
  /** The connection authenticated (it leaves the unauthenticated count). */
  authenticated(connection: Connection): void;
  /** The connection closed. */
  closed(connection: Connection): void;
  /** A connection of `deviceId` now holds a command subscription (command actors resend what waits). */
  reachable(deviceId: string): void;
  /** Resolves once stored states and alarm changes from now on reach the feeds (LiveHub.readingFromNow); awaited before a feed's SUBACK. */
  readingLive(): Promise<void>;
}

export type MqttEdgeContextLimits = MqttEdgeLimits;
