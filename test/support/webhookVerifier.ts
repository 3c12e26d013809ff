/**
 * A Standard Webhooks verifier written from the specification's text ("Verifying webhooks"), with
 * node:crypto, not with the code under test: strip `whsec_` and base64-decode the rest into the
 * key; sign `${id}.${timestamp}.${body}` with HMAC-SHA256 and base64 it; the header holds
 * space-delimited `v1,<signature>` entries and any one matching suffices; compare in constant time;
 * refuse a timestamp outside the tolerance.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const TOLERANCE_S = 5 * 60;

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export function specVerify(secret: string, body: string, headers: SignedHeaders, nowS = Math.floor(Date.now() / 1000)): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const timestamp = Number(headers['webhook-timestamp']);
  if (!Number.isInteger(timestamp) || Math.abs(nowS - timestamp) > TOLERANCE_S) return false;
  const expected = createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest();
  return String(headers['webhook-signature']).split(' ').some((entry) => {
    const [version, signature] = entry.split(',', 2);
    if (version !== 'v1' || signature === undefined) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
