/**
 * One client connection of the embedded edge as its packet handlers (handleConnect.ts,
 * handleUplink.ts, handleSubscribe.ts) see it: its state, ordered acknowledgements, the outbound
 * queue bound, pauses and the close. Reading the socket and dispatching its packets to the handlers
 * is DispatchingConnection.ts.
 *
 * Backpressure: reading pauses while the connection has `receiveMaximum` QoS 1 uplinks awaiting
 * their PUBACK, or while more than `maxOutboundBytes` wait to be written to its socket; QoS 0 feed
 * messages beyond that bound are dropped and counted. PUBACKs leave in the order the publishes came
 * ([MQTT-4.6.0-2]) though several are in flight to the log at once.
 *
 * Memory: an edge holds tens of thousands of mostly idle connections, so what only some of them use
 * (topic aliases, uplinks in flight, commands awaiting PUBACK, the CONNECT backlog, a control packet
 * under way) is allocated when first needed and let go once empty, and the socket's listeners are
 * functions shared by every connection (the connection hangs on its socket) instead of closures of
 * each (bench/mqtt.bench.ts: 3.3 KB of heap per connected and subscribed device, 2.2 KB since, the socket's own ~1 KB included).
 */
import type { Socket } from 'node:net';
import mqttPacket from 'mqtt-packet';
import type { UplinkTarget } from '../../../engine/access/mqttTopics.ts';
import type { Principal } from '../../../engine/ports/registry.ts';
import type { DeviceWithAssets } from '../../../engine/ports/registry.ts';
import { FrameReader } from './FrameReader.ts';
import { parsePacket } from './parsePacket.ts';
import { encodePublish, encodePuback } from './publishCodec.ts';
import { Reason, type DisconnectReason } from './reasonCodes.ts';
import type { EdgeContext } from './EdgeContext.ts';
import type { Session, SessionHolder } from './Sessions.ts';
import type { AckSlot, PendingUplink } from './PendingUplink.ts';

export type Phase = 'new' | 'authenticating' | 'open' | 'closed';
/** inflight: Receive Maximum of PUBACKs owed; admitting: uplinks of this connection at admission; gate: all connections' (AdmissionGate); write: the socket's outbound queue; auth: CONNECT being checked. */
type PauseReason = 'inflight' | 'admitting' | 'gate' | 'write' | 'auth';
/**
 * One bit per reason: reading pauses and resumes for a reason with about one call each per uplink
 * under load (almost all of them changing nothing), where a Set's add and delete showed in profiles.
 */
const PAUSE_BIT: Readonly<Record<PauseReason, number>> = { inflight: 1, admitting: 2, gate: 4, write: 8, auth: 16 };

/** MQTT's largest packet (a Remaining Length of 268,435,455 and its five header bytes): the bound when a client sets none. */
const ANY_PACKET_SIZE = 268_435_460;
/** A client that does not set Receive Maximum takes 65,535 QoS 1 PUBLISHes unacknowledged (§3.1.2.11.3): as many as there are packet ids. */
const ANY_RECEIVE_MAXIMUM = 65_535;

/** Where a socket's listeners (one set of functions for all sockets) find their connection. */
const CONNECTION = Symbol('EdgeConnection');
type EdgeSocket = Socket & { [CONNECTION]: EdgeConnection };

function onDrain(this: EdgeSocket): void {
  this[CONNECTION].resume('write');
}

function onErrorOrClose(this: EdgeSocket): void {
  this[CONNECTION].destroy();
}

export abstract class EdgeConnection implements SessionHolder {
  readonly ctx: EdgeContext<EdgeConnection>;
  readonly socket: Socket;
  readonly openedAt: number;
  readonly reader: FrameReader;
  phase: Phase = 'new';
  /** 3, 4 (3.1.1) or 5, once CONNECT was read. */
  version = 0;
  v5 = false;
  principal: Principal | undefined;
  /** hashToken of the token it authenticated with (registry changes name revoked tokens by hash). */
  tokenHash = '';
  /** The token itself, to authenticate again after a registry resync (changes may have been missed). */
  token = '';
  session: Session | undefined;
  keepaliveMs = 0;
  lastSeen: number;
  refusals = 0;
  /** The device of a device token, reused for `cacheTtlMs` and dropped on a registry change. */
  device: DeviceWithAssets | undefined;
  deviceAt = 0;
  /**
   * The last topic this connection published an uplink to and where it went, as decided for that
   * principal and device object (a device publishes to the same few topics, over and over).
   */
  lastRoute: { topic: string; principal: Principal; device: DeviceWithAssets; target: UplinkTarget } | undefined;
  /** MQTT 5 Topic Alias → topic, set by the client's publishes; created at the first alias. */
  aliases: Map<number, string> | undefined;
  /** Largest packet the client accepts (MQTT 5 Maximum Packet Size), bytes; any MQTT packet when it sets none. */
  clientMaxPacket = ANY_PACKET_SIZE;
  /** MQTT 5 Receive Maximum: QoS 1 PUBLISHes the client takes unacknowledged (3.1.1: as many as there are packet ids). */
  clientReceiveMaximum = ANY_RECEIVE_MAXIMUM;
  /** MQTT 5 Request Problem Information: false when the client asked for no Reason Strings ([MQTT-3.1.2-29]). */
  problemInfo = true;
  /** The Session Expiry Interval the MQTT 5 CONNECT asked for, s (0 when absent). */
  connectExpiry = 0;
  /** QoS 1/2 uplinks awaiting their acknowledgement, in arrival order; undefined when none does. */
  acks: AckSlot[] | undefined;
  /** Uplinks read but not yet handed to admission (a device lookup is under way); undefined when none is. */
  uplinks: PendingUplink[] | undefined;
  uplinkBusy = false;
  /** Uplinks of this connection handed to admission and not yet answered. */
  admitting = 0;
  /** Waiting for room at the AdmissionGate. */
  gateWaiting = false;
  /** Packets read while CONNECT was being authenticated. */
  backlog: { first: number; body: Buffer }[] | undefined;
  /** Control packets (SUBSCRIBE, UNSUBSCRIBE) are handled one after the other: the last one's handling, while under way. */
  control: Promise<void> | undefined;
  /** Outbound QoS 1 commands awaiting the client's PUBACK: packet id → told when it comes; undefined when none waits. */
  commandAcks: Map<number, () => void> | undefined;
  #nextPacketId = 0;
  /** PAUSE_BIT of every reason reading is paused for; 0 while reading. */
  #pausedFor = 0;
  #corked = false;
  /**
   * Set when the edge closes the connection (a violation, a revoked token): uplinks read but not yet
   * admitted are dropped. A client that closes (DISCONNECT, or the socket) still has what it sent
   * before admitted — a QoS 0 publish followed at once by DISCONNECT is not lost.
   */
  discardUplinks = false;
  /** Close once these acknowledgements are written (refusal allowance used up). */
  closeAfterAcks: { reason: DisconnectReason; text: string } | undefined;

  constructor(ctx: EdgeContext<EdgeConnection>, socket: Socket) {
    this.ctx = ctx;
    this.socket = socket;
    this.openedAt = this.lastSeen = ctx.clock.now();
    this.reader = new FrameReader(ctx.limits.preAuthMaxPacketBytes);
    socket.setNoDelay(true);
    (socket as EdgeSocket)[CONNECTION] = this;
    socket.on('drain', onDrain);
    socket.on('error', onErrorOrClose);
    socket.on('close', onErrorOrClose);
  }

  /** The connection reading `socket` (for listeners shared by every connection). */
  static of(socket: Socket): EdgeConnection {
    return (socket as EdgeSocket)[CONNECTION];
  }

  get owner(): string {
    return `${this.principal!.scope}:${this.principal!.subjectId}`;
  }

  get deviceId(): string | undefined {
    return this.principal?.scope === 'device' ? this.principal.subjectId : undefined;
  }

  /** Parses a complete packet with mqtt-packet; closes the connection and returns undefined when it is malformed. */
  parse(first: number, body: Buffer): mqttPacket.Packet | undefined {
    const result = parsePacket(this.version || 4, first, body);
    if (result instanceof Error) {
      this.protocolError(Reason.MALFORMED_PACKET, result.message);
      return undefined;
    }
    return result;
  }

  /** A protocol violation: counted, then DISCONNECT (MQTT 5, once connected) and close. */
  protocolError(reason: DisconnectReason, text: string): void {
    if (this.phase === 'closed') return;
    this.ctx.stats.protocolErrors++;
    this.ctx.logger.info('mqtt: protocol error; closing', { reason: `0x${reason.toString(16)}`, text, clientId: this.session?.clientId });
    this.disconnect(reason, text);
  }

  /** SessionHolder: DISCONNECT with a reason code first when the client speaks MQTT 5 and is connected ([MQTT-4.13.1-1]), then close. */
  disconnect(reason: DisconnectReason, text: string): void {
    if (this.phase === 'closed') return;
    if (this.v5 && this.phase === 'open') this.write(this.withReason({ cmd: 'disconnect', reasonCode: reason }, text, true));
    this.end();
  }

  /** Closes once what was written has left, without a DISCONNECT (a refused CONNECT: its CONNACK said why). */
  end(): void {
    this.discardUplinks = true;
    this.#close(true);
  }

  /**
   * An MQTT 5 packet with a Reason String, left out when the client asked for no problem information
   * (a CONNACK or DISCONNECT may still carry it: `always`) ([MQTT-3.1.2-29]) or when it would make the
   * packet larger than the client's Maximum Packet Size ([MQTT-3.4.2-2], [MQTT-3.9.2-1], [MQTT-3.14.2-3]).
   */
  withReason(packet: mqttPacket.Packet, text: string, always = false): Buffer {
    if (this.problemInfo || always) {
      const withText = mqttPacket.generate({ ...packet, properties: { reasonString: text.slice(0, 200) } } as mqttPacket.Packet, { protocolVersion: 5 });
      if (withText.length <= this.clientMaxPacket) return withText;
    }
    return mqttPacket.generate(packet, { protocolVersion: 5 });
  }

  /** Closes at once, without a word. */
  destroy(): void {
    this.#close(false);
  }

  #close(graceful: boolean): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.uncork();
    const socket = this.socket;
    // A paused net.Socket reads on until its buffer holds the high-water mark (createMqttEdge.ts's
    // SOCKET_HIGH_WATER_MARK), one chunk at most; beyond it a peer still sending (a flood behind an
    // oversized header) fills its own window.
    socket.pause();
    if (!socket.destroyed) {
      // A graceful close lets written packets reach the peer, holding that chunk meanwhile. A peer
      // that was never sent a byte (refused before CONNACK) has nothing to wait for: closed at once.
      if (graceful && socket.bytesWritten + socket.writableLength > 0) {
        // Let a DISCONNECT leave, but do not wait on a peer that does not read.
        socket.end();
        const timer = setTimeout(() => socket.destroy(), 1000);
        timer.unref();
        socket.once('close', () => clearTimeout(timer));
      } else {
        socket.destroy();
      }
    }
    if (this.acks !== undefined) for (const slot of this.acks) slot.done = true;
    this.acks = undefined;
    if (this.discardUplinks) this.uplinks = undefined;
    this.backlog = undefined;
    this.commandAcks = undefined;
    if (this.session !== undefined) this.ctx.sessions.release(this.session, this);
    this.ctx.closed(this);
  }

  /** Writes a packet, corked until the current batch of work is done. */
  write(buf: Buffer): void {
    if (this.phase === 'closed') return;
    this.cork();
    this.#send(buf);
  }

  /** Hands a packet to the socket (corked or not); reading pauses while too much waits to go out. */
  #send(buf: Buffer): void {
    if (!this.socket.write(buf) && this.socket.writableLength > this.ctx.limits.maxOutboundBytes) this.pause('write');
  }

  cork(): void {
    if (this.#corked) return;
    this.#corked = true;
    this.socket.cork();
    process.nextTick(() => this.uncork());
  }

  uncork(): void {
    if (!this.#corked) return;
    this.#corked = false;
    this.socket.uncork();
  }

  pause(why: PauseReason): void {
    if (this.#pausedFor === 0) this.socket.pause();
    this.#pausedFor |= PAUSE_BIT[why];
  }

  resume(why: PauseReason): void {
    const bit = PAUSE_BIT[why];
    if ((this.#pausedFor & bit) === 0) return;
    this.#pausedFor &= ~bit;
    if (this.#pausedFor !== 0 || this.phase === 'closed') return;
    this.socket.resume();
  }

  /**
   * Writes the acknowledgements that are ready, in order; closes when the refusal allowance is used
   * up. A lone one (a client with one publish in flight, the usual case) is written at once instead
   * of through cork() and a tick.
   */
  flushAcks(): void {
    const acks = this.acks;
    let wrote = false;
    while (acks !== undefined && acks.length > 0 && acks[0].ready) {
      const slot = acks.shift()!;
      slot.done = true;
      const packet = slot.packet ?? encodePuback(slot.packetId);
      const lone = !wrote && acks[0]?.ready !== true;
      if (lone && this.phase !== 'closed') this.#send(packet);
      else this.write(packet);
      wrote = true;
    }
    // Not kept empty: an idle connection holds no queue (nor the queue's grown backing store).
    if (acks !== undefined && acks.length === 0 && this.acks === acks) this.acks = undefined;
    const owed = this.acks?.length ?? 0;
    if (wrote && owed < this.ctx.limits.receiveMaximum) this.resume('inflight');
    if (this.closeAfterAcks !== undefined && owed === 0) {
      this.ctx.stats.disconnected++;
      this.disconnect(this.closeAfterAcks.reason, this.closeAfterAcks.text);
    }
  }

  /** Room for another QoS 1 PUBLISH under the client's Receive Maximum ([MQTT-3.3.4-9]). */
  get canSendQos1(): boolean {
    return (this.commandAcks?.size ?? 0) < this.clientReceiveMaximum;
  }

  /** The client's PUBACK of command `packetId`: who waits for it is told (nothing when none waits for that id). */
  commandAcked(packetId: number): void {
    const acks = this.commandAcks;
    const acked = acks?.get(packetId);
    if (acked === undefined) return;
    acks!.delete(packetId);
    if (acks!.size === 0) this.commandAcks = undefined;
    acked();
  }

  /** Sends a PUBLISH to the client; false when it was not sent (closed, above the client's size, QoS 1 beyond its Receive Maximum, or QoS 0 with the queue full). */
  publish(topic: Buffer, payload: Uint8Array, qos: 0 | 1, onAck?: () => void): boolean {
    if (this.phase !== 'open') return false;
    if (qos === 0 && this.socket.writableLength > this.ctx.limits.maxOutboundBytes) {
      this.ctx.stats.feedDropped++;
      return false;
    }
    let packetId = 0;
    if (qos === 1) {
      if (!this.canSendQos1) return false;
      do this.#nextPacketId = (this.#nextPacketId % 65_535) + 1;
      while (this.commandAcks?.has(this.#nextPacketId) === true);
      packetId = this.#nextPacketId;
    }
    const packet = encodePublish(topic, payload, qos, packetId, this.v5);
    if (packet.length > this.clientMaxPacket) return false;
    if (qos === 1 && onAck !== undefined) (this.commandAcks ??= new Map()).set(packetId, onAck);
    this.write(packet);
    return true;
  }

  /** Packets read while CONNECT was authenticated, handled now that it is. */
  abstract replayBacklog(): void;
}
