/**
 * The sender against real receivers on loopback: each outcome of the list, and the SSRF
 * guard at connect time. Loopback receivers are reached by a sender whose operator allows
 * 127.0.0.0/8; the guard is tested with a sender that allows nothing.
 */
import { lookup as systemLookup, type LookupAddress } from 'node:dns';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '../../../engine/integrations/webhookSignature.ts';
import { outboundPolicy } from '../../../adapters/webhooks/OutboundPolicy.ts';
import { checkWebhookUrl } from '../../../adapters/webhooks/webhookUrl.ts';
import { WebhookSender, type WebhookRequest } from '../../../adapters/webhooks/WebhookSender.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhookReceiver.ts';

const secret = newWebhookSecret();
const events = [{ type: 'state', id: 'e1', groundId: 'g1', deviceId: 'd1', asset: 'temp', value: 21.5, at: '2026-11-28T12:00:00.000Z', receivedAt: '2026-11-28T12:00:00.010Z' }];
const allowed = new WebhookSender({ policy: outboundPolicy(['127.0.0.0/8', '::1']), timeoutMs: 2000 });
const guarded = new WebhookSender({ policy: outboundPolicy([]), timeoutMs: 2000 });
const receivers: WebhookReceiver[] = [];

async function receiver(answer: Parameters<typeof startWebhookReceiver>[0], host?: string): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver(answer, host);
  receivers.push(r);
  return r;
}

function request(url: string, extra: Partial<WebhookRequest> = {}): WebhookRequest {
  return { url, messageId: 'msg_1', events, secrets: [secret], ...extra };
}

test.after(async () => {
  allowed.close();
  guarded.close();
  await Promise.all(receivers.map((r) => r.close()));
});

test('2xx: delivered, the body is {"events":[…]}, signed so that standardwebhooks verifies it, with the custom headers', async () => {
  const r = await receiver((_req, res) => res.writeHead(204).end());
  const answer = await allowed.send(request(r.url, { headers: { 'X-Api-Key': 'k-123', authorization: 'Bearer abc' } }));
  assert.equal(answer.outcome, { kind: 'delivered', status: 204 });
  assert.is(answer.status, 204);
  assert.is(r.received.length, 1);
  const got = r.received[0];
  assert.equal(JSON.parse(got.body), { events });
  assert.is(got.headers['content-type'], 'application/json');
  assert.is(got.headers['x-api-key'], 'k-123');
  assert.is(got.headers['authorization'], 'Bearer abc');
  assert.is(got.headers['webhook-id'], 'msg_1');
  const verified = new Webhook(secret).verify(got.body, got.headers as Record<string, string>);
  assert.equal(verified, { events });
});

test('K failures then success: each attempt a retry until the 2xx, all with the same webhook-id', async () => {
  const r = await receiver((_req, res, i) => res.writeHead(i < 3 ? 500 : 200).end(i < 3 ? 'boom' : 'ok'));
  const outcomes = [];
  for (let i = 0; i < 4; i++) outcomes.push((await allowed.send(request(r.url, { messageId: 'msg_stable' }))).outcome);
  assert.equal(outcomes.map((o) => o.kind), ['retry', 'retry', 'retry', 'delivered']);
  assert.equal(outcomes[0], { kind: 'retry', reason: 'status', status: 500 });
  assert.equal(r.received.map((x) => x.headers['webhook-id']), ['msg_stable', 'msg_stable', 'msg_stable', 'msg_stable']);
  for (const x of r.received) new Webhook(secret).verify(x.body, x.headers as Record<string, string>);
});

test('429 and 503 with Retry-After: retry after what the receiver asked', async () => {
  const date = new Date(Date.now() + 90_000).toUTCString();
  const r = await receiver((_req, res, i) => (i === 0 ? res.writeHead(429, { 'retry-after': '120' }) : res.writeHead(503, { 'retry-after': date })).end());
  const first = await allowed.send(request(r.url));
  assert.equal(first.outcome, { kind: 'retry', reason: 'status', status: 429, retryAfterMs: 120_000 });
  const second = await allowed.send(request(r.url));
  assert.is(second.outcome.kind, 'retry');
  const after = second.outcome.kind === 'retry' ? second.outcome.retryAfterMs ?? -1 : -1;
  assert.ok(after > 80_000 && after <= 90_000, String(after));
});

test('a receiver that never answers: a timeout, retried', async () => {
  const r = await receiver(() => undefined);
  const sender = new WebhookSender({ policy: outboundPolicy(['127.0.0.1']), timeoutMs: 150 });
  const answer = await sender.send(request(r.url));
  sender.close();
  assert.is(r.received.length, 1);
  assert.equal(answer.outcome, { kind: 'retry', reason: 'timeout' });
  assert.match(answer.error ?? '', /timed out/);
});

test('a receiver that answers its head and then stalls in the body: a timeout too', async () => {
  const r = await receiver((_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('partial');
  });
  const sender = new WebhookSender({ policy: outboundPolicy(['127.0.0.1']), timeoutMs: 150 });
  const answer = await sender.send(request(r.url));
  sender.close();
  assert.equal(answer.outcome, { kind: 'retry', reason: 'timeout' });
});

test('410 Gone disables', async () => {
  const r = await receiver((_req, res) => res.writeHead(410).end('gone for good'));
  const answer = await allowed.send(request(r.url));
  assert.equal(answer.outcome, { kind: 'disable', reason: 'gone', status: 410 });
  assert.is(answer.body, 'gone for good');
});

test('a connection closed without an answer, and a port nobody listens on: connection errors, retried', async () => {
  const r = await receiver((req) => req.socket.destroy());
  const closed = await allowed.send(request(r.url));
  assert.equal(closed.outcome, { kind: 'retry', reason: 'connection' });
  assert.match(closed.error ?? '', /^ECONNRESET|socket hang up/);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const refused = await allowed.send(request(`http://127.0.0.1:${port}/hook`));
  assert.equal(refused.outcome, { kind: 'retry', reason: 'connection' });
  assert.match(refused.error ?? '', /^ECONNREFUSED/);
});

test('a redirect is not followed, even to an allowed loopback receiver: a 3xx is a failure', async () => {
  const target = await receiver((_req, res) => res.writeHead(200).end());
  const r = await receiver((_req, res) => res.writeHead(307, { location: target.url }).end());
  const answer = await allowed.send(request(r.url));
  assert.equal(answer.outcome, { kind: 'retry', reason: 'status', status: 307 });
  assert.is(target.received.length, 0);
});

test('the answer body is read up to 64 KiB: an endless 200 is delivered, not timed out, and kept short', async () => {
  const r = await receiver((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const chunk = 'x'.repeat(16_384);
    const pump = () => { while (res.write(chunk)); };
    res.on('drain', pump);
    pump();
  });
  const sender = new WebhookSender({ policy: outboundPolicy(['127.0.0.1']), timeoutMs: 5000 });
  const answer = await sender.send(request(r.url));
  sender.close();
  assert.equal(answer.outcome, { kind: 'delivered', status: 200 });
  assert.is(answer.body.length, 1024);
});

test('SSRF: addresses of the machine, its networks and the cloud metadata endpoint are refused before connecting', async () => {
  const r = await receiver((_req, res) => res.writeHead(200).end());
  const port = r.port;
  for (const url of [
    `https://127.0.0.1:${port}/`, `https://[::1]:${port}/`, 'https://10.1.2.3/', 'https://172.20.0.1/', 'https://192.168.1.1/',
    'https://169.254.169.254/latest/meta-data/', 'https://[fd00:ec2::254]/', 'https://100.64.0.1/', 'https://0.0.0.0/',
    `https://2130706433:${port}/`, `https://0x7f.1:${port}/`, `https://017700000001:${port}/`, `https://[::ffff:127.0.0.1]:${port}/`,
    'https://[::ffff:169.254.169.254]/', 'https://[64:ff9b::a9fe:a9fe]/', 'https://[fe80::1]/',
  ]) {
    const answer = await guarded.send(request(url));
    assert.equal(answer.outcome, { kind: 'retry', reason: 'refused' }, url);
    assert.match(answer.error ?? '', /^EDESTINATIONREFUSED/, url);
  }
  assert.is(r.received.length, 0);
});

test('SSRF: a name resolving to loopback is refused at connect time', async () => {
  const r = await receiver((_req, res) => res.writeHead(200).end());
  const answer = await guarded.send(request(`https://localhost:${r.port}/hook`));
  assert.equal(answer.outcome, { kind: 'retry', reason: 'refused' });
  assert.match(answer.error ?? '', /localhost resolves to/);
  assert.is(r.received.length, 0);
});

test('SSRF: plain http:// goes only to allowed hosts', async () => {
  const answer = await guarded.send(request('http://93.184.215.14/hook'));
  assert.equal(answer.outcome, { kind: 'retry', reason: 'refused' });
  assert.match(answer.error ?? '', /plain http/);
});

test('DNS rebinding: a name checked public when created and loopback when connecting is refused then', async () => {
  const r = await receiver((_req, res) => res.writeHead(200).end());
  let answers = 0;
  const rebinding = ((_host: string, _options: object, callback: (e: null, a: LookupAddress[]) => void) => {
    answers++;
    callback(null, [{ address: answers === 1 ? '93.184.215.14' : '127.0.0.1', family: 4 }]);
  }) as unknown as typeof systemLookup;
  const url = `https://rebind.example:${r.port}/hook`;
  const policy = outboundPolicy([]);
  await checkWebhookUrl(url, policy, async (host) => new Promise((resolve) => rebinding(host, {}, ((_e: null, a: LookupAddress[]) => resolve(a.map((x) => x.address))) as never)));
  const sender = new WebhookSender({ policy, dnsLookup: rebinding, timeoutMs: 2000 });
  const answer = await sender.send(request(url));
  sender.close();
  assert.equal(answer.outcome, { kind: 'retry', reason: 'refused' });
  assert.match(answer.error ?? '', /rebind\.example resolves to 127\.0\.0\.1/);
  assert.is(r.received.length, 0);
});

test('the address connected to is the one the lookup checked', async () => {
  const r = await receiver((_req, res) => res.writeHead(200).end());
  const lookups: string[] = [];
  const resolveTo = ((host: string, _options: object, callback: (e: null, a: LookupAddress[]) => void) => {
    lookups.push(host);
    callback(null, [{ address: '127.0.0.1', family: 4 }]);
  }) as unknown as typeof systemLookup;
  const sender = new WebhookSender({ policy: outboundPolicy(['127.0.0.0/8']), dnsLookup: resolveTo, timeoutMs: 2000 });
  const answer = await sender.send(request(`http://receiver.test:${r.port}/hook`));
  sender.close();
  assert.equal(answer.outcome, { kind: 'delivered', status: 200 });
  assert.equal(lookups, ['receiver.test']);
  assert.is(r.received[0].headers.host, `receiver.test:${r.port}`);
});

async function refusedWith(promise: Promise<unknown>, code: string, what: string): Promise<void> {
  const error = await promise.then(() => undefined, (e: unknown) => e as { code?: string });
  assert.ok(error !== undefined, `${what}: sent`);
  assert.is(error.code, code, what);
}

test('custom headers may not override the signature or the framing; malformed requests throw before sending', async () => {
  const r = await receiver((_req, res) => res.writeHead(200).end());
  const overrides: Record<string, string>[] = [{ 'webhook-signature': 'v1,forged' }, { 'Webhook-Id': 'x' }, { 'Content-Type': 'text/plain' }, { host: 'evil.example' }, { 'x-a': 'one\r\nx-b: two' }];
  for (const headers of overrides) {
    await refusedWith(allowed.send(request(r.url, { headers })), 'VALIDATION_FAILED', JSON.stringify(headers));
  }
  await refusedWith(allowed.send(request('ftp://127.0.0.1/')), 'VALIDATION_FAILED', 'ftp');
  await refusedWith(allowed.send(request(r.url, { secrets: ['whsec_short'] })), 'VALIDATION_FAILED', 'a malformed secret');
  assert.is(r.received.length, 0);
});

test.run();
