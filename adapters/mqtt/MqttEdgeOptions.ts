/**
 * Options of createMqttEdge (the Aedes broker inside the process), with units and defaults.
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import type { Logger } from '../../engine/kernel/logger.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { RejectionStore } from '../../engine/ports/rejections.ts';
import type { UplinkReceipt, UplinkSubmission } from '../../engine/uplink/UplinkIngest.ts';

export interface MqttEdgeOptions {
  registry: Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'isMember'>;
  /** engine/UplinkIngest: resolves once the uplink is durable in topic `uplinks`. */
  ingest: { append(submission: UplinkSubmission): Promise<UplinkReceipt | void> };
  clock: Clock;
  /** Refused publishes and subscriptions are recorded here (a device's `GET /device/{id}/rejections`). */
  rejections?: Pick<RejectionStore, 'append'>;
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
  logger?: Logger;
}
