/**
 * The MQTT sessions open on one edge, as the registry sees them (engine/ports/connectivityRegistry.ts):
 * the edge holds a lease (`leaseMs`, renewed every `leaseMs / 3`) and records the sessions it opens
 * and closes, coalesced (a device's latest change per interval, default 200 ms, one statement each
 * way). A device counts as connected while one of its sessions is recorded on an edge whose lease
 * is alive: a clean stop drops the edge's lease and sessions; after a crash (kill -9) they stop
 * counting once the lease lapses. A renewal that finds the lease gone (dropped while the edge was
 * cut off from the registry) records every session open on the edge again.
 *
 * Memory: one entry per device connected to this edge, and the changes of one interval. No timer
 * per device: one lease timer and the writer's.
 */
import { CoalescingWriter } from '../kernel/CoalescingWriter.ts';
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import type { ConnectivityRegistry, OpenedSession } from '../ports/connectivityRegistry.ts';

export interface EdgePresenceOptions {
  registry: Pick<ConnectivityRegistry, 'renewEdge' | 'recordSessions' | 'dropEdge'>;
  clock: Clock;
  /** This edge's id in the registry (a registry id), its own per process or edge worker. */
  edgeId: string;
  /** How long the edge's sessions count without a renewal, ms. Default 30 000. */
  leaseMs?: number;
  /** Longest a session's opening or closing waits before it is written, ms. Default 200. */
  flushIntervalMs?: number;
  onError?(error: FleetError, what: 'lease' | 'sessions'): void;
}

/** What the MQTT edge tells of its device sessions (adapters/mqtt/gateway EdgeConnections). */
export interface SessionPresence {
  /** A connection of `deviceId` authenticated. */
  opened(deviceId: string): void;
  /** An authenticated connection of `deviceId` closed. */
  closed(deviceId: string): void;
}

type Change = { open: true; since: number } | { open: false };

export class EdgePresence implements SessionPresence {
  readonly edgeId: string;
  readonly #o: EdgePresenceOptions;
  readonly #leaseMs: number;
  /** Connections per device open on this edge, and since when the first. */
  readonly #open = new Map<string, { connections: number; since: number }>();
  readonly #writer: CoalescingWriter<string, Change>;
  #timer: TimerHandle | undefined;
  #renewing: Promise<void> | undefined;
  #stopped = false;

  constructor(options: EdgePresenceOptions) {
    this.#o = options;
    this.edgeId = options.edgeId;
    this.#leaseMs = options.leaseMs ?? 30_000;
    this.#writer = new CoalescingWriter<string, Change>({
      clock: options.clock,
      intervalMs: options.flushIntervalMs ?? 200,
      merge: (_older, newer) => newer,
      write: (changes) => {
        const opened: OpenedSession[] = [];
        const closed: string[] = [];
        for (const [deviceId, change] of changes) {
          if (change.open) opened.push({ deviceId, since: change.since });
          else closed.push(deviceId);
        }
        return options.registry.recordSessions(options.edgeId, opened, closed);
      },
      onError: (error) => options.onError?.(error, 'sessions'),
    });
  }

  /** Devices with a session open on this edge. */
  get connected(): number {
    return this.#open.size;
  }

  /** Takes the lease (a registry outage is logged and the lease retried on its schedule). */
  async start(): Promise<void> {
    await this.#renewal();
  }

  opened(deviceId: string): void {
    if (this.#stopped) return;
    const held = this.#open.get(deviceId);
    if (held !== undefined) {
      held.connections++;
      return;
    }
    const since = this.#o.clock.now();
    this.#open.set(deviceId, { connections: 1, since });
    this.#writer.set(deviceId, { open: true, since });
  }

  closed(deviceId: string): void {
    if (this.#stopped) return;
    const held = this.#open.get(deviceId);
    if (held === undefined) return;
    if (--held.connections > 0) return;
    this.#open.delete(deviceId);
    this.#writer.set(deviceId, { open: false });
  }

  /** Writes what waits now. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /** The edge stops: its lease and sessions are dropped from the registry. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#timer?.cancel();
    // Nothing written after the drop: what is in flight lands first.
    await this.#renewing;
    await this.#writer.stop();
    this.#open.clear();
    try {
      await this.#o.registry.dropEdge(this.edgeId);
    } catch (error) {
      // The lease lapses by itself.
      this.#o.onError?.(toFleetError(error), 'lease');
    }
  }

  #renewal(): Promise<void> {
    this.#renewing = this.#renew().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  async #renew(): Promise<void> {
    try {
      const held = await this.#o.registry.renewEdge(this.edgeId, this.#o.clock.now() + this.#leaseMs);
      // A new lease, or one dropped while this edge was away: its sessions are recorded again.
      if (!held && !this.#stopped) for (const [deviceId, { since }] of this.#open) this.#writer.set(deviceId, { open: true, since });
    } catch (error) {
      this.#o.onError?.(toFleetError(error), 'lease');
    }
    if (!this.#stopped) this.#timer = this.#o.clock.setTimeout(() => void this.#renewal(), Math.max(1, Math.floor(this.#leaseMs / 3)));
  }
}
