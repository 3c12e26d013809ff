/**
 * What the LPWAN webhook parsers share: the parse result, shape errors, and strict decoding of
 * payload fields (base64 from The Things Stack, hex from LORIOT).
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import type { LpwanUplink, PayloadProblem } from '../../engine/lpwan/LpwanUplinkIntake.ts';
import { isPlainObject } from '../../engine/kernel/isPlainObject.ts';

export type ParsedWebhook =
  | {
    kind: 'uplink';
    uplink: LpwanUplink;
    /** The application the message says it comes from (The Things Stack), checked against the webhook's secret. */
    applicationId?: string;
  }
  | { kind: 'ignored'; reason: string };

/** A message of the wrong shape: a retry cannot help, so 400 (the network server does not retry 4xx). */
export function badShape(message: string): FleetError {
  return new FleetError('BAD_REQUEST', message);
}

const DEV_EUI = /^[0-9A-Fa-f]{16}$/;

export function checkDevEui(value: unknown, field: string): string {
  if (typeof value !== 'string' || !DEV_EUI.test(value)) throw badShape(`${field} must be a DevEUI of 16 hex digits`);
  return value;
}

/** Padded standard base64 (RFC 4648 §4), the form The Things Stack writes. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const HEX = /^(?:[0-9A-Fa-f]{2})*$/;

function problem(reason: string): PayloadProblem {
  return { code: 'MALFORMED_PAYLOAD', reason };
}

/** Buffer.from(…, 'base64') skips what it cannot read; the pattern makes a damaged payload a problem instead. */
export function decodeBase64(value: unknown, field: string): Uint8Array | PayloadProblem {
  if (typeof value !== 'string') return problem(`${field} must be a base64 string`);
  if (!BASE64.test(value)) return problem(`${field} is not valid base64`);
  const buffer = Buffer.from(value, 'base64');
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

export function decodeHex(value: unknown, field: string): Uint8Array | PayloadProblem {
  if (typeof value !== 'string') return problem(`${field} must be a hex string`);
  if (!HEX.test(value)) return problem(`${field} is not an even number of hex digits`);
  const buffer = Buffer.from(value, 'hex');
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}
