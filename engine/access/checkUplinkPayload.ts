/**
 * What an MQTT edge can refuse synchronously, before an uplink is appended to the log: size,
 * JSON/CBOR syntax and the message shape of spec §2.1/§2.2 (same rules as the HTTP edge). Values
 * are checked against asset profiles later, in the device actor, the one source of truth for what
 * is stored; a value it refuses shows up in the device's rejections.
 */
import type { ContentType } from '../../schemas/messages.ts';
import { decodeCbor } from '../uplink/admission/decodeCbor.ts';
import { MAX_BODY_DEPTH } from '../uplink/admission/processUplink.ts';
import { detectStateFormat, type Decision, type UplinkTarget } from './mqttTopics.ts';
import { isPlainObject } from '../kernel/isPlainObject.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseJson(body: Uint8Array): Decision<unknown> {
  if (body.byteLength === 0) return { ok: false, code: 'MALFORMED_JSON', reason: 'empty payload; expected JSON' };
  try {
    return { ok: true, value: JSON.parse(utf8.decode(body)) };
  } catch (error) {
    return { ok: false, code: 'MALFORMED_JSON', reason: `payload is not valid JSON: ${(error as Error).message.slice(0, 200)}` };
  }
}

/**
 * The content type to record for an accepted payload. `contentType` is the MQTT 5 content type
 * property when the client sent one.
 */
export function checkUplinkPayload(target: UplinkTarget, body: Uint8Array, maxBytes: number, contentType?: string): Decision<ContentType> {
  if (body.byteLength > maxBytes) {
    return { ok: false, code: 'PAYLOAD_TOO_LARGE', reason: `payload of ${body.byteLength} bytes exceeds ${maxBytes}` };
  }
  if (target.asset !== undefined) {
    // Spec §2.1: an asset state is JSON {value, at?}.
    const parsed = parseJson(body);
    if (!parsed.ok) return parsed;
    const v = parsed.value;
    if (!isPlainObject(v) || !Object.hasOwn(v, 'value')) return { ok: false, code: 'INVALID_STATE', reason: 'an asset state is a JSON object {value, at?}' };
    if (v.at !== undefined && typeof v.at !== 'string') return { ok: false, code: 'INVALID_AT', reason: '`at` must be an ISO 8601 timestamp string' };
    return { ok: true, value: 'json' };
  }
  const format = detectStateFormat(body, contentType);
  if (format === 'json') {
    const parsed = parseJson(body);
    if (!parsed.ok) return parsed;
    if (!isPlainObject(parsed.value)) return { ok: false, code: 'INVALID_STATE', reason: 'a device state is a JSON object: asset name → {value, at?}' };
    return { ok: true, value: 'json' };
  }
  if (body.byteLength === 0) return { ok: false, code: 'MALFORMED_CBOR', reason: 'empty payload; expected CBOR' };
  try {
    decodeCbor(body, MAX_BODY_DEPTH);
  } catch (error) {
    return { ok: false, code: 'MALFORMED_CBOR', reason: `payload is not well-formed CBOR: ${(error as Error).message.slice(0, 200)}` };
  }
  return { ok: true, value: 'cbor' };
}
