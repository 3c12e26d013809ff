/**
 * MQTT 5 reason codes the edge sends (MQTT 5.0 §2.4) and the mapping of Fleetstream's stable error
 * codes onto PUBACK reason codes. MQTT 3.1.1 has none of these: a refused publish is acknowledged
 * and dropped, a refused subscription gets SUBACK 0x80 ([MQTT-3.9.3]).
 */
import type { ErrorCode } from '../../../engine/kernel/errors.ts';

export const Reason = {
  SUCCESS: 0x00,
  UNSPECIFIED: 0x80,
  MALFORMED_PACKET: 0x81,
  PROTOCOL_ERROR: 0x82,
  IMPLEMENTATION_SPECIFIC: 0x83,
  UNSUPPORTED_PROTOCOL_VERSION: 0x84,
  CLIENT_ID_NOT_VALID: 0x85,
  BAD_USER_NAME_OR_PASSWORD: 0x86,
  NOT_AUTHORIZED: 0x87,
  SERVER_UNAVAILABLE: 0x88,
  SERVER_BUSY: 0x89,
  SERVER_SHUTTING_DOWN: 0x8b,
  BAD_AUTHENTICATION_METHOD: 0x8c,
  KEEP_ALIVE_TIMEOUT: 0x8d,
  SESSION_TAKEN_OVER: 0x8e,
  TOPIC_FILTER_INVALID: 0x8f,
  TOPIC_NAME_INVALID: 0x90,
  PACKET_IDENTIFIER_NOT_FOUND: 0x92,
  RECEIVE_MAXIMUM_EXCEEDED: 0x93,
  TOPIC_ALIAS_INVALID: 0x94,
  PACKET_TOO_LARGE: 0x95,
  QUOTA_EXCEEDED: 0x97,
  ADMINISTRATIVE_ACTION: 0x98,
  PAYLOAD_FORMAT_INVALID: 0x99,
  RETAIN_NOT_SUPPORTED: 0x9a,
  QOS_NOT_SUPPORTED: 0x9b,
  SHARED_SUBSCRIPTIONS_NOT_SUPPORTED: 0x9e,
  CONNECTION_RATE_EXCEEDED: 0x9f,
  SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED: 0xa1,
  WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED: 0xa2,
} as const;

/**
 * The codes a DISCONNECT may carry ([MQTT-3.14.2-1], §3.14.2.1): CONNACK-only codes such as 0x88
 * Server unavailable or 0x8C Bad authentication method are not among them.
 */
export type DisconnectReason = (typeof Reason)[
  | 'SUCCESS' | 'UNSPECIFIED' | 'MALFORMED_PACKET' | 'PROTOCOL_ERROR' | 'IMPLEMENTATION_SPECIFIC' | 'NOT_AUTHORIZED'
  | 'SERVER_BUSY' | 'SERVER_SHUTTING_DOWN' | 'KEEP_ALIVE_TIMEOUT' | 'SESSION_TAKEN_OVER' | 'TOPIC_FILTER_INVALID'
  | 'TOPIC_NAME_INVALID' | 'RECEIVE_MAXIMUM_EXCEEDED' | 'TOPIC_ALIAS_INVALID' | 'PACKET_TOO_LARGE' | 'QUOTA_EXCEEDED'
  | 'ADMINISTRATIVE_ACTION' | 'PAYLOAD_FORMAT_INVALID' | 'RETAIN_NOT_SUPPORTED' | 'QOS_NOT_SUPPORTED'
  | 'SHARED_SUBSCRIPTIONS_NOT_SUPPORTED' | 'CONNECTION_RATE_EXCEEDED' | 'SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED'
  | 'WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED'];

/** MQTT 3.1.1 CONNACK return codes ([MQTT-3.2.2.3]). */
export const ReturnCode311 = {
  UNACCEPTABLE_PROTOCOL_VERSION: 1,
  IDENTIFIER_REJECTED: 2,
  SERVER_UNAVAILABLE: 3,
  BAD_USER_NAME_OR_PASSWORD: 4,
  NOT_AUTHORIZED: 5,
} as const;

/** The PUBACK reason code of a refused uplink (MQTT 5 §3.4.2.1 allows 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99). */
export function pubackReason(code: ErrorCode): number {
  switch (code) {
    case 'FORBIDDEN':
    case 'UNAUTHORIZED':
    case 'UNKNOWN_DEVICE':
      return Reason.NOT_AUTHORIZED;
    case 'UNKNOWN_ASSET':
      // The topic names an asset the device does not have.
      return Reason.TOPIC_NAME_INVALID;
    case 'MALFORMED_JSON':
    case 'MALFORMED_CBOR':
    case 'MALFORMED_PAYLOAD':
    case 'UNSUPPORTED_CONTENT_TYPE':
    case 'INVALID_STATE':
    case 'INVALID_AT':
    case 'INVALID_TEXT':
    case 'PROFILE_VIOLATION':
    case 'DUPLICATE_READING':
    case 'TOO_DEEP':
    case 'DECODE_FAILED':
      return Reason.PAYLOAD_FORMAT_INVALID;
    case 'RATE_LIMITED':
    case 'QUOTA_EXCEEDED':
      // The ground's states per second (docs/grounds.md "Quotas").
      return Reason.QUOTA_EXCEEDED;
    default:
      // PAYLOAD_TOO_LARGE (the packet fit, the payload is above the uplink limit), PROCESSING_FAILED:
      // "the PUBLISH is valid but the receiver is not willing to accept it".
      return Reason.IMPLEMENTATION_SPECIFIC;
  }
}
