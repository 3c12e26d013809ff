/**
 * Options of createMqttEdge (the Aedes broker inside the process), with units and defaults.
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import type { Logger } from '../../engine/kernel/logger.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { RegistryChanges } from '../../engine/ports/registryChanges.ts';
import type { UplinkAdmissionPort } from '../../engine/ports/uplinkAdmission.ts';

export interface MqttEdgeOptions {
  registry: Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'isMember'>;
  /** The engine's admission step (engine/uplink/UplinkAdmission.ts): decides, records refusals (the device's rejections), appends durably. */
  admission: UplinkAdmissionPort;
  clock: Clock;
  /** TCP port; default 1883; 0 picks a free one (see the returned `port`). */
  port?: number;
  /** Listen address; default '0.0.0.0'. */
  host?: string;
  /** PEM certificate and key: the listener speaks MQTT over TLS (port default then 8883). */
  tls?: { cert: string | Uint8Array; key: string | Uint8Array };
  /** Largest uplink payload, bytes. Default 65 536 (the HTTP edge's body limit). */
  maxPayloadBytes?: number;
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
  logger?: Logger;
}
