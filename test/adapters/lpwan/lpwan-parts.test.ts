/**
 * LPWAN pieces on their own: the applications configuration, the network servers' messages from
 * recorded fixtures, the intake's device cache and content types on a simulated clock, and the
 * webhook routes' answers to transient trouble (in-process requests, no sockets).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createEdgeApp } from '../../../adapters/http/createEdgeApp.ts';
import { parseLoriotUplink } from '../../../adapters/lpwan/parseLoriotUplink.ts';
import { parseTtsUplink } from '../../../adapters/lpwan/parseTtsUplink.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { lpwanUplinkId, LpwanUplinkIntake, type LpwanUplink } from '../../../engine/lpwan/LpwanUplinkIntake.ts';
import { StaticLpwanApplications } from '../../../engine/lpwan/StaticLpwanApplications.ts';
import type { Device, Registry } from '../../../engine/ports/registry.ts';
import type { UplinkSubmission } from '../../../engine/uplink/UplinkIngest.ts';
import { UplinkAdmission } from '../../../engine/uplink/UplinkAdmission.ts';
import { compileDevice } from '../../../engine/uplink/admission/compileDevice.ts';
import type { UplinkEnvelope } from '../../../schemas/messages.ts';
import { fakeIngest } from '../../support/fakeIngest.ts';
import { thrownBy } from '../../support/fleetErrors.ts';

const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(`../../fixtures/lpwan/${name}`, import.meta.url), 'utf8'));

const SECRET = 'a-webhook-secret-of-some-length';

function failsWith(f: () => unknown, field: RegExp): void {
  const error = thrownBy(f);
  assert.is(error.code, 'VALIDATION_FAILED');
  assert.match(error.message, field);
}

test('applications: secrets in the clear or as SHA-256, per network, never confused', async () => {
  const apps = new StaticLpwanApplications({
    applications: [
      { networkId: 'thethingsnetwork', applicationId: 'app-one', secret: SECRET },
      { networkId: 'loriot', applicationId: 'BE7A0000', secretSha256: createHash('sha256').update('loriot-secret-0123456789').digest('hex').toUpperCase() },
    ],
  });
  assert.is(apps.size, 2);
  assert.is((await apps.authenticate('thethingsnetwork', SECRET))?.applicationId, 'app-one');
  assert.is((await apps.authenticate('loriot', 'loriot-secret-0123456789'))?.applicationId, 'BE7A0000');
  assert.is(await apps.authenticate('loriot', SECRET), undefined, 'a secret is bound to its network');
  assert.is(await apps.authenticate('thethingsnetwork', `${SECRET} `), undefined);
  assert.is(await apps.authenticate('thethingsnetwork', ''), undefined);
  assert.is(await apps.authenticate('thethingsnetwork', 'x'.repeat(10_000)), undefined);
  assert.is((await apps.get('thethingsnetwork', 'app-one'))?.downlink, undefined);
  assert.is(await apps.get('thethingsnetwork', 'BE7A0000'), undefined);
});

test('applications: configuration mistakes name the field', () => {
  const tts = (extra: Record<string, unknown>) => ({ applications: [{ networkId: 'thethingsnetwork', applicationId: 'app-one', ...extra }] });
  failsWith(() => new StaticLpwanApplications(tts({})), /applications\.0: give exactly one of secret and secretSha256/);
  failsWith(() => new StaticLpwanApplications(tts({ secret: SECRET, secretSha256: 'a'.repeat(64) })), /exactly one/);
  failsWith(() => new StaticLpwanApplications(tts({ secret: 'short' })), /applications\.0\.secret/);
  failsWith(() => new StaticLpwanApplications(tts({ secretSha256: 'xyz' })), /applications\.0\.secretSha256/);
  failsWith(() => new StaticLpwanApplications(tts({ secret: SECRET, webhook: 'x' })), /applications\.0/);
  failsWith(() => new StaticLpwanApplications(tts({ secret: SECRET, downlink: { baseUrl: 'ftp://x', webhookId: 'wh', apiKey: 'k' } })), /downlink\.baseUrl/);
  failsWith(() => new StaticLpwanApplications(tts({ secret: SECRET, downlink: { baseUrl: 'https://x', webhookId: 'wh', apiKey: 'k', fPort: 224 } })), /downlink\.fPort/);
  failsWith(() => new StaticLpwanApplications({ applications: [{ networkId: 'thingpark', applicationId: 'a1', secret: SECRET }] }), /networkId/);
  failsWith(() => new StaticLpwanApplications({ applications: [{ networkId: 'loriot', applicationId: 'a1', secret: SECRET, downlink: { baseUrl: 'https://x', webhookId: 'wh', apiKey: 'k' } }] }), /applications\.0\.downlink: network loriot has no downlink/);
  const twice = { networkId: 'thethingsnetwork', applicationId: 'app-one', secret: SECRET };
  failsWith(() => new StaticLpwanApplications({ applications: [twice, { ...twice, secret: `${SECRET}-2` }] }), /applications\.1\.applicationId: .*twice/);
  failsWith(() => new StaticLpwanApplications({ applications: [twice, { ...twice, applicationId: 'app-two' }] }), /applications\.1\.secret: another thethingsnetwork application has the same secret/);
  failsWith(() => new StaticLpwanApplications([]), /document/);
  failsWith(() => new StaticLpwanApplications(null), /document/);
});

test('the applications file shown in docs/lpwan.md is valid', async () => {
  const doc = readFileSync(new URL('../../../docs/lpwan.md', import.meta.url), 'utf8');
  const example = /```json\n([\s\S]*?)```/.exec(doc);
  assert.ok(example, 'docs/lpwan.md has a JSON example');
  const apps = new StaticLpwanApplications(JSON.parse(example[1]));
  assert.is(apps.size, 2);
  assert.is((await apps.authenticate('thethingsnetwork', 'replace-with-a-long-random-secret'))?.downlink?.webhookId, 'fleetstream');
  assert.ok(await apps.authenticate('loriot', 'a-long-random-webhook-secret'));
});

test('The Things Stack fixture: devEui, application, port, base64 payload, Network Server time', () => {
  const parsed = parseTtsUplink(fixture('tts-uplink.json'));
  assert.is(parsed.kind, 'uplink');
  if (parsed.kind !== 'uplink') return;
  assert.is(parsed.applicationId, 'greenhouse-sensors');
  const { payload, ...rest } = parsed.uplink;
  const ns = Date.parse('2024-09-24T08:15:42.112Z');
  // The message's identity: frame counter and Network Server time (docs/lpwan.md).
  assert.equal(rest, { networkId: 'thethingsnetwork', devEui: '70B3D57ED005E2A1', fPort: 2, receivedAt: ns, messageKey: `f_cnt 1873 ns ${ns}` });
  assert.equal([...(payload as Uint8Array)], [0x08, 0x34, 0x5a]);
});

test('The Things Stack: the Application Server time stands in when the uplink has none; other message types are ignored', () => {
  const doc = fixture('tts-uplink.json') as { uplink_message: Record<string, unknown> };
  delete doc.uplink_message.received_at;
  const parsed = parseTtsUplink(doc);
  assert.is(parsed.kind === 'uplink' && parsed.uplink.receivedAt, Date.parse('2024-09-24T08:15:42.318Z'));
  assert.is(parsed.kind === 'uplink' && parsed.uplink.messageKey, `f_cnt 1873 as ${Date.parse('2024-09-24T08:15:42.318Z')}`);
  assert.equal(parseTtsUplink(fixture('tts-join-accept.json')), { kind: 'ignored', reason: 'join_accept is not an uplink' });
});

test('LORIOT fixtures: rx is an uplink with hex data and ts; gw is ignored; encdata is an unreadable payload', () => {
  const rx = parseLoriotUplink(fixture('loriot-rx.json'));
  assert.equal(rx.kind === 'uplink' && { ...rx.uplink, payload: [...(rx.uplink.payload as Uint8Array)] }, {
    networkId: 'loriot', devEui: '0004A30B001C0530', fPort: 5, receivedAt: 1727165742318, payload: [0x01, 0x67, 0x01, 0x10, 0x02, 0x00, 0x01],
    messageKey: 'fcnt 5120 ts 1727165742318',
  });
  assert.equal(parseLoriotUplink(fixture('loriot-gw.json')), { kind: 'ignored', reason: 'cmd "gw" is not an uplink (rx)' });
  const encrypted = parseLoriotUplink(fixture('loriot-encrypted.json'));
  assert.equal(encrypted.kind === 'uplink' && (encrypted.uplink.payload as { code: string }).code, 'MALFORMED_PAYLOAD');
});

function fakeDevice(id: string, network: Device['network'], payload?: Device['payload']): Device {
  return { id, groundId: 'g'.repeat(22), name: id, title: id, description: '', network, payload, createdAt: 0 };
}

/** Lookups by binding over `byEui`; the device with its (here: no) assets by id. */
function fakeDevices(byEui: Map<string, Device> | (() => Device), lookups: string[] = []) {
  const all = () => (typeof byEui === 'function' ? [byEui()] : [...byEui.values()]);
  return {
    findDeviceByNetwork: async (_n: string, eui: string) => { lookups.push(eui); return typeof byEui === 'function' ? byEui() : byEui.get(eui); },
    getDevice: async (id: string) => { const d = all().find((x) => x.id === id); return d && { ...d, assets: [] }; },
  };
}

/** Binary formats decode every payload to no states here: these tests are about routing, not decoding. */
const routingCompile = (info: Parameters<typeof compileDevice>[0]) => compileDevice(info, { binaryDecoder: () => () => ({}) });

test('intake: content type by payload format, bindings cached for the TTL, unknown ones too', async () => {
  const clock = new SimulatedClock(1_000_000);
  const byEui = new Map<string, Device>([
    ['0000000000000001', fakeDevice('d-binary', { networkId: 'loriot', data: { devEui: '0000000000000001' } }, { format: 'binary', conversion: {} })],
    ['0000000000000002', fakeDevice('d-cayenne', { networkId: 'loriot', data: { devEui: '0000000000000002' } }, { format: 'cayenne' })],
    ['0000000000000003', fakeDevice('d-json', { networkId: 'loriot', data: { devEui: '0000000000000003' } }, { format: 'json' })],
    ['0000000000000004', fakeDevice('d-none', { networkId: 'loriot', data: { devEui: '0000000000000004' } })],
  ]);
  const lookups: string[] = [];
  const appended: UplinkSubmission[] = [];
  const dead: UplinkEnvelope[] = [];
  const admission = new UplinkAdmission({
    ingest: fakeIngest(async (s) => { appended.push(s); }),
    deadLetters: { add: async (e) => { dead.push(e); } },
    clock,
    compile: routingCompile,
  });
  const intake = new LpwanUplinkIntake({ devices: fakeDevices(byEui, lookups), admission, clock, cacheTtlMs: 1000 });
  const app = { networkId: 'loriot' as const, applicationId: 'BE7A0000' };
  // A payload each format reads: any bytes for the binary formats, `{}` in JSON, an empty CBOR map.
  const payloads: Record<string, number[]> = { '0000000000000003': [...new TextEncoder().encode('{}')], '0000000000000004': [0xa0] };
  const up = (devEui: string): LpwanUplink => ({ networkId: 'loriot', devEui, fPort: 3, receivedAt: 42, payload: new Uint8Array(payloads[devEui] ?? [1]) });
  for (const eui of ['0000000000000001', '0000000000000002', '0000000000000003', '0000000000000004']) {
    assert.is((await intake.accept(app, up(eui))).status, 'accepted');
  }
  assert.equal(appended.map((s) => [s.deviceId, s.contentType, s.network?.format]), [
    ['d-binary', 'binary', 'binary'], ['d-cayenne', 'binary', 'cayenne'], ['d-json', 'json', 'json'], ['d-none', 'cbor', undefined],
  ]);
  assert.equal(appended[0].network, { networkId: 'loriot', devEui: '0000000000000001', fPort: 3, receivedAt: 42, format: 'binary' });
  assert.is(appended[0].channel, 'lpwan');

  assert.is((await intake.accept(app, up('00000000000000ff'))).code, 'UNKNOWN_DEVICE');
  assert.is(dead.at(-1)!.network?.devEui, '00000000000000FF', 'stored upper case');
  await intake.accept(app, up('0000000000000001'));
  await intake.accept(app, up('00000000000000FF'));
  assert.is(lookups.length, 5, 'cached: known and unknown bindings');
  // Activated meanwhile: seen once the TTL has passed.
  byEui.set('00000000000000FF', fakeDevice('d-new', { networkId: 'loriot', data: { devEui: '00000000000000FF' } }, { format: 'cayenne' }));
  clock.advance(1000);
  assert.equal(await intake.accept(app, up('00000000000000ff')), { status: 'accepted', deviceId: 'd-new', uplinkId: appended.at(-1)!.id });
  assert.is(appended.length, 6);
});

test('intake: registry changes reach the binding cache at once, and a lookup that overlapped one is not cached', async () => {
  const clock = new SimulatedClock(1_000_000);
  const byEui = new Map<string, Device>([
    ['0000000000000001', fakeDevice('d-one', { networkId: 'loriot', data: { devEui: '0000000000000001' } }, { format: 'cayenne' })],
    ['0000000000000002', fakeDevice('d-two', { networkId: 'loriot', data: { devEui: '0000000000000002' } }, { format: 'cayenne' })],
  ]);
  const lookups: string[] = [];
  const admission = new UplinkAdmission({
    ingest: fakeIngest(async () => undefined),
    deadLetters: { add: async () => undefined },
    clock,
    compile: routingCompile,
  });
  const devices = fakeDevices(byEui, lookups);
  const intake = new LpwanUplinkIntake({ devices, admission, clock, cacheTtlMs: 600_000 });
  const app = { networkId: 'loriot' as const, applicationId: 'BE7A0000' };
  const up = (devEui: string): LpwanUplink => ({ networkId: 'loriot', devEui, fPort: 3, payload: new Uint8Array([1]) });
  for (const eui of ['0000000000000001', '0000000000000002', '00000000000000FF']) await intake.accept(app, up(eui));
  assert.is(lookups.length, 3);
  // Deleted: its binding is looked up again at once; the other device's stays cached.
  byEui.delete('0000000000000001');
  intake.apply({ kind: 'device-deleted', deviceId: 'd-one' });
  assert.is((await intake.accept(app, up('0000000000000001'))).code, 'UNKNOWN_DEVICE');
  await intake.accept(app, up('0000000000000002'));
  assert.equal(lookups.slice(3), ['0000000000000001']);
  // Activated with a devEui cached as unbound: any device change drops the unbound entries.
  byEui.set('00000000000000FF', fakeDevice('d-new', { networkId: 'loriot', data: { devEui: '00000000000000FF' } }, { format: 'cayenne' }));
  intake.apply({ kind: 'device-changed', deviceId: 'd-new' });
  const activated = await intake.accept(app, up('00000000000000ff'));
  assert.equal([activated.status, activated.deviceId], ['accepted', 'd-new']);
  // Changes that concern no device leave the cache alone; resync drops it all.
  const before = lookups.length;
  intake.apply({ kind: 'membership-changed', groundId: 'g'.repeat(22), userId: 'u'.repeat(22) });
  await intake.accept(app, up('0000000000000002'));
  assert.is(lookups.length, before);
  intake.apply({ kind: 'resync' });
  await intake.accept(app, up('0000000000000002'));
  assert.is(lookups.length, before + 1);
  // A lookup in flight while a change arrives answers its message but is not kept.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => { release = resolve; });
  const slow = { ...devices, findDeviceByNetwork: async (n: string, eui: string) => { await gate; return devices.findDeviceByNetwork(n, eui); } };
  const racing = new LpwanUplinkIntake({ devices: slow, admission, clock, cacheTtlMs: 600_000 });
  const pending = racing.accept(app, up('0000000000000002'));
  racing.apply({ kind: 'device-changed', deviceId: 'd-two' });
  release();
  assert.is((await pending).status, 'accepted');
  const counted = lookups.length;
  await racing.accept(app, up('0000000000000002'));
  assert.is(lookups.length, counted + 1, 'looked up again: the overlapped answer was not cached');
});

test('intake: a device bound in another application is unknown to this one; a payload problem of a known device is its dead letter', async () => {
  const clock = new SimulatedClock(5000);
  const dead: { envelope: UplinkEnvelope; code: string }[] = [];
  const device = fakeDevice('d-tts', { networkId: 'thethingsnetwork', data: { devEui: '70B3D57ED0000001', applicationId: 'app-one' } }, { format: 'cbor' });
  const admission = new UplinkAdmission({
    ingest: fakeIngest(async () => { throw new Error('not expected'); }),
    deadLetters: { add: async (envelope, rejections) => { dead.push({ envelope, code: rejections[0].code }); } },
    clock,
  });
  const intake = new LpwanUplinkIntake({ devices: fakeDevices(() => device), admission, clock });
  const other = await intake.accept({ networkId: 'thethingsnetwork', applicationId: 'app-two' }, { networkId: 'thethingsnetwork', devEui: '70B3D57ED0000001', payload: new Uint8Array([1, 2]) });
  assert.equal({ status: other.status, code: other.code, deviceId: other.deviceId }, { status: 'dropped', code: 'UNKNOWN_DEVICE', deviceId: undefined });
  assert.equal([...dead[0].envelope.body], [1, 2], 'the payload is kept in the dead letter');
  assert.is(dead[0].envelope.deviceId, '');
  const bad = await intake.accept({ networkId: 'thethingsnetwork', applicationId: 'app-one' }, { networkId: 'thethingsnetwork', devEui: '70B3D57ED0000001', payload: { code: 'MALFORMED_PAYLOAD', reason: 'not base64' } });
  assert.equal({ status: bad.status, code: bad.code, deviceId: bad.deviceId, reason: bad.reason }, { status: 'dropped', code: 'MALFORMED_PAYLOAD', deviceId: 'd-tts', reason: 'not base64' });
  assert.equal([dead[1].envelope.deviceId, dead[1].envelope.receivedAt, dead[1].envelope.network?.format, dead[1].envelope.id], ['d-tts', 5000, 'cbor', bad.uplinkId]);
});

test('intake: a message delivered again gets its first answer (repeated) and the same uplink id; without the answer kept, the id is still the same', async () => {
  const clock = new SimulatedClock(1_000_000);
  const device = fakeDevice('d-1', { networkId: 'loriot', data: { devEui: '0000000000000001' } }, { format: 'cayenne' });
  const appended: UplinkSubmission[] = [];
  const dead: UplinkEnvelope[] = [];
  let failNext = false;
  const admission = new UplinkAdmission({
    ingest: fakeIngest(async (s) => {
      await new Promise((r) => setTimeout(r, 5));
      if (failNext) { failNext = false; throw new FleetError('UNAVAILABLE', 'log away'); }
      appended.push(s);
    }),
    deadLetters: { add: async (e) => { dead.push(e); } },
    clock,
    compile: routingCompile,
  });
  const intake = new LpwanUplinkIntake({ devices: fakeDevices(() => device), admission, clock, answerTtlMs: 60_000 });
  const app = { networkId: 'loriot' as const, applicationId: 'BE7A0000' };
  const up = (messageKey: string | undefined, payload: LpwanUplink['payload'] = new Uint8Array([1])): LpwanUplink =>
    ({ networkId: 'loriot', devEui: '0000000000000001', receivedAt: 42, payload, ...(messageKey === undefined ? {} : { messageKey }) });
  // Two deliveries at once: admitted once, both answered with one uplink id.
  const [a, b] = await Promise.all([intake.accept(app, up('fcnt 7 ts 42')), intake.accept(app, up('fcnt 7 ts 42'))]);
  assert.is(appended.length, 1);
  assert.equal(a, { status: 'accepted', deviceId: 'd-1', uplinkId: appended[0].id });
  assert.equal(b, { ...a, repeated: true });
  assert.is(appended[0].id, lpwanUplinkId('loriot', '0000000000000001', 'BE7A0000\nfcnt 7 ts 42'));
  assert.match(appended[0].id!, /^[0-9A-Za-z]{22}$/);
  assert.is(appended[0].receivedAt, 42, "received at the network's time: every delivery has the same receive time too");
  // Another frame, or no identity at all: a new uplink each time.
  await intake.accept(app, up('fcnt 8 ts 43'));
  await intake.accept(app, up(undefined));
  await intake.accept(app, up(undefined));
  assert.is(new Set(appended.map((s) => s.id)).size, 4);
  // A dropped message delivered again is recorded once.
  const bad = () => intake.accept(app, up('fcnt 9 ts 44', { code: 'MALFORMED_PAYLOAD', reason: 'not hex' }));
  const first = await bad();
  assert.equal(await bad(), { ...first, repeated: true });
  assert.is(dead.length, 1);
  // A failure (503) is no answer: the retry is admitted.
  failNext = true;
  await intake.accept(app, up('fcnt 10 ts 45')).then(() => assert.unreachable('failed'), (e) => assert.is((e as FleetError).code, 'UNAVAILABLE'));
  assert.is((await intake.accept(app, up('fcnt 10 ts 45'))).repeated, undefined);
  // Past the answer's time (or on another edge) the message is admitted again with the same id: the store folds it.
  clock.advance(60_000);
  const again = await intake.accept(app, up('fcnt 7 ts 42'));
  assert.equal(again, { status: 'accepted', deviceId: 'd-1', uplinkId: a.uplinkId });
  assert.is(appended.at(-1)!.id, a.uplinkId);
  assert.is(appended.at(-1)!.receivedAt, 42);
  // A network time outside the window is not taken as the receive time (admission then refuses
  // the states it times as INVALID_AT; these routing devices decode to none).
  await intake.accept(app, { ...up('fcnt 11 ts far'), receivedAt: clock.now() + 2 * 86_400_000 });
  assert.is(appended.at(-1)!.receivedAt, clock.now());
  assert.is(appended.at(-1)!.network?.receivedAt, clock.now() + 2 * 86_400_000);
});

test('routes: log backpressure and an unreachable registry are 503 with Retry-After, so the network server retries', async () => {
  const clock = new SimulatedClock(0);
  const applications = new StaticLpwanApplications({ applications: [{ networkId: 'loriot', applicationId: 'BE7A0000', secret: SECRET }] });
  let failure: FleetError = new FleetError('BACKPRESSURE', 'too many uplinks waiting for the log; retry later', { detail: { retryAfter: 2 } });
  const app = createEdgeApp({
    registry: {} as Registry,
    admission: { admit: async () => { throw new Error('not expected'); }, admitThen: () => { throw new Error('not expected'); }, refuse: async () => { throw new Error('not expected'); } },
    store: { latest: async () => [], history: async () => [], aggregate: async () => [] },
    rejections: { recent: async () => [] },
    clock,
    lpwan: { applications, intake: { accept: async () => { throw failure; } } },
  });
  const post = () => app.request('/lpwan/loriot/uplink', { method: 'POST', headers: { authorization: `Bearer ${SECRET}` }, body: JSON.stringify(fixture('loriot-rx.json')) });
  let res = await post();
  assert.is(res.status, 503);
  assert.is(res.headers.get('retry-after'), '2');
  assert.is(((await res.json()) as { code: string }).code, 'BACKPRESSURE');
  failure = new FleetError('UNAVAILABLE', 'registry unreachable');
  res = await post();
  assert.is(res.status, 503);
  assert.is(res.headers.get('retry-after'), '1');
  const wrong = await app.request('/lpwan/loriot/uplink', { method: 'POST', headers: { authorization: 'Bearer nope-nope-nope-nope' }, body: '{}' });
  assert.is(wrong.status, 401);
  assert.match(wrong.headers.get('www-authenticate') ?? '', /^Bearer/);
  const get = await app.request('/lpwan/loriot/uplink');
  assert.is(get.status, 404);
});

test.run();
