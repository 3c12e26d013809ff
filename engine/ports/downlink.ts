/**
 * LPWAN downlink port (spec §4.4): device commands — a map of asset name → value — handed to the
 * network server of the device's network (CBOR or the binary `actuate` encoding is the adapter's
 * business). Until an adapter is configured, device commands fail with NO_DOWNLINK.
 */
export interface DeviceCommandDownlink {
  commandId: string;
  deviceId: string;
  /** Asset name → value, each already checked against its profile. */
  assets: Record<string, unknown>;
  /** ISO 8601. */
  at: string;
}

export interface Downlink {
  /** Resolves once the network server accepted the downlink; rejects with a FleetError (retriable ones are retried). */
  send(command: DeviceCommandDownlink): Promise<void>;
}
