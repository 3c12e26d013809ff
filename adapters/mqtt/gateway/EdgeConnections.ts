/**
 * The connections of the embedded edge and their figures: a socket is taken under the caps
 * (connections, and unauthenticated ones: beyond that cap the oldest waiting one is closed), and one
 * sweep enforces the CONNECT deadline and keepalive ([MQTT-3.1.2-24]: 1.5 × the client's Keep Alive).
 */
import type { Socket } from 'node:net';
import type { Clock, TimerHandle } from '../../../engine/kernel/clock.ts';
import type { SessionPresence } from '../../../engine/connectivity/EdgePresence.ts';
import type { MqttEdgeLimits } from './MqttEdgeOptions.ts';
import { DispatchingConnection } from './DispatchingConnection.ts';
import type { EdgeConnection } from './EdgeConnection.ts';
import type { EdgeContext, MqttEdgeStats } from './EdgeContext.ts';
import { Reason } from './reasonCodes.ts';

export type EdgeCounters = EdgeContext<EdgeConnection>['stats'];

export class EdgeConnections {
  readonly all = new Set<EdgeConnection>();
  /** In arrival order: the first is the one waiting longest. */
  readonly unauthenticated = new Set<EdgeConnection>();
  readonly counters: EdgeCounters = { accepted: 0, refused: 0, disconnected: 0, connectionsRefused: 0, oversized: 0, protocolErrors: 0, feedDropped: 0 };
  /** The counters, with the connections open now. */
  readonly stats: MqttEdgeStats;
  readonly #limits: MqttEdgeLimits;
  readonly #clock: Clock;
  readonly #sweepMs: number;
  readonly #presence: SessionPresence | undefined;
  #sweepTimer: TimerHandle | undefined;
  #closing = false;

  constructor(limits: MqttEdgeLimits, clock: Clock, presence?: SessionPresence) {
    this.#limits = limits;
    this.#clock = clock;
    this.#presence = presence;
    this.stats = Object.defineProperties(this.counters, {
      connected: { get: () => this.all.size - this.unauthenticated.size, enumerable: true },
      unauthenticated: { get: () => this.unauthenticated.size, enumerable: true },
    });
    this.#sweepMs = Math.max(20, Math.min(1000, Math.floor(limits.connectTimeoutMs / 4)));
    this.#sweepTimer = clock.setTimeout(() => this.#sweep(), this.#sweepMs);
  }

  /** A new client socket: refused beyond the connection cap, else a connection reading it. */
  accept(socket: Socket, ctx: EdgeContext<EdgeConnection>): void {
    if (this.all.size >= this.#limits.maxConnections) {
      this.counters.connectionsRefused++;
      socket.destroy();
      return;
    }
    if (this.unauthenticated.size >= this.#limits.maxUnauthenticated) {
      // The one waiting longest goes: an idle flood cannot keep a device that sends CONNECT at once out.
      const oldest = this.unauthenticated.values().next().value!;
      this.counters.connectionsRefused++;
      oldest.destroy();
    }
    const conn = new DispatchingConnection(ctx, socket);
    this.all.add(conn);
    this.unauthenticated.add(conn);
  }

  authenticated(conn: EdgeConnection): void {
    if (!this.unauthenticated.delete(conn)) return;
    const deviceId = conn.deviceId;
    if (deviceId !== undefined) this.#presence?.opened(deviceId);
  }

  closed(conn: EdgeConnection): void {
    // A connection told opened (authenticated, still held) is told closed, once.
    const wasOpen = this.all.delete(conn) && !this.unauthenticated.delete(conn);
    const deviceId = conn.deviceId;
    if (wasOpen && deviceId !== undefined) this.#presence?.closed(deviceId);
  }

  /** Stops the sweep (the edge is closing). */
  stop(): void {
    this.#closing = true;
    this.#sweepTimer?.cancel();
  }

  #sweep(): void {
    const now = this.#clock.now();
    for (const conn of this.unauthenticated) {
      if (now - conn.openedAt < this.#limits.connectTimeoutMs) break;
      conn.destroy();
    }
    for (const conn of this.all) {
      if (conn.phase === 'open' && conn.keepaliveMs > 0 && now - conn.lastSeen > conn.keepaliveMs * 1.5) {
        conn.disconnect(Reason.KEEP_ALIVE_TIMEOUT, 'keep alive timeout');
      }
    }
    if (!this.#closing) this.#sweepTimer = this.#clock.setTimeout(() => this.#sweep(), this.#sweepMs);
  }
}
