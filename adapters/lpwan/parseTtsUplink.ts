/**
 * The Things Stack webhook messages (JSON format, ttn.lorawan.v3.ApplicationUp): an uplink is a
 * message with `uplink_message`; any other message type posted to the uplink path (join accept,
 * downlink events, …) is acknowledged and ignored. Fields read:
 *   end_device_ids.dev_eui                     the binding key (a device without DevEUI cannot be bound)
 *   end_device_ids.application_ids.application_id   must be the webhook secret's application
 *   uplink_message.frm_payload                 base64; absent means empty (empty fields are omitted)
 *   uplink_message.f_port                      1–255
 *   uplink_message.received_at                 Network Server receive time → the states' time;
 *                                              else the message's received_at (Application Server)
 *   uplink_message.f_cnt                       with the DevEUI and uplink_message.received_at, the
 *                                              message's identity (see below)
 *   simulated                                  an uplink simulated in the console is no measurement:
 *                                              acknowledged `ignored`, never stored
 * Everything else (rx_metadata, decoded_payload, settings, …) is ignored.
 *
 * Identity of a message (the uplink id derives from it, engine/lpwan/LpwanUplinkIntake.ts): the
 * frame counter with the Network Server's receive time — the same in every delivery of the
 * message (webhook retries, a message re-sent), different for every frame even after the counter
 * resets. JSON omits f_cnt 0, so absent means 0. Without uplink_message.received_at the message's
 * received_at (set once by the Application Server) stands in; correlation ids are not used: which
 * ones a message carries varies between versions and deployments of The Things Stack.
 */
import type { LpwanUplink } from '../../engine/lpwan/LpwanUplinkIntake.ts';
import { parseTimestamp } from '../../engine/uplink/admission/parseTimestamp.ts';
import { badShape, checkDevEui, decodeBase64, type ParsedWebhook } from './parseWebhook.ts';
import { isPlainObject } from '../../engine/kernel/isPlainObject.ts';

/** ApplicationUp message types other than uplinks (named in the `ignored` reason). */
const OTHER_TYPES = [
  'uplink_normalized', 'join_accept', 'downlink_ack', 'downlink_nack', 'downlink_sent', 'downlink_failed',
  'downlink_queued', 'downlink_queue_invalidated', 'location_solved', 'service_data',
];

function time(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = typeof value === 'string' ? parseTimestamp(value) : NaN;
  if (Number.isNaN(ms)) throw badShape(`${field} must be an RFC 3339 timestamp`);
  return ms;
}

export function parseTtsUplink(doc: unknown): ParsedWebhook {
  if (!isPlainObject(doc)) throw badShape('a The Things Stack message is a JSON object');
  const ids = doc.end_device_ids;
  if (!isPlainObject(ids) || !isPlainObject(ids.application_ids) || typeof ids.application_ids.application_id !== 'string') {
    throw badShape('not a The Things Stack message: end_device_ids.application_ids.application_id missing');
  }
  const applicationId = ids.application_ids.application_id;
  const up = doc.uplink_message;
  if (up === undefined) {
    const type = OTHER_TYPES.find((t) => t in doc);
    return { kind: 'ignored', reason: type === undefined ? 'no uplink_message' : `${type} is not an uplink` };
  }
  if (!isPlainObject(up)) throw badShape('uplink_message must be an object');
  if (doc.simulated === true || up.simulated === true) {
    return { kind: 'ignored', reason: 'a simulated uplink (sent from The Things Stack console) is not a measurement of the device: not stored' };
  }
  const devEui = checkDevEui(ids.dev_eui, 'end_device_ids.dev_eui');
  const fPort = up.f_port;
  if (fPort !== undefined && !(Number.isInteger(fPort) && (fPort as number) >= 1 && (fPort as number) <= 255)) {
    throw badShape('uplink_message.f_port must be an integer 1–255');
  }
  const nsReceivedAt = time(up.received_at, 'uplink_message.received_at');
  const asReceivedAt = time(doc.received_at, 'received_at');
  const receivedAt = nsReceivedAt ?? asReceivedAt;
  const fCnt = up.f_cnt ?? 0;
  if (!(Number.isSafeInteger(fCnt) && (fCnt as number) >= 0)) throw badShape('uplink_message.f_cnt must be a non-negative integer');
  const uplink: LpwanUplink = {
    networkId: 'thethingsnetwork',
    devEui,
    payload: up.frm_payload === undefined ? new Uint8Array(0) : decodeBase64(up.frm_payload, 'uplink_message.frm_payload'),
  };
  if (fPort !== undefined) uplink.fPort = fPort as number;
  if (receivedAt !== undefined) uplink.receivedAt = receivedAt;
  if (nsReceivedAt !== undefined) uplink.messageKey = `f_cnt ${fCnt as number} ns ${nsReceivedAt}`;
  else if (asReceivedAt !== undefined) uplink.messageKey = `f_cnt ${fCnt as number} as ${asReceivedAt}`;
  return { kind: 'uplink', uplink, applicationId };
}
