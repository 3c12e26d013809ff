/**
 * Options of createExternalMqtt (external broker mode: Fleetstream is a client of a broker that
 * authenticates devices itself), with units and defaults.
 */
import type { Clock } from '../../../engine/kernel/clock.ts';
import { newId } from '../../../engine/kernel/ids.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';
import type { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import type { Registry } from '../../../engine/ports/registry.ts';
import type { RegistryChanges } from '../../../engine/ports/registryChanges.ts';
import type { UplinkAdmissionPort } from '../../../engine/ports/uplinkAdmission.ts';

export interface ExternalMqttOptions {
  /**
   * Broker URL (mqtt://, mqtts://, ws://, wss://). Fleetstream's own credentials go in it:
   * mqtt://fleetstream:secret@broker:1883. The broker must speak MQTT 5 (shared subscriptions,
   * PUBACK reason codes).
   */
  url: string;
  registry: Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'memberRole'>;
  /** The engine's admission step (engine/uplink/UplinkAdmission.ts): decides, records refusals (the device's rejections), appends durably. */
  admission: UplinkAdmissionPort;
  clock: Clock;
  /** Shared subscription group: instances in one group split the uplinks. Default 'fleetstream'. */
  shareGroup?: string;
  /**
   * Subscriber connections of this instance. The broker splits the shared subscription between
   * them and queues for each apart (Mosquitto: up to max_queued_messages, default 1000, per
   * connection, beyond which it drops), so more connections also mean more room at the broker
   * while the log catches up. Default 32.
   */
  connections?: number;
  /**
   * QoS 1 uplinks of one connection being made durable at once (their PUBACKs wait), sent to the
   * broker as MQTT 5 Receive Maximum so that it sends no more unacknowledged. Together with
   * `connections` it bounds the uplinks this instance holds: 32 × 128 = 4096, the ingest's
   * default maxPending. Default 128.
   */
  receiveMaximum?: number;
  /**
   * Client ids are `<prefix>-sub<n>` and `<prefix>-pub`. Default `fleetstream-<random>`. Give each
   * instance a stable one of its own when sessions persist (sessionExpirySeconds > 0).
   */
  clientIdPrefix?: string;
  /**
   * 0 (default): clean sessions; uplinks in flight to an instance that dies are lost (Mosquitto drops
   * them with the session). > 0: the broker keeps this instance's session that long while it is away
   * — its unacknowledged and newly assigned uplinks wait there and are delivered when it comes back
   * with the same clientIdPrefix. Seconds.
   */
  sessionExpirySeconds?: number;
  /** Largest uplink payload, bytes; larger ones are refused PAYLOAD_TOO_LARGE. Default 65 536. */
  maxPayloadBytes?: number;
  /** How long a device with its assets is reused, ms. Default 2000. */
  cacheTtlMs?: number;
  /** The process's registry lookups, shared with its other edges and kept current by their owner (then `changes` is left out). Absent: its own. */
  lookups?: RegistryLookups;
  /** QoS 0 uplinks being appended at once before a connection waits for them. Default 1024. */
  maxQos0InFlight?: number;
  /** How long a command publish waits for the broker's PUBACK, ms. Default 10 000. */
  ackTimeoutMs?: number;
  /** How often commands of devices nobody subscribes for are tried again, ms. Default 5000. */
  offlineRetryMs?: number;
  /** Connecting at start fails after this long, ms. Default 10 000. */
  connectTimeoutMs?: number;
  /** Wait between reconnection attempts after the broker went away, ms. Default 1000. */
  reconnectPeriodMs?: number;
  /** First wait before an uplink whose append failed retriably is tried again, ms; doubles up to 5000. Default 100. */
  retryBaseMs?: number;
  /**
   * The process's registry changes: a deleted device's next uplink is refused at once
   * (UNKNOWN_DEVICE), a changed device's next one checked against its new assets. Revoked tokens
   * are the broker's to refuse (it authenticates devices in this mode; docs/mqtt.md).
   */
  changes?: Pick<RegistryChanges, 'subscribe'>;
  /** How long start waits for the broker to name itself ($SYS/broker/version), ms. Default 1000. */
  brokerWatchWaitMs?: number;
  logger?: Logger;
}

/** The options with their defaults, checked (a TypeError names the one that is not valid). */
export interface ExternalMqttSettings {
  group: string;
  connections: number;
  receiveMaximum: number;
  clientIdPrefix: string;
  sessionExpirySeconds: number;
  maxPayloadBytes: number;
  maxQos0InFlight: number;
  retryBaseMs: number;
}

const SHARE_GROUP = /^[A-Za-z0-9_-]{1,64}$/;

export function externalSettings(o: ExternalMqttOptions): ExternalMqttSettings {
  const group = o.shareGroup ?? 'fleetstream';
  if (!SHARE_GROUP.test(group)) throw new TypeError(`createExternalMqtt: shareGroup must match ${SHARE_GROUP}`);
  const connections = o.connections ?? 32;
  if (!Number.isInteger(connections) || connections < 1) throw new TypeError('createExternalMqtt: connections must be a positive integer');
  const receiveMaximum = o.receiveMaximum ?? 128;
  if (!Number.isInteger(receiveMaximum) || receiveMaximum < 1 || receiveMaximum > 0xffff) throw new TypeError('createExternalMqtt: receiveMaximum must be an integer from 1 to 65535');
  const sessionExpirySeconds = o.sessionExpirySeconds ?? 0;
  if (!Number.isInteger(sessionExpirySeconds) || sessionExpirySeconds < 0 || sessionExpirySeconds > 0xffffffff) {
    throw new TypeError('createExternalMqtt: sessionExpirySeconds must be an integer from 0 to 4294967295');
  }
  return {
    group,
    connections,
    receiveMaximum,
    clientIdPrefix: o.clientIdPrefix ?? `fleetstream-${newId().slice(0, 10)}`,
    sessionExpirySeconds,
    maxPayloadBytes: o.maxPayloadBytes ?? 64 * 1024,
    maxQos0InFlight: o.maxQos0InFlight ?? 1024,
    retryBaseMs: o.retryBaseMs ?? 100,
  };
}
