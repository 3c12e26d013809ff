/**
 * The embedded edge's connection that reads its socket: frames with the size limit of the
 * connection's phase (FrameReader.ts), and each complete packet dispatched to what decides its
 * meaning (handleConnect.ts, handleUplink.ts, handleSubscribe.ts) or answered here (PUBACK of a
 * command, PUBREL, PINGREQ, DISCONNECT). Packets read while CONNECT is being authenticated wait in
 * the backlog and are dispatched once it is.
 */
import type { Socket } from 'node:net';
import mqttPacket from 'mqtt-packet';
import { EdgeConnection, type Phase } from './EdgeConnection.ts';
import type { EdgeContext } from './EdgeContext.ts';
import type { FrameRefusal, FrameSink } from './FrameReader.ts';
import { PINGRESP } from './publishCodec.ts';
import { Reason } from './reasonCodes.ts';
import { disconnectViolation, subscribeViolation, unsubscribeViolation } from './protocolRules.ts';
import { handleConnect } from './handleConnect.ts';
import { handlePublishFrame } from './handleUplink.ts';
import { handleSubscribe, handleUnsubscribe } from './handleSubscribe.ts';

const CONNECT = 1;
const PUBLISH = 3;
const PUBACK = 4;
const PUBREL = 6;
const SUBSCRIBE = 8;
const UNSUBSCRIBE = 10;
const PINGREQ = 12;
const DISCONNECT = 14;

/** The one 'data' listener of every connection's socket (no closure per connection). */
function onData(this: Socket, chunk: Buffer): void {
  (EdgeConnection.of(this) as DispatchingConnection).onData(chunk);
}

export class DispatchingConnection extends EdgeConnection implements FrameSink {
  constructor(ctx: EdgeContext<EdgeConnection>, socket: Socket) {
    super(ctx, socket);
    socket.on('data', onData);
  }

  onData(chunk: Buffer): void {
    if (this.phase === 'closed') return;
    this.lastSeen = this.ctx.clock.now();
    // Not corked here: write() corks at the first packet a chunk's packets answer, and an uplink
    // (answered once durable) writes nothing now.
    const refusal = this.reader.push(chunk, this);
    if (refusal !== undefined) this.#refuseFrame(refusal);
  }

  /** FrameSink: one complete packet. */
  frame(first: number, body: Buffer): boolean {
    if (this.phase === 'closed') return false;
    if (this.phase === 'authenticating') {
      (this.backlog ??= []).push({ first, body: Buffer.from(body) });
      return true;
    }
    try {
      this.#dispatch(first, body);
    } catch (error) {
      this.protocolError(Reason.MALFORMED_PACKET, `unreadable packet: ${(error as Error).message}`);
    }
    return (this.phase as Phase) !== 'closed';
  }

  #dispatch(first: number, body: Buffer): void {
    const type = first >> 4;
    // [MQTT-2.1.3-1] (3.1.1: [MQTT-2.2.2-2]): reserved flags as listed, 0010 for PUBREL, SUBSCRIBE and
    // UNSUBSCRIBE ([MQTT-3.6.1-1], [MQTT-3.8.1-1], [MQTT-3.10.1-1]), 0 for the rest; PUBLISH's are its own.
    if (type !== PUBLISH && (first & 0x0f) !== (type === PUBREL || type === SUBSCRIBE || type === UNSUBSCRIBE ? 2 : 0)) {
      return this.protocolError(Reason.MALFORMED_PACKET, `reserved flags 0x${(first & 0x0f).toString(16)} in packet type ${type}`);
    }
    if (this.phase === 'new') {
      // [MQTT-3.1.0-1]: the first packet is CONNECT.
      if (type !== CONNECT) return this.protocolError(Reason.PROTOCOL_ERROR, 'the first packet must be CONNECT');
      handleConnect(this, body);
      return;
    }
    switch (type) {
      case PUBLISH: return handlePublishFrame(this, first, body);
      case PUBACK: {
        if (body.length < 2) return this.protocolError(Reason.MALFORMED_PACKET, 'PUBACK without packet identifier');
        this.commandAcked(body.readUInt16BE(0));
        return;
      }
      case PUBREL: {
        // QoS 2 (MQTT 3.1.1 only): the uplink was made durable before PUBREC; PUBCOMP closes the exchange.
        if (body.length < 2) return this.protocolError(Reason.MALFORMED_PACKET, 'PUBREL without packet identifier');
        // MQTT 5 has no QoS 2 exchange open here (QoS 2 publishes close the connection): 0x92 Packet Identifier not found.
        this.write(this.v5 ? Buffer.from([0x70, 3, body[0], body[1], Reason.PACKET_IDENTIFIER_NOT_FOUND]) : Buffer.from([0x70, 2, body[0], body[1]]));
        return;
      }
      case SUBSCRIBE: return this.#controlPacket(first, body, (packet) => handleSubscribe(this, packet as mqttPacket.ISubscribePacket));
      case UNSUBSCRIBE: return this.#controlPacket(first, body, (packet) => handleUnsubscribe(this, packet as mqttPacket.IUnsubscribePacket));
      case PINGREQ:
        if (body.length > 0) return this.protocolError(Reason.MALFORMED_PACKET, 'PINGREQ with a body');
        this.write(PINGRESP);
        return;
      case DISCONNECT: {
        const packet = this.parse(first, body) as mqttPacket.IDisconnectPacket | undefined;
        if (packet === undefined) return;
        const violation = this.v5 ? disconnectViolation(packet, this.connectExpiry) : undefined;
        if (violation !== undefined) return this.protocolError(violation.reason, violation.text);
        const expiry = packet.properties?.sessionExpiryInterval;
        // MQTT 5 lets the client change its session expiry on DISCONNECT, not from 0 (§3.14.2.2.2, checked above).
        if (this.session !== undefined && expiry !== undefined && this.session.expiryMs > 0) {
          this.session.expiryMs = Math.min(expiry, this.ctx.limits.maxSessionExpirySeconds) * 1000;
        }
        this.destroy();
        return;
      }
      case CONNECT: return this.protocolError(Reason.PROTOCOL_ERROR, 'a second CONNECT');
      default: return this.protocolError(Reason.PROTOCOL_ERROR, `packet type ${type} is not accepted from a client`);
    }
  }

  #controlPacket(first: number, body: Buffer, handle: (packet: mqttPacket.Packet) => Promise<void>): void {
    const packet = this.parse(first, body);
    if (packet === undefined) return;
    const violation = packet.cmd === 'subscribe' ? subscribeViolation(packet, this.v5) : unsubscribeViolation(packet as mqttPacket.IUnsubscribePacket, this.v5);
    if (violation !== undefined) return this.protocolError(violation.reason, violation.text);
    const handled = (this.control ?? Promise.resolve()).then(() => (this.phase === 'open' ? handle(packet) : undefined)).catch((error: unknown) => {
      this.ctx.logger.error('mqtt: control packet failed', { error: String(error) });
      this.protocolError(Reason.UNSPECIFIED, 'server error');
    }).then(() => {
      // The last one handled: none is under way, and none is kept.
      if (this.control === handled) this.control = undefined;
    });
    this.control = handled;
  }

  #refuseFrame(refusal: FrameRefusal): void {
    if (refusal.kind === 'too-large') {
      this.ctx.stats.oversized++;
      this.ctx.logger.warn('mqtt: packet above the limit; closing', { declared: refusal.declared, limit: refusal.limit, phase: this.phase });
      this.disconnect(Reason.PACKET_TOO_LARGE, `packet of ${refusal.declared} bytes exceeds ${refusal.limit}`);
    } else {
      this.protocolError(Reason.MALFORMED_PACKET, refusal.reason);
    }
  }

  /** Packets read while CONNECT was authenticated, handled now that it is. */
  replayBacklog(): void {
    const backlog = this.backlog;
    this.backlog = undefined;
    if (backlog !== undefined) for (const { first, body } of backlog) if (!this.frame(first, body)) return;
  }
}
