import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { authorizeSubscription, authorizeUplink, detectStateFormat, parseUplinkTopic, routeTrustedUplink, topicMatches } from '../../../engine/access/mqttTopics.ts';
import type { DeviceInfo } from '../../../engine/ports/directory.ts';

const dev: DeviceInfo = { id: 'D1', assets: [{ id: 'A1', name: 'temp', is: 'sensor', profile: {} }] };
const device = { scope: 'device' as const, subjectId: 'D1' };

test('uplink topics parse; wildcards, empty levels and other shapes do not', () => {
  assert.equal(parseUplinkTopic('asset/A1/state'), { kind: 'assetState', assetId: 'A1' });
  assert.equal(parseUplinkTopic('device/D1/state'), { kind: 'deviceState', deviceId: 'D1' });
  assert.equal(parseUplinkTopic('device/D1/asset/temp/state'), { kind: 'deviceAssetState', deviceId: 'D1', asset: 'temp' });
  for (const t of ['asset//state', 'device/+/state', 'device/D1/asset/#/state', 'device/D1/asset/temp/command', 'device/D1/state/x', '/device/D1/state', '']) {
    assert.is(parseUplinkTopic(t), undefined, t);
  }
});

test('uplink decisions', () => {
  assert.equal(authorizeUplink(device, 'asset/A1/state', dev), { ok: true, value: { deviceId: 'D1', asset: 'temp' } });
  assert.is((authorizeUplink(device, 'device/D2/state', dev) as { code: string }).code, 'FORBIDDEN');
  assert.is((authorizeUplink(device, 'device/D1/asset/x/state', dev) as { code: string }).code, 'UNKNOWN_ASSET');
  assert.is((authorizeUplink({ scope: 'user', subjectId: 'U' }, 'device/D1/state', dev) as { code: string }).code, 'FORBIDDEN');
  assert.is((authorizeUplink(device, 'device/D1/state', undefined) as { code: string }).code, 'UNKNOWN_DEVICE');
});

test('subscription decisions', () => {
  assert.ok(authorizeSubscription(device, 'device/D1/asset/+/command', dev).ok);
  assert.ok(authorizeSubscription(device, 'asset/A1/command', dev).ok);
  assert.not.ok(authorizeSubscription(device, 'asset/A2/command', dev).ok);
  assert.not.ok(authorizeSubscription(device, 'device/D1/asset/#', dev).ok);
  assert.not.ok(authorizeSubscription({ scope: 'device', subjectId: 'D2' }, 'device/D1/asset/+/command', dev).ok);
  const user = { scope: 'user' as const, subjectId: 'U' };
  assert.ok(authorizeSubscription(user, 'device/D1/asset/+/feed', dev, true).ok);
  assert.not.ok(authorizeSubscription(user, 'device/D1/asset/+/feed', dev, false).ok);
  assert.not.ok(authorizeSubscription(user, 'device/D1/asset/+/command', dev, true).ok);
  // A ground's API key: feeds and alarms of its ground's devices, never a command topic.
  const key = { scope: 'key' as const, subjectId: 'K' };
  assert.ok(authorizeSubscription(key, 'device/D1/asset/+/feed', dev, true).ok);
  assert.ok(authorizeSubscription(key, 'asset/A1/alarm', dev, true).ok);
  assert.not.ok(authorizeSubscription(key, 'device/D1/asset/+/feed', dev, false).ok, 'another ground\'s device');
  assert.not.ok(authorizeSubscription(key, 'device/D1/asset/+/command', dev, true).ok);
  assert.is((authorizeUplink(key, 'device/D1/state', dev) as { code: string }).code, 'FORBIDDEN', 'a key publishes no state');
});

test('alarm topics: members and the device itself follow them; nobody else; no other shape', () => {
  const user = { scope: 'user' as const, subjectId: 'U' };
  const granted = authorizeSubscription(user, 'device/D1/asset/temp/alarm', dev, true);
  assert.equal(granted, { ok: true, value: { kind: 'device', deviceId: 'D1', asset: 'temp', channel: 'alarm' } });
  assert.ok(authorizeSubscription(user, 'asset/A1/alarm', dev, true).ok);
  assert.not.ok(authorizeSubscription(user, 'device/D1/asset/temp/alarm', dev, false).ok, 'not a member');
  assert.ok(authorizeSubscription(device, 'device/D1/asset/+/alarm', dev).ok, 'the device, its own');
  assert.not.ok(authorizeSubscription({ scope: 'device', subjectId: 'D2' }, 'device/D1/asset/+/alarm', dev).ok);
  assert.not.ok(authorizeSubscription({ scope: 'partner', subjectId: 'P' }, 'device/D1/asset/temp/alarm', dev, true).ok);
  for (const filter of ['device/D1/alarm', 'device/+/asset/temp/alarm', 'device/D1/asset/#/alarm', 'device/D1/asset/temp/alarms', 'device/D1/asset/temp/alarm/x', 'ground/G/alarm']) {
    assert.not.ok(authorizeSubscription(user, filter, dev, true).ok, filter);
  }
});

test('topic filter matching', () => {
  assert.ok(topicMatches('device/D1/asset/+/command', 'device/D1/asset/led/command'));
  assert.ok(topicMatches('device/#', 'device/D1/asset/led/command'));
  assert.not.ok(topicMatches('device/D1/asset/+', 'device/D1/asset/led/command'));
  assert.not.ok(topicMatches('device/D1/asset/+/command/x', 'device/D1/asset/led/command'));
});

test('device state format: content type first, else the first byte', () => {
  const enc = new TextEncoder();
  assert.is(detectStateFormat(enc.encode('{"a":1}')), 'json');
  assert.is(detectStateFormat(enc.encode('\n {"a":1}')), 'json');
  assert.is(detectStateFormat(new Uint8Array([0xa1, 0x61, 0x61, 0x01])), 'cbor');
  assert.is(detectStateFormat(new Uint8Array([0xd8, 0x78])), 'cbor');
  assert.is(detectStateFormat(enc.encode('{"a":1}'), 'application/cbor'), 'cbor');
  assert.is(detectStateFormat(new Uint8Array([0xa0]), 'application/json; charset=utf-8'), 'json');
  assert.is(detectStateFormat(new Uint8Array([0xa0]), 'text/plain'), 'cbor');
});

test('trusted uplinks (external broker): the topic names the device; unknown devices and assets are refused with codes', () => {
  const route = (topic: string, device: DeviceInfo | undefined) => routeTrustedUplink(parseUplinkTopic(topic)!, device);
  assert.equal(route('asset/A1/state', dev), { ok: true, value: { deviceId: 'D1', asset: 'temp' } });
  assert.equal(route('device/D1/state', dev), { ok: true, value: { deviceId: 'D1' } });
  assert.equal(route('device/D1/asset/temp/state', dev), { ok: true, value: { deviceId: 'D1', asset: 'temp' } });
  const code = (d: ReturnType<typeof route>) => (d.ok ? 'ok' : d.code);
  assert.is(code(route('asset/A9/state', undefined)), 'UNKNOWN_ASSET');
  assert.is(code(route('asset/A9/state', dev)), 'UNKNOWN_ASSET');
  assert.is(code(route('device/D9/state', undefined)), 'UNKNOWN_DEVICE');
  assert.is(code(route('device/D9/state', dev)), 'UNKNOWN_DEVICE', 'a lookup that answered another device');
  assert.is(code(route('device/D9/asset/temp/state', dev)), 'UNKNOWN_DEVICE');
  assert.is(code(route('device/D1/asset/nope/state', dev)), 'UNKNOWN_ASSET');
  const long = route(`device/${'x'.repeat(500)}/state`, undefined);
  assert.ok(!long.ok && long.reason.length < 120, 'reasons stay short');
});

test.run();
