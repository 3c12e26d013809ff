/**
 * MQTT 5 rules on what a client sends that mqtt-packet reads without enforcing: properties that
 * do not belong to the packet or come twice, values the spec calls a Protocol Error, features the
 * edge's CONNACK said it does not offer. Each returns the reason to close with (CONNACK before a
 * session, DISCONNECT after), or undefined. MQTT 3.1.1 packets carry no properties: not checked.
 * docs/mqtt.md lists the statements and their tests (test/adapters/mqtt/mqtt-conformance.test.ts).
 */
import type mqttPacket from 'mqtt-packet';
import { Reason, type DisconnectReason } from './reasonCodes.ts';

/** `R`: a DISCONNECT reason once connected; a CONNECT is refused with a CONNACK code. */
export interface Violation<R extends number = DisconnectReason> {
  reason: R;
  text: string;
}

/** §2.2.2.2: a property not valid for its packet is malformed; one given twice (User Property aside) a Protocol Error. */
function propertyViolation(properties: object | undefined, allowed: ReadonlySet<string>, packet: string): Violation | undefined {
  if (properties === undefined) return undefined;
  for (const [name, value] of Object.entries(properties)) {
    if (!allowed.has(name)) return { reason: Reason.MALFORMED_PACKET, text: `property ${name} is not valid in ${packet}` };
    // mqtt-packet gathers a repeated property into an array.
    if (name !== 'userProperties' && Array.isArray(value)) return { reason: Reason.PROTOCOL_ERROR, text: `property ${name} given more than once in ${packet}` };
  }
  return undefined;
}

const CONNECT_PROPERTIES = new Set([
  'sessionExpiryInterval', 'receiveMaximum', 'maximumPacketSize', 'topicAliasMaximum', 'requestResponseInformation',
  'requestProblemInformation', 'userProperties', 'authenticationMethod', 'authenticationData',
]);
const WILL_PROPERTIES = new Set(['willDelayInterval', 'payloadFormatIndicator', 'messageExpiryInterval', 'contentType', 'responseTopic', 'correlationData', 'userProperties']);
const SUBSCRIBE_PROPERTIES = new Set(['subscriptionIdentifier', 'userProperties']);
const UNSUBSCRIBE_PROPERTIES = new Set(['userProperties']);
const DISCONNECT_PROPERTIES = new Set(['sessionExpiryInterval', 'reasonString', 'userProperties', 'serverReference']);

/** An MQTT 5 CONNECT the edge must refuse before looking at its token (CONNACK with `reason`, then close). */
export function connectViolation(packet: mqttPacket.IConnectPacket): Violation<number> | undefined {
  const props = packet.properties;
  const bad = propertyViolation(props, CONNECT_PROPERTIES, 'CONNECT') ?? propertyViolation(packet.will?.properties, WILL_PROPERTIES, 'the Will');
  if (bad !== undefined) return bad;
  if (props?.receiveMaximum === 0) return { reason: Reason.PROTOCOL_ERROR, text: 'Receive Maximum 0' };
  if (props?.maximumPacketSize === 0) return { reason: Reason.PROTOCOL_ERROR, text: 'Maximum Packet Size 0' };
  // [MQTT-4.12.0-1]: enhanced authentication is not offered; the token goes in the User Name.
  if (props?.authenticationMethod !== undefined) return { reason: Reason.BAD_AUTHENTICATION_METHOD, text: 'no authentication method is supported' };
  if (props?.authenticationData !== undefined) return { reason: Reason.PROTOCOL_ERROR, text: 'Authentication Data without an Authentication Method' };
  // CONNACK says Maximum QoS 1 and Retain Available 0 ([MQTT-3.2.2-12], [MQTT-3.2.2-13]).
  if (packet.will !== undefined && packet.will !== null) {
    if ((packet.will.qos ?? 0) > 1) return { reason: Reason.QOS_NOT_SUPPORTED, text: 'Will QoS 2 is not supported; Maximum QoS is 1' };
    if (packet.will.retain) return { reason: Reason.RETAIN_NOT_SUPPORTED, text: 'a retained Will is not supported' };
  }
  return undefined;
}

/** SUBSCRIBE: at least one filter ([MQTT-3.8.3-2]); MQTT 5 rules on its properties and options. */
export function subscribeViolation(packet: mqttPacket.ISubscribePacket, v5: boolean): Violation | undefined {
  if (packet.subscriptions.length === 0) return { reason: Reason.PROTOCOL_ERROR, text: 'SUBSCRIBE without a topic filter' };
  if (!v5) return undefined;
  const bad = propertyViolation(packet.properties, SUBSCRIBE_PROPERTIES, 'SUBSCRIBE');
  if (bad !== undefined) return bad;
  // CONNACK said Subscription Identifiers Available 0 (§3.2.2.3.12).
  if (packet.properties?.subscriptionIdentifier !== undefined) {
    return { reason: Reason.SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED, text: 'subscription identifiers are not supported' };
  }
  for (const s of packet.subscriptions) {
    // [MQTT-3.8.3-4]
    if (s.nl === true && s.topic.startsWith('$share/')) return { reason: Reason.PROTOCOL_ERROR, text: 'No Local on a shared subscription' };
  }
  return undefined;
}

/** UNSUBSCRIBE: at least one filter ([MQTT-3.10.3-2]); MQTT 5: User Properties only. */
export function unsubscribeViolation(packet: mqttPacket.IUnsubscribePacket, v5: boolean): Violation | undefined {
  if (packet.unsubscriptions.length === 0) return { reason: Reason.PROTOCOL_ERROR, text: 'UNSUBSCRIBE without a topic filter' };
  return v5 ? propertyViolation(packet.properties, UNSUBSCRIBE_PROPERTIES, 'UNSUBSCRIBE') : undefined;
}

/**
 * A client's MQTT 5 DISCONNECT; `connectExpiry` is the Session Expiry Interval its CONNECT asked
 * for. §3.14.2.2.2: a non-zero interval after 0 is a Protocol Error (the DISCONNECT is not valid).
 */
export function disconnectViolation(packet: mqttPacket.IDisconnectPacket, connectExpiry: number): Violation | undefined {
  const bad = propertyViolation(packet.properties, DISCONNECT_PROPERTIES, 'DISCONNECT');
  if (bad !== undefined) return bad;
  const expiry = packet.properties?.sessionExpiryInterval;
  if (connectExpiry === 0 && expiry !== undefined && expiry !== 0) return { reason: Reason.PROTOCOL_ERROR, text: 'Session Expiry Interval set on DISCONNECT after 0 on CONNECT' };
  return undefined;
}
