/**
 * How command actors reach devices over MQTT (spec §4.3): the embedded gateway and the
 * external-broker client implement it (adapters/mqtt).
 */
export interface AssetCommandDelivery {
  commandId: string;
  deviceId: string;
  asset: { id: string; name: string };
  /** JSON `{value, at}` (spec §2.3). */
  payload: Uint8Array;
}

/**
 * delivered: a subscriber of the device took it (QoS 1: PUBACK received; QoS 0: written; external
 * broker: the broker acknowledged it). offline: no connection of the device listens on a command
 * topic of that asset, nothing was sent. unacknowledged: sent, no acknowledgement in time (the actor
 * resends: at-least-once).
 */
export type DeliveryOutcome = 'delivered' | 'offline' | 'unacknowledged';

export interface CommandTransport {
  deliver(delivery: AssetCommandDelivery): Promise<DeliveryOutcome>;
  /** Registers a listener told when a device may have become reachable; returns the unsubscriber. */
  onReachable(listener: (deviceId: string) => void): () => void;
  /** The devices with a session here listening on a command topic, when the transport knows them (the embedded MQTT edge). */
  listening?(): Iterable<string>;
}
