/**
 * CONNECT: protocol name and level read by hand before mqtt-packet sees the packet, the token
 * (username; the password is ignored, as AllThingsTalk's SDKs send the token twice), the client id
 * bound to its principal (Sessions.ts), then CONNACK — advertising the edge's limits to MQTT 5
 * clients ([MQTT-3.2.2.3]) — and the larger packet limit of an authenticated connection.
 */
import { randomBytes } from 'node:crypto';
import mqttPacket from 'mqtt-packet';
import { hashToken } from '../../../engine/access/tokens.ts';
import { toFleetError } from '../../../engine/kernel/errors.ts';
import type { EdgeConnection } from './EdgeConnection.ts';
import { Reason, ReturnCode311 } from './reasonCodes.ts';
import { connectViolation } from './protocolRules.ts';

/** Levels: 3 = MQTT 3.1 (protocol name MQIsdp), 4 = 3.1.1, 5 = 5.0. */
const NAMES: Record<number, string> = { 3: 'MQIsdp', 4: 'MQTT', 5: 'MQTT' };

export function handleConnect(conn: EdgeConnection, body: Buffer): void {
  const { ctx } = conn;
  const nameLength = body.length >= 2 ? body.readUInt16BE(0) : -1;
  const name = nameLength >= 0 && body.length >= 3 + nameLength ? body.toString('latin1', 2, 2 + nameLength) : undefined;
  if (name !== 'MQTT' && name !== 'MQIsdp') {
    // [MQTT-3.1.2-1]: not MQTT; the connection is closed without CONNACK.
    conn.protocolError(Reason.PROTOCOL_ERROR, 'not an MQTT protocol name');
    return;
  }
  const level = body[2 + nameLength];
  if (NAMES[level] !== name) {
    // [MQTT-3.1.2-2]: CONNACK 0x01 (3.1.1 form, which every version reads), then close.
    ctx.stats.connectionsRefused++;
    conn.write(Buffer.from([0x20, 2, 0, ReturnCode311.UNACCEPTABLE_PROTOCOL_VERSION]));
    conn.end();
    return;
  }
  conn.version = level;
  conn.v5 = level === 5;
  const packet = conn.parse(0x10, body) as mqttPacket.IConnectPacket | undefined;
  if (packet === undefined) return;
  const violation = conn.v5 ? connectViolation(packet) : undefined;
  if (violation !== undefined) {
    // [MQTT-3.1.4-1], [MQTT-4.13.1-1]: refused with the reason code before the token is looked at.
    if (violation.reason === Reason.MALFORMED_PACKET || violation.reason === Reason.PROTOCOL_ERROR) ctx.stats.protocolErrors++;
    ctx.logger.info('mqtt: CONNECT refused', { reason: `0x${violation.reason.toString(16)}`, text: violation.text, clientId: packet.clientId });
    return refuse(conn, violation.reason, 0);
  }
  conn.phase = 'authenticating';
  conn.pause('auth');
  conn.keepaliveMs = (packet.keepalive ?? 0) * 1000;
  const props = packet.properties;
  if (props?.maximumPacketSize !== undefined) conn.clientMaxPacket = props.maximumPacketSize;
  if (props?.requestProblemInformation === false) conn.problemInfo = false;
  if (props?.receiveMaximum !== undefined) conn.clientReceiveMaximum = props.receiveMaximum;
  conn.connectExpiry = props?.sessionExpiryInterval ?? 0;
  const token = packet.username;
  ctx.access.principal(token).then((principal) => {
    if (conn.phase !== 'authenticating') return;
    // A ground's API key follows its ground's feeds and alarm topics, as a member of its role does (docs/grounds.md "API keys").
    if (principal === undefined || principal.scope === 'partner') {
      ctx.logger.info('mqtt: connection refused', { clientId: packet.clientId, reason: principal === undefined ? 'unknown token' : `${principal.scope} token` });
      return refuse(conn, Reason.BAD_USER_NAME_OR_PASSWORD, ReturnCode311.BAD_USER_NAME_OR_PASSWORD);
    }
    conn.principal = principal;
    conn.tokenHash = hashToken(token!);
    conn.token = token!;
    if (accept(conn, packet) && principal.key?.expiresAt !== undefined) disconnectAtExpiry(conn, principal.key.expiresAt);
  }, (error: unknown) => {
    ctx.logger.error('mqtt: authentication failed', { error: toFleetError(error) });
    if (conn.phase === 'authenticating') refuse(conn, Reason.SERVER_UNAVAILABLE, ReturnCode311.SERVER_UNAVAILABLE);
  });
}

function refuse(conn: EdgeConnection, reason: number, returnCode: number): void {
  conn.ctx.stats.connectionsRefused++;
  const connack = conn.v5
    ? mqttPacket.generate({ cmd: 'connack', reasonCode: reason, sessionPresent: false }, { protocolVersion: 5 })
    : mqttPacket.generate({ cmd: 'connack', returnCode, sessionPresent: false }, { protocolVersion: 4 });
  conn.write(connack);
  conn.end();
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** A key's connection ends when the key expires (DISCONNECT 0x98 on MQTT 5), by this edge's clock. */
function disconnectAtExpiry(conn: EdgeConnection, expiresAt: number): void {
  const { clock } = conn.ctx;
  const timer = clock.setTimeout(() => {
    if (clock.now() < expiresAt) return disconnectAtExpiry(conn, expiresAt);
    if (conn.phase === 'open') conn.disconnect(Reason.ADMINISTRATIVE_ACTION, 'the API key expired');
  }, Math.min(Math.max(0, expiresAt - clock.now()), MAX_TIMER_MS));
  conn.socket.once('close', () => timer.cancel());
}

/** Whether the connection was accepted (CONNACK 0) and is open. */
function accept(conn: EdgeConnection, packet: mqttPacket.IConnectPacket): boolean {
  const { ctx } = conn;
  const { limits } = ctx;
  let clientId = packet.clientId;
  let assigned: string | undefined;
  const clean = packet.clean !== false;
  if (clientId === '') {
    // [MQTT-3.1.3-8]: a 3.1.1 client without id must start clean; MQTT 5 gets one assigned.
    if (!clean && !conn.v5) return refused(conn, Reason.CLIENT_ID_NOT_VALID, ReturnCode311.IDENTIFIER_REJECTED);
    clientId = assigned = `fs-${randomBytes(12).toString('base64url')}`;
  }
  const claim = ctx.sessions.claim(clientId, conn.owner, clean, conn);
  if (!claim.ok) {
    ctx.logger.warn('mqtt: client id held by another principal; refused', { clientId, scope: conn.principal!.scope, subject: conn.principal!.subjectId });
    return refused(conn, Reason.CLIENT_ID_NOT_VALID, ReturnCode311.IDENTIFIER_REJECTED);
  }
  const { session } = claim;
  conn.session = session;
  claim.previous?.disconnect(Reason.SESSION_TAKEN_OVER, 'another connection of the same client took the session over');
  // MQTT 5: the client's Session Expiry Interval (0 when absent), capped; 3.1.1: a persistent session lives the cap.
  const requested = conn.v5 ? packet.properties?.sessionExpiryInterval ?? 0 : clean ? 0 : limits.maxSessionExpirySeconds;
  const granted = Math.min(requested, limits.maxSessionExpirySeconds);
  session.expiryMs = granted * 1000;
  conn.phase = 'open';
  conn.reader.limit = limits.maxPacketBytes;
  ctx.authenticated(conn);
  const connack = conn.v5
    ? mqttPacket.generate({
      cmd: 'connack', reasonCode: 0, sessionPresent: claim.present,
      properties: {
        maximumPacketSize: limits.maxPacketBytes,
        receiveMaximum: limits.receiveMaximum,
        topicAliasMaximum: limits.topicAliasMaximum,
        maximumQoS: 1,
        retainAvailable: false,
        wildcardSubscriptionAvailable: true,
        sharedSubscriptionAvailable: false,
        subscriptionIdentifiersAvailable: false,
        ...(granted !== requested ? { sessionExpiryInterval: granted } : {}),
        ...(assigned !== undefined ? { assignedClientIdentifier: assigned } : {}),
      },
    } as mqttPacket.IConnackPacket, { protocolVersion: 5 })
    : mqttPacket.generate({ cmd: 'connack', returnCode: 0, sessionPresent: claim.present }, { protocolVersion: 4 });
  conn.write(connack);
  conn.resume('auth');
  const deviceId = conn.deviceId;
  if (claim.present && deviceId !== undefined && [...session.subscriptions.values()].some((s) => s.channel === 'command')) ctx.reachable(deviceId);
  conn.replayBacklog();
  return true;
}

function refused(conn: EdgeConnection, reason: number, returnCode: number): false {
  refuse(conn, reason, returnCode);
  return false;
}
