/**
 * Where webhooks may go, checked when an integration is created (the sender checks again at every
 * connection: webhook-sender.test.ts). Names are resolved by an injected resolver here, except
 * `localhost`, which the system resolves to loopback.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { embeddedIpv4, isForbiddenAddress, outboundPolicy, parseAllowHosts } from '../../../adapters/webhooks/OutboundPolicy.ts';
import { checkWebhookUrl, parseWebhookUrl } from '../../../adapters/webhooks/webhookUrl.ts';
import { checkCustomHeaders } from '../../../engine/integrations/customHeaders.ts';

const none = outboundPolicy([]);
const publicDns = async () => ['93.184.215.14'];

async function code(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(() => undefined, (e: { code?: string }) => e.code ?? 'NO_CODE');
}

test('internal addresses are forbidden, in every IPv4 and IPv6 form', () => {
  for (const a of ['127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.64.0.1', '100.127.255.255',
    '0.0.0.0', '224.0.0.1', '255.255.255.255', '::', '::1', 'fc00::1', 'fd00:ec2::254', 'fe80::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '::ffff:10.0.0.1', '::127.0.0.1', '64:ff9b::127.0.0.1', '64:ff9b::a00:1', '2002:7f00:1::', '2002:a9fe:a9fe::1', 'fe80::1%eth0', 'not an address']) {
    assert.ok(isForbiddenAddress(a), a);
  }
  for (const a of ['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) {
    assert.not.ok(isForbiddenAddress(a), a);
  }
  assert.is(embeddedIpv4('::ffff:7f00:1'), '127.0.0.1');
  assert.is(embeddedIpv4('2606:4700::1111'), undefined);
});

test('create time: literal internal addresses and their disguises are refused', async () => {
  for (const url of ['https://127.0.0.1/', 'https://[::1]/', 'https://10.0.0.7/hook', 'https://169.254.169.254/latest/meta-data/', 'https://[fd00:ec2::254]/',
    'https://2130706433/', 'https://0x7f.1/', 'https://017700000001/', 'https://127.1/', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:a9fe:a9fe]/', 'https://0/', 'https://100.64.1.1/']) {
    assert.is(await code(checkWebhookUrl(url, none, publicDns)), 'DESTINATION_REFUSED', url);
  }
});

test('create time: a name resolving to loopback is refused (localhost, by the system resolver)', async () => {
  assert.is(await code(checkWebhookUrl('https://localhost/hook', none)), 'DESTINATION_REFUSED');
  assert.is(await code(checkWebhookUrl('https://LOCALHOST./hook', none)), 'DESTINATION_REFUSED');
});

test('create time: one internal address among public ones refuses the name', async () => {
  assert.is(await code(checkWebhookUrl('https://mixed.example/', none, async () => ['93.184.215.14', '10.0.0.1'])), 'DESTINATION_REFUSED');
  assert.is(await code(checkWebhookUrl('https://ok.example/', none, async () => ['93.184.215.14', '2606:4700::1111'])), undefined);
});

test('create time: a name that does not resolve yet is kept over https, refused over http', async () => {
  const nx = async () => { throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }); };
  assert.is(await code(checkWebhookUrl('https://not-yet.example/', none, nx)), undefined);
  assert.is(await code(checkWebhookUrl('http://not-yet.example/', none, nx)), 'DESTINATION_REFUSED');
  const broken = async () => { throw new Error('resolver exploded'); };
  assert.is(await code(checkWebhookUrl('https://x.example/', none, broken)), 'NO_CODE', 'an unexpected failure is not taken for "no such name"');
});

test('plain http:// only to allowed hosts; the allow list takes names and CIDRs', async () => {
  assert.is(await code(checkWebhookUrl('http://93.184.215.14/', none)), 'DESTINATION_REFUSED');
  assert.is(await code(checkWebhookUrl('http://public.example/', none, publicDns)), 'DESTINATION_REFUSED');
  const policy = outboundPolicy(parseAllowHosts(' receiver.internal , 10.20.0.0/16,::1,127.0.0.1 '));
  assert.is(await code(checkWebhookUrl('http://receiver.internal:8080/in', policy, async () => ['10.99.0.1'])), undefined, 'by name: its addresses are the operator\'s business');
  assert.is(await code(checkWebhookUrl('http://RECEIVER.internal./in', policy)), undefined);
  assert.is(await code(checkWebhookUrl('http://10.20.3.4/in', policy)), undefined);
  assert.is(await code(checkWebhookUrl('http://10.21.3.4/in', policy)), 'DESTINATION_REFUSED');
  assert.is(await code(checkWebhookUrl('https://10.21.3.4/in', policy)), 'DESTINATION_REFUSED');
  assert.is(await code(checkWebhookUrl('http://[::1]:9000/in', policy)), undefined);
  assert.is(await code(checkWebhookUrl('http://127.0.0.1:9000/in', policy)), undefined);
  assert.is(await code(checkWebhookUrl('http://2130706433:9000/in', policy)), undefined, 'the same address, however written');
  assert.is(await code(checkWebhookUrl('http://127.0.0.2/in', policy)), 'DESTINATION_REFUSED');
  assert.is(await code(checkWebhookUrl('http://other.internal/in', policy, async () => ['10.20.0.9'])), undefined, 'a name whose addresses are all allowed');
});

test('bad allow list entries are refused, naming them', () => {
  for (const bad of ['10.0.0.0/33', '::1/129', 'bad host', 'a/b', '10.0.0.0/x', 'http://x.example', '-x.example']) {
    assert.throws(() => outboundPolicy([bad]), (e: Error & { code?: string }) => e.code === 'VALIDATION_FAILED' && e.message.includes(JSON.stringify(bad)), bad);
  }
  assert.equal(parseAllowHosts(undefined), []);
  assert.equal(parseAllowHosts(',, a.example ,'), ['a.example']);
});

test('URL forms: https or http, a host, no credentials, no fragment, no control characters, bounded length', () => {
  for (const bad of [undefined, 42, '', 'hook.example/path', 'ftp://x.example/', 'javascript:alert(1)', 'file:///etc/passwd', 'https://user:pass@x.example/',
    'https://x.example/#frag', 'https://x.example/a\nb', 'https://x.example/a b', 'https://x.example/\u0000', 'https://' + 'a'.repeat(2050) + '.example/', 'https://[::1/']) {
    assert.throws(() => parseWebhookUrl(bad), (e: Error & { code?: string }) => e.code === 'VALIDATION_FAILED', String(bad));
  }
  assert.is(parseWebhookUrl('https://X.example:8443/in?q=1').href, 'https://x.example:8443/in?q=1');
});

test('custom headers: names are tokens (case ignored), values visible ASCII, reserved ones refused, at most 20', () => {
  assert.equal(checkCustomHeaders({ 'X-Api-Key': 'abc', Authorization: 'Bearer t' }), { 'x-api-key': 'abc', authorization: 'Bearer t' });
  const field = (headers: unknown) => { try { checkCustomHeaders(headers); return 'accepted'; } catch (e) { return (e as { detail?: { field?: string } }).detail?.field; } };
  assert.is(field([]), 'headers');
  assert.is(field('x'), 'headers');
  assert.is(field(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v']))), 'headers');
  assert.is(field({ 'Webhook-Signature': 'v1,x' }), 'headers.Webhook-Signature');
  assert.is(field({ 'webhook-anything': 'x' }), 'headers.webhook-anything');
  for (const name of ['content-type', 'Content-Length', 'host', 'Transfer-Encoding', 'connection', 'user-agent']) assert.is(field({ [name]: 'x' }), `headers.${name}`, name);
  assert.is(field({ 'x a': 'v' }), 'headers.x a');
  assert.is(field({ 'x-ü': 'v' }), 'headers.x-ü');
  assert.is(field({ 'x-a': 'v', 'X-A': 'w' }), 'headers.X-A');
  for (const value of ['', ' lead', 'trail ', 'a\r\nb: c', 'nul\u0000', 'ü', 'x'.repeat(1025), 7]) assert.is(field({ 'x-v': value }), 'headers.x-v', JSON.stringify(value));
  const proto = JSON.parse('{"__proto__": "v"}');
  assert.equal(Object.keys(checkCustomHeaders(proto)), ['__proto__'], 'a header named __proto__ stays a header');
});

test.run();
