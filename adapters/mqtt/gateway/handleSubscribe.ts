/**
 * SUBSCRIBE and UNSUBSCRIBE. The filters anyone may hold are the command and feed topics of one
 * device (engine/access/mqttTopics.ts authorizeSubscription); a granted filter is resolved to its
 * device and kept in the session (Sessions.ts), which is how feeds and commands find it. QoS is
 * granted up to 1. Refusals: MQTT 5 SUBACK reason codes (0x87 not authorized, 0x8F filter invalid,
 * 0x9E shared subscriptions not supported) with a reason string; MQTT 3.1.1 SUBACK 0x80. A device's
 * refused subscription is recorded in its rejections and counts towards the refusal allowance.
 */
import mqttPacket from 'mqtt-packet';
import { authorizeSubscription, parseFilter, shorten, type Refusal } from '../../../engine/access/mqttTopics.ts';
import { toFleetError } from '../../../engine/kernel/errors.ts';
import type { DeviceWithAssets } from '../../../engine/ports/registry.ts';
import type { EdgeConnection } from './EdgeConnection.ts';
import { Reason } from './reasonCodes.ts';
import type { SubscriptionEntry } from './Sessions.ts';

/** [MQTT-4.7.1]: '#' only last and alone in its level, '+' alone in its level, not empty. */
function wellFormedFilter(filter: string): boolean {
  if (filter.length === 0 || filter.includes('\u0000')) return false;
  const levels = filter.split('/');
  return levels.every((level, i) => (level.includes('#') ? level === '#' && i === levels.length - 1 : !level.includes('+') || level === '+'));
}

export async function handleSubscribe(conn: EdgeConnection, packet: mqttPacket.ISubscribePacket): Promise<void> {
  const { ctx } = conn;
  const codes: number[] = [];
  let firstRefusal: Refusal | undefined;
  let commands = false;
  let follows = false;
  for (const { topic: filter, qos } of packet.subscriptions) {
    let refusal: Refusal | undefined;
    let code: number = Reason.NOT_AUTHORIZED;
    if (filter.startsWith('$share/')) {
      refusal = { ok: false, code: 'FORBIDDEN', reason: 'shared subscriptions are not available' };
      code = Reason.SHARED_SUBSCRIPTIONS_NOT_SUPPORTED;
    } else if (!wellFormedFilter(filter)) {
      refusal = { ok: false, code: 'FORBIDDEN', reason: `filter "${shorten(filter)}" is not a well-formed topic filter` };
      code = Reason.TOPIC_FILTER_INVALID;
    } else {
      const resolved = await resolve(conn, filter);
      if (resolved.ok) {
        const granted = Math.min(qos, 1) as 0 | 1;
        const entry = subscriptionEntry(resolved.value, granted);
        ctx.sessions.subscribe(conn.session!, entry);
        if (entry.channel !== 'command') follows = true;
        codes.push(granted);
        if (resolved.value.channel === 'command' && conn.deviceId !== undefined) commands = true;
        continue;
      }
      refusal = resolved;
    }
    firstRefusal ??= refusal;
    codes.push(conn.v5 ? code : 0x80);
    await recordRefusal(conn, refusal, `subscribe ${filter}`);
  }
  // A feed or alarm topic: what is stored once the client has its SUBACK reaches it.
  if (follows) await ctx.readingLive();
  if (conn.phase !== 'open') return;
  const suback = { cmd: 'suback', messageId: packet.messageId, granted: codes } as mqttPacket.ISubackPacket;
  conn.write(conn.v5 && firstRefusal !== undefined
    ? conn.withReason(suback, `${firstRefusal.code}: ${firstRefusal.reason}`)
    : mqttPacket.generate(suback, { protocolVersion: conn.v5 ? 5 : 4 }));
  if (conn.refusals > ctx.limits.maxRefusals) {
    ctx.stats.disconnected++;
    conn.disconnect(Reason.QUOTA_EXCEEDED, `more than ${ctx.limits.maxRefusals} refusals`);
    return;
  }
  // After the SUBACK: the command actors send what waits for this device now.
  if (commands) ctx.reachable(conn.deviceId!);
}

export async function handleUnsubscribe(conn: EdgeConnection, packet: mqttPacket.IUnsubscribePacket): Promise<void> {
  const codes = packet.unsubscriptions.map((filter) => (conn.ctx.sessions.unsubscribe(conn.session!, filter) ? 0x00 : 0x11));
  conn.write(mqttPacket.generate({
    cmd: 'unsuback', messageId: packet.messageId, ...(conn.v5 ? { granted: codes } : {}),
  } as mqttPacket.IUnsubackPacket, { protocolVersion: conn.v5 ? 5 : 4 }));
}

/** The device a filter is about, looked up as its principal may learn it; then the decision. */
async function resolve(conn: EdgeConnection, filter: string): Promise<{ ok: true; value: Omit<SubscriptionEntry, 'qos'> } | Refusal> {
  const { access } = conn.ctx;
  const principal = conn.principal!;
  const subject = parseFilter(filter);
  let device: DeviceWithAssets | undefined;
  if (subject !== undefined && principal.scope !== 'partner') {
    if (subject.kind === 'device') {
      // A device token never learns whether another device exists.
      if (principal.scope === 'user' || principal.scope === 'key' || subject.deviceId === principal.subjectId) device = await access.device(subject.deviceId);
    } else if (principal.scope === 'device') {
      device = await access.device(principal.subjectId);
      if (device !== undefined && !device.assets.some((a) => a.id === subject.assetId)) device = await access.device(principal.subjectId, true);
    } else {
      device = await access.deviceOfAsset(subject.assetId);
    }
  }
  // A user of the device's ground, or a key of it (a key's ground never changes).
  const member = device === undefined ? false
    : principal.scope === 'user' ? await access.isMember(device.groundId, principal.subjectId)
      : principal.scope === 'key' && principal.key?.groundId === device.groundId;
  const decision = authorizeSubscription(principal, filter, device, member);
  if (!decision.ok) return decision;
  const s = decision.value;
  const d = device!;
  return {
    ok: true,
    value: s.kind === 'device'
      ? { filter, channel: s.channel, deviceId: d.id, groundId: d.groundId, asset: s.asset }
      : { filter, channel: s.channel, deviceId: d.id, groundId: d.groundId, assetId: s.assetId, assetName: d.assets.find((a) => a.id === s.assetId)!.name },
  };
}

/**
 * The entry kept for a granted filter, in one shape whatever the filter: every session holds its
 * subscriptions for as long as it lives (a spread would give each entry a properties array of its
 * own for `qos`); the channel is the module's constant, not the filter's copy of the word.
 */
function subscriptionEntry(resolved: Omit<SubscriptionEntry, 'qos'>, qos: 0 | 1): SubscriptionEntry {
  return {
    filter: resolved.filter,
    qos,
    channel: resolved.channel === 'command' ? 'command' : resolved.channel === 'alarm' ? 'alarm' : 'feed',
    deviceId: resolved.deviceId,
    groundId: resolved.groundId,
    asset: resolved.asset,
    assetId: resolved.assetId,
    assetName: resolved.assetName,
  };
}

async function recordRefusal(conn: EdgeConnection, refusal: Refusal, what: string): Promise<void> {
  const { ctx } = conn;
  const principal = conn.principal!;
  ctx.stats.refused++;
  conn.refusals++;
  ctx.logger.warn('mqtt: refused', { clientId: conn.session?.clientId, scope: principal.scope, subject: principal.subjectId, what: what.slice(0, 120), code: refusal.code, reason: refusal.reason });
  if (principal.scope !== 'device') return;
  const submission = { channel: 'mqtt' as const, contentType: 'json' as const, deviceId: principal.subjectId, body: new Uint8Array(0) };
  await ctx.admission.refuse(submission, { code: refusal.code, reason: refusal.reason })
    .catch((error: unknown) => ctx.logger.error('mqtt: recording a refusal failed', { error: toFleetError(error) }));
}
