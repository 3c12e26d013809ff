/**
 * Signing of outbound webhooks per the Standard Webhooks specification (standardwebhooks.com,
 * "Signature scheme"): the receiver checks the headers `webhook-id`, `webhook-timestamp` and
 * `webhook-signature` against the body it got, with a secret shared once, when the integration was
 * created or its secret rotated.
 *
 * - The secret is `whsec_` followed by the base64 of 24 to 64 random bytes; the decoded bytes are
 *   the HMAC key (spec: "the secret … is base64 encoded and prefixed with whsec_").
 * - The signed content is `<webhook-id>.<webhook-timestamp>.<body>`, the body exactly as sent.
 * - The signature is `v1,` and the base64 of its HMAC-SHA256. Several signatures are separated by
 *   spaces (spec: to allow zero-downtime secret rotation), one per secret still valid.
 * - The timestamp is in integer seconds since the epoch; receivers refuse one too far from their
 *   clock, which is what stops a captured request being replayed later.
 *
 * Only signing lives here: verification belongs to receivers, and the tests check these headers
 * with an implementation written from the specification and with the `standardwebhooks` package.
 */
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { FleetError } from '../kernel/errors.ts';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Random bytes of a new secret: the specification asks for 24 to 64; 32 is HMAC-SHA256's block of key worth having. */
export const WEBHOOK_SECRET_BYTES = 32;
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;
const BASE64_RE = /^[A-Za-z0-9+/]+={0,2}$/;
/** The spec's webhook-id: "a unique identifier for the webhook message"; printable, no separator characters. */
const WEBHOOK_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

export interface WebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** A new secret, `whsec_<base64 of WEBHOOK_SECRET_BYTES random bytes>`. */
export function newWebhookSecret(bytes: number = WEBHOOK_SECRET_BYTES): string {
  if (!Number.isInteger(bytes) || bytes < MIN_SECRET_BYTES || bytes > MAX_SECRET_BYTES) {
    throw new RangeError(`webhook secret: ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes`);
  }
  return WEBHOOK_SECRET_PREFIX + randomBytes(bytes).toString('base64');
}

/** The HMAC key of a `whsec_` secret; VALIDATION_FAILED when it is not one. */
export function webhookSecretKey(secret: string): Buffer {
  const encoded = typeof secret === 'string' && secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : '';
  const key = BASE64_RE.test(encoded) && encoded.length % 4 === 0 ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
  if (key.length < MIN_SECRET_BYTES || key.length > MAX_SECRET_BYTES) {
    throw new FleetError('VALIDATION_FAILED', `secret: whsec_ and the base64 of ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes`, { detail: { field: 'secret' } });
  }
  return key;
}

/** HMAC keys of the secrets in use, as key objects: HMAC from one takes a third less time than from bytes. */
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 1024;

function hmacKey(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    key = createSecretKey(webhookSecretKey(secret));
    keys.set(secret, key);
    if (keys.size > MAX_KEYS) keys.delete(keys.keys().next().value!);
  }
  return key;
}

export interface WebhookMessage {
  /** The message's id, the same on every attempt so receivers can drop a repeat. */
  id: string;
  /** Seconds since the epoch, of this attempt. */
  timestamp: number;
  /** The request body exactly as sent (a string is signed as its UTF-8 bytes). */
  body: string | Uint8Array;
}

/**
 * The three headers of one request, signed with each of `secrets` (the current one first; during a
 * rotation's grace period the previous one too, so a receiver on either secret accepts it).
 */
export function signWebhook(message: WebhookMessage, secrets: readonly string[]): WebhookHeaders {
  if (!WEBHOOK_ID_RE.test(message.id)) throw new FleetError('VALIDATION_FAILED', 'webhook-id: 1 to 64 of A-Z a-z 0-9 _ -', { detail: { field: 'id' } });
  if (!Number.isSafeInteger(message.timestamp) || message.timestamp < 0) throw new RangeError('webhook-timestamp: whole seconds since the epoch');
  if (secrets.length === 0) throw new RangeError('signWebhook: at least one secret');
  const timestamp = String(message.timestamp);
  const body = typeof message.body === 'string' ? Buffer.from(message.body, 'utf8') : message.body;
  const signatures = secrets.map((secret) => {
    const hmac = createHmac('sha256', hmacKey(secret));
    hmac.update(`${message.id}.${timestamp}.`, 'utf8');
    hmac.update(body);
    return `v1,${hmac.digest('base64')}`;
  });
  return { 'webhook-id': message.id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}
