/**
 * Where each device's MQTT session is, as its command owner last heard it (docs/scaling.md): the
 * edge that said it holds a session of the device listening on a command topic, and when. Heard in
 * the device's order (presence records share the device's partition of topic `commands`), so the
 * newest word wins. An edge that answers `offline` for the device, or does not answer at all, is
 * forgotten: the next delivery asks every edge.
 *
 * Bounded: beyond `maxDevices`, the device heard of longest ago is forgotten (its next delivery asks
 * every edge, which is slower, never wrong).
 */
export interface DeviceConnectivity {
  /** The edge holding the session. */
  edge: string;
  /** Epoch ms the edge said so. */
  since: number;
}

export class Connectivity {
  readonly #devices = new Map<string, DeviceConnectivity>();
  readonly #maxDevices: number;

  constructor(options: { maxDevices?: number } = {}) {
    this.#maxDevices = options.maxDevices ?? 1_000_000;
  }

  get size(): number {
    return this.#devices.size;
  }

  of(deviceId: string): Readonly<DeviceConnectivity> | undefined {
    return this.#devices.get(deviceId);
  }

  /** `edge` holds a session of the device since `at`. */
  reached(deviceId: string, edge: string, at: number): void {
    // Re-inserted: the map's order is the order heard, oldest first.
    this.#devices.delete(deviceId);
    this.#devices.set(deviceId, { edge, since: at });
    if (this.#devices.size > this.#maxDevices) this.#devices.delete(this.#devices.keys().next().value!);
  }

  /** `edge` no longer holds the device's session (it said offline, or did not answer). */
  lost(deviceId: string, edge: string): void {
    if (this.#devices.get(deviceId)?.edge === edge) this.#devices.delete(deviceId);
  }
}
