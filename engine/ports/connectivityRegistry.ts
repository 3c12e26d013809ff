/**
 * Connectivity port, a part of the registry (engine/ports/registry.ts): when each device last sent
 * an uplink, which MQTT sessions are open on which edge, and which devices have been silent.
 * SQL in adapters/sql-registry/connectivity.ts; contract in test/contracts/connectivity.contract.ts.
 *
 * - Last seen: the engines raise a device's `lastSeenAt` to the receive time of the uplinks they
 *   processed (engine/connectivity/ActivityRecorder.ts, one call per flush); it never goes back.
 * - Sessions: each MQTT edge holds a lease (`renewEdge`) and records the sessions it opened and
 *   closed (engine/connectivity/EdgePresence.ts). A device is connected when a session of it is
 *   recorded on an edge whose lease is alive: the sessions of an edge that crashed stop counting
 *   once its lease lapses, with nobody deleting them.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it),
 * UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED after close().
 * Devices deleted meanwhile are ignored, never an error.
 */
import type { Device } from '../../schemas/registry.ts';

/** A device's uplink received at `at` (epoch ms). */
export interface DeviceActivity {
  deviceId: string;
  at: number;
}

/** A session opened on an edge at `since` (epoch ms). */
export interface OpenedSession {
  deviceId: string;
  since: number;
}

export interface DeviceConnectivity {
  /** Receive time of the device's last uplink processed by an engine, epoch ms; absent: never. */
  lastSeenAt?: number;
  /** An MQTT session of the device is open on an edge whose lease is alive at the time asked. */
  connected: boolean;
}

/** A device silent since `silentSince` (its last uplink, or its creation when never seen). */
export interface SilentDevice extends Device {
  lastSeenAt?: number;
  silentSince: number;
}

export interface SilentDeviceQuery {
  /** Devices silent since at most this time, epoch ms. */
  silentSince: number;
  limit?: number;
  /** Only devices after this one in the order (silentSince, then id). */
  after?: { silentSince: number; id: string };
}

export interface ConnectivityRegistry {
  /** Raises each device's last seen time to `at` (never lowers it), in one statement. */
  recordActivity(seen: readonly DeviceActivity[]): Promise<void>;
  /**
   * Holds the lease of edge `edgeId` until `aliveUntil` (epoch ms). False when the edge had no
   * lease any more (never had one, or it was dropped): its sessions are gone and must be recorded
   * again. Leases lapsed for long (an hour) are dropped, with their sessions, by the way.
   */
  renewEdge(edgeId: string, aliveUntil: number): Promise<boolean>;
  /** Sessions of `edgeId` opened and closed (device ids) since the last call, one statement each way. */
  recordSessions(edgeId: string, opened: readonly OpenedSession[], closed: readonly string[]): Promise<void>;
  /** The edge stopped: its lease and its sessions are gone. */
  dropEdge(edgeId: string): Promise<void>;
  /** Undefined when the device does not exist; `connected` as of `now` (epoch ms). */
  connectivity(deviceId: string, now: number): Promise<DeviceConnectivity | undefined>;
  /**
   * Devices of a ground silent since at most `query.silentSince` (their last uplink, or their
   * creation when never seen), longest silent first (silentSince, then id); a page when asked.
   */
  listSilentDevices(groundId: string, query: SilentDeviceQuery): Promise<SilentDevice[]>;
}
