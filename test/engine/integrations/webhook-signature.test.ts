/**
 * Signed webhooks are checked by verifiers that are not the code under test: one written here from
 * the text of the Standard Webhooks specification ("Verifying webhooks"), with node:crypto, and the
 * `standardwebhooks` package receivers use.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, signWebhook, webhookSecretKey, type WebhookHeaders } from '../../../engine/integrations/webhookSignature.ts';
import { specVerify, TOLERANCE_S } from '../../support/webhookVerifier.ts';

function libraryVerifies(secret: string, body: string, headers: WebhookHeaders): boolean {
  try {
    new Webhook(secret).verify(body, { ...headers });
    return true;
  } catch {
    return false;
  }
}

const nowS = () => Math.floor(Date.now() / 1000);
const body = JSON.stringify({ events: [{ type: 'state', id: 'e1', groundId: 'g', deviceId: 'd', asset: 'temp', value: 21.5, at: '2026-01-01T00:00:00.000Z' }] });

test('a new secret is whsec_ and the base64 of 32 random bytes, different every time', () => {
  const a = newWebhookSecret();
  const b = newWebhookSecret();
  assert.match(a, /^whsec_[A-Za-z0-9+/]+={0,2}$/);
  assert.is(Buffer.from(a.slice(6), 'base64').length, 32);
  assert.is.not(a, b);
  assert.is(Buffer.from(newWebhookSecret(24).slice(6), 'base64').length, 24);
  assert.throws(() => newWebhookSecret(16), /24 to 64/);
  assert.throws(() => newWebhookSecret(65), /24 to 64/);
});

test('both verifiers accept what is signed, for a text body and for its bytes', () => {
  const secret = newWebhookSecret();
  const headers = signWebhook({ id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', timestamp: nowS(), body }, [secret]);
  assert.is(headers['webhook-id'], 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W');
  assert.match(headers['webhook-timestamp'], /^\d+$/);
  assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
  assert.ok(specVerify(secret, body, headers, nowS()));
  assert.ok(libraryVerifies(secret, body, headers));
  const fromBytes = signWebhook({ id: 'msg_1', timestamp: Number(headers['webhook-timestamp']), body: Buffer.from(body) }, [secret]);
  assert.ok(libraryVerifies(secret, body, fromBytes));
});

test('a body with characters outside ASCII is signed as its UTF-8 bytes', () => {
  const secret = newWebhookSecret();
  const text = JSON.stringify({ events: [{ value: 'Zürich ☃ 𝄞' }] });
  const headers = signWebhook({ id: 'msg_utf8', timestamp: nowS(), body: text }, [secret]);
  assert.ok(specVerify(secret, text, headers, nowS()));
  assert.ok(libraryVerifies(secret, text, headers));
});

test('the signature matches a vector computed by the library itself', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const wh = new Webhook(secret);
  const at = 1_614_265_330;
  const signed = signWebhook({ id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: at, body: '{"test": 2432232314}' }, [secret]);
  assert.is(signed['webhook-signature'], wh.sign('msg_p5jXN8AQM9LWM0D4loKWxJek', new Date(at * 1000), '{"test": 2432232314}'));
});

test('forged: a wrong secret fails both verifiers', () => {
  const secret = newWebhookSecret();
  const headers = signWebhook({ id: 'msg_a', timestamp: nowS(), body }, [newWebhookSecret()]);
  assert.not.ok(specVerify(secret, body, headers, nowS()));
  assert.not.ok(libraryVerifies(secret, body, headers));
});

test('tampered: an altered body, id or timestamp fails both verifiers', () => {
  const secret = newWebhookSecret();
  const headers = signWebhook({ id: 'msg_a', timestamp: nowS(), body }, [secret]);
  const altered = body.replace('21.5', '99.5');
  assert.not.ok(specVerify(secret, altered, headers, nowS()));
  assert.not.ok(libraryVerifies(secret, altered, headers));
  const otherId = { ...headers, 'webhook-id': 'msg_b' };
  assert.not.ok(specVerify(secret, body, otherId, nowS()));
  assert.not.ok(libraryVerifies(secret, body, otherId));
  const laterTimestamp = { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1) };
  assert.not.ok(specVerify(secret, body, laterTimestamp, nowS()));
  assert.not.ok(libraryVerifies(secret, body, laterTimestamp));
  const noVersion = { ...headers, 'webhook-signature': headers['webhook-signature'].replace(/^v1,/, '') };
  assert.not.ok(specVerify(secret, body, noVersion, nowS()));
  assert.not.ok(libraryVerifies(secret, body, noVersion));
});

test('replayed: a request captured and sent again after the tolerance fails, and refreshing its timestamp breaks its signature', () => {
  const secret = newWebhookSecret();
  const old = nowS() - TOLERANCE_S - 60;
  const captured = signWebhook({ id: 'msg_old', timestamp: old, body }, [secret]);
  assert.ok(specVerify(secret, body, captured, old), 'valid when it was sent');
  assert.not.ok(specVerify(secret, body, captured, nowS()));
  assert.not.ok(libraryVerifies(secret, body, captured));
  const refreshed = { ...captured, 'webhook-timestamp': String(nowS()) };
  assert.not.ok(specVerify(secret, body, refreshed, nowS()));
  assert.not.ok(libraryVerifies(secret, body, refreshed));
});

test('with two secrets (a rotation) the header carries a signature each, and a receiver on either accepts', () => {
  const current = newWebhookSecret();
  const previous = newWebhookSecret();
  const headers = signWebhook({ id: 'msg_rot', timestamp: nowS(), body }, [current, previous]);
  assert.is(headers['webhook-signature'].split(' ').length, 2);
  for (const secret of [current, previous]) {
    assert.ok(specVerify(secret, body, headers, nowS()));
    assert.ok(libraryVerifies(secret, body, headers));
  }
  assert.not.ok(libraryVerifies(newWebhookSecret(), body, headers));
});

test('malformed secrets and ids are refused before signing', () => {
  for (const bad of ['', 'whsec_', 'sk_' + Buffer.alloc(32).toString('base64'), 'whsec_' + Buffer.alloc(8).toString('base64'), 'whsec_' + Buffer.alloc(65).toString('base64'), 'whsec_not base64!', 'whsec_' + Buffer.alloc(32).toString('base64url').replace(/A/g, '-')]) {
    assert.throws(() => webhookSecretKey(bad), /secret/, JSON.stringify(bad));
  }
  const secret = newWebhookSecret();
  for (const id of ['', 'a.b', 'a b', 'x'.repeat(65), 'msg\n1']) {
    assert.throws(() => signWebhook({ id, timestamp: nowS(), body }, [secret]), /webhook-id/, JSON.stringify(id));
  }
  assert.throws(() => signWebhook({ id: 'msg_1', timestamp: 1.5, body }, [secret]), /timestamp/);
  assert.throws(() => signWebhook({ id: 'msg_1', timestamp: nowS(), body }, []), /secret/);
});

test.run();
