/**
 * PUBLISH from a client: an uplink (spec §4.1, §4.2). Topic ACL → payload check → admission
 * (engine/uplink/UplinkAdmission.ts), which appends durably; the QoS 1 PUBACK is written only then.
 * Several uplinks of a connection are in flight to the log at once (up to Receive Maximum) — the
 * log's group commit joins them with other connections' — and handed to admission in arrival order,
 * so they reach the log in order; their PUBACKs leave in that order too.
 *
 * A refusal is recorded once — by admission when it decided, else here through admission.refuse —
 * before it is answered: MQTT 5 with a PUBACK reason code and reason string, MQTT 3.1.1 with a plain
 * PUBACK ([MQTT-3.3.5-2]: a 3.1.1 server can only acknowledge or close). A refused QoS 1 publish the
 * client sends again (DUP, same packet id: its PUBACK was lost) is answered without a second record.
 * After `maxRefusals` refusals the connection is closed once the last answer is written.
 */
import { isUtf8 } from 'node:buffer';
import mqttPacket from 'mqtt-packet';
import { authorizeUplink, uplinkContentType, type Refusal, type UplinkTarget } from '../../../engine/access/mqttTopics.ts';
import { toFleetError } from '../../../engine/kernel/errors.ts';
import type { DeviceWithAssets } from '../../../engine/ports/registry.ts';
import type { EdgeConnection } from './EdgeConnection.ts';
import { parsePublish, type InboundPublish } from './publishCodec.ts';
import type { AckSlot, PendingUplink } from './PendingUplink.ts';
import { Reason, pubackReason } from './reasonCodes.ts';

const FAULT_REASON = { malformed: Reason.MALFORMED_PACKET, protocol: Reason.PROTOCOL_ERROR, topic: Reason.TOPIC_NAME_INVALID } as const;

/** Refused packet ids a session remembers for resends. */
const REMEMBERED_REFUSALS = 32;

export function handlePublishFrame(conn: EdgeConnection, first: number, body: Buffer): void {
  let publish;
  try {
    publish = parsePublish(first, body, conn.v5);
  } catch {
    return conn.protocolError(Reason.MALFORMED_PACKET, 'PUBLISH properties run past the packet');
  }
  if ('fault' in publish) {
    return conn.protocolError(FAULT_REASON[publish.fault], publish.reason);
  }
  const { limits } = conn.ctx;
  if (conn.v5) {
    // Maximum QoS 1 and Retain Available 0 were advertised in CONNACK ([MQTT-3.2.2-11], [MQTT-3.2.2-14]).
    if (publish.qos === 2) return conn.protocolError(Reason.QOS_NOT_SUPPORTED, 'QoS 2 is not supported; Maximum QoS is 1');
    if (publish.retain) return conn.protocolError(Reason.RETAIN_NOT_SUPPORTED, 'retained messages are not supported');
    if (publish.topicAlias !== undefined) {
      if (publish.topicAlias === 0 || publish.topicAlias > limits.topicAliasMaximum) {
        return conn.protocolError(Reason.TOPIC_ALIAS_INVALID, `topic alias ${publish.topicAlias} is outside 1–${limits.topicAliasMaximum}`);
      }
      if (publish.topic !== '') {
        (conn.aliases ??= new Map()).set(publish.topicAlias, publish.topic);
      } else {
        const topic = conn.aliases?.get(publish.topicAlias);
        if (topic === undefined) return conn.protocolError(Reason.PROTOCOL_ERROR, `topic alias ${publish.topicAlias} was never set`);
        publish.topic = topic;
      }
    }
  }
  let slot: AckSlot | undefined;
  if (publish.qos > 0) {
    // Reading pauses at Receive Maximum; what the chunk being read holds beyond it is still taken (bounded by
    // the socket's read size). mqtt.js, among others, does not keep to the server's Receive Maximum, so
    // exceeding it pauses the client instead of disconnecting it with 0x93.
    slot = { packetId: publish.packetId, ready: false, done: false, packet: undefined };
    // A queue made for one (`[slot]`): a client with one publish in flight, the usual case, never grows it.
    if (conn.acks === undefined) conn.acks = [slot];
    else conn.acks.push(slot);
    if (conn.acks.length >= limits.receiveMaximum) conn.pause('inflight');
    if (publish.dup) {
      const answer = conn.session?.refused?.get(publish.packetId);
      if (answer !== undefined) {
        answerSlot(conn, slot, answer);
        return;
      }
    }
  }
  const pending: PendingUplink = { publish, slot, refreshed: false };
  if (conn.uplinks === undefined) conn.uplinks = [pending];
  else conn.uplinks.push(pending);
  // QoS 0 too: a connection has at most Receive Maximum uplinks read and not yet admitted.
  if (conn.uplinks.length + conn.admitting >= limits.receiveMaximum) conn.pause('admitting');
  drain(conn);
}

/** Hands read uplinks to admission in order; only a device lookup that is not cached makes it wait. */
function drain(conn: EdgeConnection): void {
  if (conn.uplinkBusy || conn.gateWaiting) return;
  const { gate } = conn.ctx;
  // Read once per run of the loop: it only ages the cached device (cacheTtlMs, minutes).
  const now = conn.ctx.clock.now();
  while (conn.uplinks !== undefined && !conn.discardUplinks) {
    if (!gate.open) {
      conn.gateWaiting = true;
      conn.pause('gate');
      gate.wait(() => {
        conn.gateWaiting = false;
        conn.resume('gate');
        drain(conn);
      });
      return;
    }
    const deviceId = conn.deviceId;
    if (deviceId !== undefined && (conn.device === undefined || now - conn.deviceAt > conn.ctx.cacheTtlMs)) {
      const fresh = conn.device === undefined && conn.uplinks[0].refreshed;
      conn.uplinkBusy = true;
      conn.ctx.access.device(deviceId, fresh).then((device) => {
        conn.uplinkBusy = false;
        conn.device = device;
        conn.deviceAt = conn.ctx.clock.now();
        if (device === undefined) conn.deviceAt = Number.NEGATIVE_INFINITY;
        // A known device's uplink waits for room at the gate like any other (drain checks it).
        if (device === undefined || gate.open) decideNext(conn, device);
        drain(conn);
      }, (error: unknown) => {
        conn.uplinkBusy = false;
        conn.ctx.logger.error('mqtt: device lookup failed; closing', { error: toFleetError(error) });
        // 0x88 Server unavailable is a CONNACK code; DISCONNECT says 0x89 ([MQTT-3.14.2-1]).
        conn.disconnect(Reason.SERVER_BUSY, 'registry unavailable');
      });
      return;
    }
    decideNext(conn, conn.device);
  }
}

/** Takes the oldest uplink read; an emptied queue is let go (an idle connection holds none). */
function nextUplink(conn: EdgeConnection): PendingUplink | undefined {
  const uplinks = conn.uplinks;
  if (uplinks === undefined) return undefined;
  const pending = uplinks.shift();
  if (uplinks.length === 0) conn.uplinks = undefined;
  return pending;
}

/** Puts an uplink back in front of the queue (it is tried again). */
function putBack(conn: EdgeConnection, pending: PendingUplink): void {
  if (conn.uplinks === undefined) conn.uplinks = [pending];
  else conn.uplinks.unshift(pending);
}

function decideNext(conn: EdgeConnection, device: DeviceWithAssets | undefined): void {
  const pending = nextUplink(conn);
  if (pending === undefined || conn.discardUplinks) return;
  const { publish } = pending;
  const principal = conn.principal!;
  let target: UplinkTarget;
  const route = conn.lastRoute;
  if (route !== undefined && route.topic === publish.topic && route.device === device && route.principal === principal) target = route.target;
  else {
    const decision = authorizeUplink(principal, publish.topic, device);
    if (!decision.ok) {
      if (device !== undefined && !pending.refreshed && (decision.code === 'UNKNOWN_ASSET' || decision.code === 'FORBIDDEN')) {
        // The asset may have been created after the cached copy was read.
        pending.refreshed = true;
        conn.device = undefined;
        putBack(conn, pending);
        return;
      }
      return refuseHere(conn, pending, decision);
    }
    target = decision.value;
    // Allowed for this principal and this device object: a changed device is a new object (the cache drops the old one).
    conn.lastRoute = { topic: publish.topic, principal, device: device!, target };
  }
  const payloadCheck = uplinkContentType(target, publish.payload, conn.ctx.limits.maxPayloadBytes, publish.contentType);
  if (!payloadCheck.ok) return refuseHere(conn, pending, payloadCheck);
  if (publish.payloadFormat === 1 && !isUtf8(publish.payload)) {
    return refuseHere(conn, pending, { ok: false, code: 'MALFORMED_PAYLOAD', reason: 'Payload Format Indicator says UTF-8; the payload is not' });
  }
  const submission = { channel: 'mqtt' as const, contentType: payloadCheck.value, deviceId: target.deviceId, asset: target.asset, body: publish.payload };
  const { gate, limits } = conn.ctx;
  gate.inflight++;
  conn.admitting++;
  const settled = () => {
    conn.admitting--;
    if ((conn.uplinks?.length ?? 0) + conn.admitting < limits.receiveMaximum) conn.resume('admitting');
    gate.done();
  };
  // admitThen: no promise per uplink (three of them, with their reactions, on the admit() path).
  conn.ctx.admission.admitThen(device!, submission, (error, outcome) => {
    settled();
    if (outcome === undefined) return notAdmitted(conn, pending, error);
    if (outcome.status === 'accepted') {
      conn.ctx.stats.accepted++;
      if (pending.slot !== undefined) answerSlot(conn, pending.slot, publish.qos === 2 ? pubrec(publish.packetId) : undefined);
      return;
    }
    // Admission recorded it; here it only counts towards the connection's allowance.
    const first = outcome.rejections[0];
    refused(conn, pending, { ok: false, code: first.code, reason: first.reason });
  });
}

/** Admission could not take the uplink (the log is full or away): wait and retry, or close. */
function notAdmitted(conn: EdgeConnection, pending: PendingUplink, error: unknown): void {
  const failure = toFleetError(error, 'UNAVAILABLE');
  if (failure.code === 'BACKPRESSURE' && !conn.discardUplinks) {
    // The log intake is full (other edges share it): this connection waits a little and tries again.
    putBack(conn, pending);
    conn.pause('gate');
    conn.gateWaiting = true;
    conn.ctx.clock.setTimeout(() => {
      conn.gateWaiting = false;
      conn.resume('gate');
      drain(conn);
    }, 20);
    return;
  }
  // Not acknowledged: the client sends its unacknowledged QoS 1 messages again after reconnecting.
  conn.ctx.logger.warn('mqtt: uplink not accepted by the log; closing the connection', { clientId: conn.session?.clientId, code: failure.code });
  conn.ctx.stats.disconnected++;
  conn.disconnect(Reason.SERVER_BUSY, 'the log is not accepting uplinks; send again later');
}

/** A refusal the channel decided itself: recorded (device tokens), then answered. */
function refuseHere(conn: EdgeConnection, pending: PendingUplink, refusal: Refusal): void {
  const principal = conn.principal!;
  if (principal.scope !== 'device') {
    refused(conn, pending, refusal);
    return;
  }
  const submission = { channel: 'mqtt' as const, contentType: 'json' as const, deviceId: principal.subjectId, body: new Uint8Array(0) };
  conn.ctx.admission.refuse(submission, { code: refusal.code, reason: refusal.reason })
    .catch((error: unknown) => conn.ctx.logger.error('mqtt: recording a refusal failed', { error: toFleetError(error) }))
    .then(() => refused(conn, pending, refusal));
}

function refused(conn: EdgeConnection, pending: PendingUplink, refusal: Refusal): void {
  const { ctx } = conn;
  ctx.stats.refused++;
  // Over the ground's rate is not the client's fault to punish with a disconnection: it waits and sends again.
  if (refusal.code !== 'QUOTA_EXCEEDED') conn.refusals++;
  ctx.logger.warn('mqtt: refused', {
    clientId: conn.session?.clientId, scope: conn.principal?.scope, subject: conn.principal?.subjectId,
    what: `publish ${pending.publish.topic.slice(0, 120)}`, code: refusal.code, reason: refusal.reason,
  });
  if (conn.refusals > ctx.limits.maxRefusals && conn.closeAfterAcks === undefined) {
    conn.closeAfterAcks = { reason: Reason.QUOTA_EXCEEDED, text: `more than ${ctx.limits.maxRefusals} refusals` };
  }
  const { slot } = pending;
  if (slot === undefined) {
    conn.flushAcks();
    return;
  }
  const answer = refusalAnswer(conn, pending.publish, refusal);
  const session = conn.session;
  if (session !== undefined) {
    // A Map keeps insertion order: the first key is the oldest refusal (a refused id refused again moves last).
    const remembered = (session.refused ??= new Map());
    remembered.delete(slot.packetId);
    remembered.set(slot.packetId, answer);
    if (remembered.size > REMEMBERED_REFUSALS) remembered.delete(remembered.keys().next().value!);
  }
  answerSlot(conn, slot, answer);
}

function refusalAnswer(conn: EdgeConnection, publish: InboundPublish, refusal: Refusal): Buffer {
  if (publish.qos === 2) return pubrec(publish.packetId);
  if (!conn.v5) return Buffer.from([0x40, 2, publish.packetId >> 8, publish.packetId & 0xff]);
  return conn.withReason({ cmd: 'puback', messageId: publish.packetId, reasonCode: pubackReason(refusal.code) } as mqttPacket.IPubackPacket, `${refusal.code}: ${refusal.reason}`);
}

/** `packet` undefined: the plain acknowledgement of an accepted publish (PUBACK, or PUBREC at QoS 2). */
function answerSlot(conn: EdgeConnection, slot: AckSlot, packet: Buffer | undefined): void {
  if (slot.done) return;
  slot.ready = true;
  slot.packet = packet;
  conn.flushAcks();
}

/** QoS 2 (MQTT 3.1.1 only): PUBREC once durable; the PUBREL is answered with PUBCOMP (EdgeConnection). */
function pubrec(packetId: number): Buffer {
  return Buffer.from([0x50, 2, packetId >> 8, packetId & 0xff]);
}
