/**
 * The embedded MQTT edge with real mqtt.js clients: states on the three topic shapes end to end
 * into chDB, feeds, device-token auth, topic ACLs, bad payloads, and the TLS listener.
 */
import { opensslMissing, selfSignedCertificate } from '../../support/selfSignedCertificate.ts';
import { suite, unless } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { encode as cborEncode } from 'cbor-x';
import mqtt from 'mqtt';
import { MqttStack, subackCodes, type SeededDevice } from '../../support/mqttStack.ts';
import { THERMO_ASSETS } from '../../support/mqttEdgeWorlds.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

// ---------------------------------------------------------------- end to end
const e2e = suite('mqtt edge end to end');
let s: MqttStack;
let dev: SeededDevice;
e2e.before(async () => {
  s = await MqttStack.start({ pipeline: true });
  dev = await s.device('thermo', THERMO_ASSETS);
});
e2e.after(async () => s.stop());

e2e('states on all three topic shapes are stored, and fed back to the device and to a user of its ground', async () => {
  const device = await s.connect(dev.token);
  const user = await s.connect(s.userToken);
  const deviceFeed: [string, unknown][] = [];
  const userFeed: [string, unknown][] = [];
  device.on('message', (topic, payload) => deviceFeed.push([topic, JSON.parse(payload.toString())]));
  user.on('message', (topic, payload) => userFeed.push([topic, JSON.parse(payload.toString())]));
  // Nobody follows a feed yet (a command subscription is not one): stored states have nobody to go to.
  await device.subscribeAsync(`device/${dev.deviceId}/asset/+/command`, { qos: 1 });
  assert.is(s.edge.followsFeeds(), false);
  const granted = await device.subscribeAsync([`device/${dev.deviceId}/asset/+/feed`, `device/${dev.deviceId}/asset/+/command`], { qos: 1 });
  assert.equal(granted.map((g) => g.qos), [1, 1]);
  assert.equal((await user.subscribeAsync(`device/${dev.deviceId}/asset/+/feed`, { qos: 0 }))[0].qos, 0);
  assert.is(s.edge.followsFeeds(), true);

  await device.publishAsync(`asset/${dev.assetIds.temperature}/state`, json({ value: 21.5, at: '2026-01-01T00:00:00Z' }), { qos: 1 });
  assert.is(s.appended.length, 1, 'durable before the PUBACK');
  await device.publishAsync(`device/${dev.deviceId}/asset/on/state`, json({ value: true, at: '2026-01-01T00:00:01Z' }), { qos: 1 });
  await device.publishAsync(`device/${dev.deviceId}/state`, json({ label: { value: 'json', at: '2026-01-01T00:00:02Z' } }), { qos: 1 });
  await device.publishAsync(`device/${dev.deviceId}/state`, Buffer.from(cborEncode({ temperature: 22 })), { qos: 1 });
  await device.publishAsync(`device/${dev.deviceId}/state`, json({ label: { value: 'qos0' } }), { qos: 0 });
  await waitFor(() => s.appended.length === 5, 5000, 'five uplinks appended');
  assert.equal(s.appended.map((e) => [e.channel, e.contentType, e.asset]), [
    ['mqtt', 'json', 'temperature'], ['mqtt', 'json', 'on'], ['mqtt', 'json', undefined], ['mqtt', 'cbor', undefined], ['mqtt', 'json', undefined],
  ]);
  await waitFor(async () => (await s.store!.history({ deviceId: dev.deviceId, asset: 'label' })).length === 2, 10_000, 'label states stored');
  const temps = await s.store!.history({ deviceId: dev.deviceId, asset: 'temperature', order: 'asc' });
  assert.equal(temps.map((t) => t.value), [21.5, 22]);
  const on = await s.store!.history({ deviceId: dev.deviceId, asset: 'on' });
  assert.equal(on.map((t) => [t.value, t.ts]), [[true, Date.parse('2026-01-01T00:00:01Z')]]);

  await waitFor(() => deviceFeed.length === 5 && userFeed.length === 5, 5000, 'feeds');
  assert.ok(deviceFeed.some(([t, m]) => t === `device/${dev.deviceId}/asset/temperature/feed`
    && JSON.stringify(m) === JSON.stringify({ value: 21.5, at: '2026-01-01T00:00:00.000Z' })));
  assert.equal(deviceFeed.map(([t]) => t.split('/')[3]).sort(), ['label', 'label', 'on', 'temperature', 'temperature']);
  await device.unsubscribeAsync(`device/${dev.deviceId}/asset/+/feed`);
  assert.is(s.edge.followsFeeds(), true, 'the user still follows one');
  await user.endAsync();
  await waitFor(() => !s.edge.followsFeeds(), 5000, 'the user session ended with its connection');
});

e2e('a value of the wrong type is refused by admission and dead-lettered, not stored', async () => {
  const device = await s.connect(dev.token);
  await device.publishAsync(`device/${dev.deviceId}/asset/on/state`, json({ value: 'yes' }), { qos: 1 });
  await waitFor(() => s.deadLetters.length >= 1, 10_000, 'dead letter');
  assert.is(s.deadLetters[0].code, 'PROFILE_VIOLATION');
  assert.is(s.deadLetters[0].envelope.channel, 'mqtt');
  const on = await s.store!.history({ deviceId: dev.deviceId, asset: 'on' });
  assert.is(on.length, 1);
});

// ---------------------------------------------------------------- auth and ACLs
const acl = suite('mqtt edge auth and ACL');
let a: MqttStack;
let mine: SeededDevice;
let other: SeededDevice;
acl.before(async () => {
  a = await MqttStack.start({ edge: { maxRefusals: 100 } });
  mine = await a.device('mine', [{ name: 't', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
  other = await a.device('other', [{ name: 't', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
});
acl.after(async () => a.stop());

acl('bad, missing and partner tokens cannot connect', async () => {
  const partner = await a.registry.createPartner({ name: 'p' });
  for (const username of ['fsd_' + 'x'.repeat(43), 'nonsense', undefined, partner.token]) {
    const failure = await mqtt.connectAsync(a.url, { username, password: username === undefined ? undefined : 'x', reconnectPeriod: 0, connectTimeout: 3000 }).then(
      (c) => { c.end(true); return undefined; },
      (e: Error & { code?: number }) => e,
    );
    assert.ok(failure !== undefined, `refused: ${String(username)}`);
    assert.is(failure.code, 4, 'CONNACK bad user name or password');
  }
});

acl('publishing to another device, unknown assets or non-uplink topics is dropped and recorded; nothing is appended', async () => {
  const c = await a.connect(mine.token);
  const before = a.appended.length;
  const topics = [
    `device/${other.deviceId}/state`,
    `device/${other.deviceId}/asset/t/state`,
    `asset/${other.assetIds.t}/state`,
    `device/${mine.deviceId}/asset/nope/state`,
    `asset/nope/state`,
    `device/${other.deviceId}/asset/led/command`,
    `asset/${other.assetIds.led}/command`,
    `device/${mine.deviceId}/asset/led/feed`,
    'random/topic',
  ];
  const received: string[] = [];
  const victim = await a.connect(other.token);
  victim.on('message', (topic) => received.push(topic));
  await victim.subscribeAsync(`device/${other.deviceId}/asset/+/command`, { qos: 1 });
  for (const topic of topics) await c.publishAsync(topic, json({ value: 1 }), { qos: 1 });
  await c.publishAsync(`device/${mine.deviceId}/asset/t/state`, json({ value: 1 }), { qos: 1 });
  assert.is(a.appended.length, before + 1, 'only the own uplink is appended');
  const rows = a.rejections.rows.filter((r) => r.deviceId === mine.deviceId);
  assert.is(rows.length, topics.length);
  assert.equal([...new Set(rows.map((r) => r.code))].sort(), ['FORBIDDEN', 'UNKNOWN_ASSET']);
  assert.ok(rows.every((r) => r.channel === 'mqtt'));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(received, [], 'a forged command never reaches the other device');
  assert.ok(c.connected, 'below the refusal allowance the connection stays');
});

acl('subscriptions to others\' commands, wildcards and state topics are refused (SUBACK 0x80)', async () => {
  const c = await a.connect(mine.token);
  const refused = [
    '#', '+/+/+', 'device/+/asset/+/command', `device/${other.deviceId}/asset/+/command`, `asset/${other.assetIds.led}/command`,
    `device/${mine.deviceId}/#`, `device/${mine.deviceId}/state`, `device/${mine.deviceId}/asset/t/state`, '$SYS/#',
    `$share/g/device/${mine.deviceId}/asset/+/command`, 'asset/+/command',
  ];
  assert.equal(await subackCodes(c, refused, 1), refused.map(() => 128));
  const ok = await subackCodes(c, [`device/${mine.deviceId}/asset/led/command`, `asset/${mine.assetIds.led}/command`, `device/${mine.deviceId}/asset/+/feed`], 1);
  assert.equal(ok, [1, 1, 1]);
  assert.ok(c.connected);
});

acl('a user token follows feeds of its grounds only and publishes nothing', async () => {
  const u = await a.connect(a.userToken);
  const stranger = await a.registry.createUser({ name: 'stranger' });
  const s2 = await a.connect(stranger.token);
  assert.equal(await subackCodes(u, [`device/${mine.deviceId}/asset/+/feed`, `device/${mine.deviceId}/asset/+/command`], 0), [0, 128]);
  assert.equal(await subackCodes(s2, `device/${mine.deviceId}/asset/+/feed`, 0), [128]);
  const before = a.appended.length;
  await u.publishAsync(`device/${mine.deviceId}/state`, json({ t: { value: 1 } }), { qos: 1 });
  assert.is(a.appended.length, before);
});

acl('repeated abuse disconnects', async () => {
  const strict = await MqttStack.start({ edge: { maxRefusals: 3 } });
  try {
    const d = await strict.device('abuser', [{ name: 't' }]);
    const c = await strict.connect(d.token);
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
    for (let i = 0; i < 4; i++) c.publish(`device/someone/state`, json({}), { qos: 0 });
    await closed;
    assert.is(strict.edge.stats.disconnected, 1);
    assert.is(strict.appended.length, 0);
  } finally {
    await strict.stop();
  }
});

// ---------------------------------------------------------------- bad payloads
const bad = suite('mqtt edge bad payloads');
let b: MqttStack;
let bd: SeededDevice;
bad.before(async () => {
  b = await MqttStack.start({ edge: { maxRefusals: 1000, maxPayloadBytes: 1024 } });
  bd = await b.device('bad', [{ name: 't', profile: { type: 'number' } }]);
});
bad.after(async () => b.stop());

bad('malformed, oversized and mis-shaped payloads on every topic are refused with codes; the broker keeps serving', async () => {
  const c = await b.connect(bd.token);
  const bystander = await b.connect((await b.device('bystander', [{ name: 't' }])).token);
  const byId = (await b.registry.getDevice((await b.registry.authenticate(bystander.options.username!))!.subjectId))!;
  const assetTopic = `asset/${bd.assetIds.t}/state`;
  const deviceAssetTopic = `device/${bd.deviceId}/asset/t/state`;
  const stateTopic = `device/${bd.deviceId}/state`;
  const cases: [string, Buffer, string][] = [
    [assetTopic, Buffer.from('{"value":'), 'MALFORMED_JSON'],
    [assetTopic, Buffer.from([0xff, 0xfe]), 'MALFORMED_JSON'],
    [assetTopic, Buffer.alloc(0), 'MALFORMED_JSON'],
    [assetTopic, json([1, 2]), 'INVALID_STATE'],
    [assetTopic, json({ val: 1 }), 'INVALID_STATE'],
    [assetTopic, json({ value: 1, at: 5 }), 'INVALID_AT'],
    [assetTopic, json({ value: 'x'.repeat(2000) }), 'PAYLOAD_TOO_LARGE'],
    [deviceAssetTopic, Buffer.from('not json'), 'MALFORMED_JSON'],
    [deviceAssetTopic, json('str'), 'INVALID_STATE'],
    [deviceAssetTopic, json({ value: 1, at: {} }), 'INVALID_AT'],
    [deviceAssetTopic, Buffer.alloc(1025, 0x20), 'PAYLOAD_TOO_LARGE'],
    [stateTopic, Buffer.from('{"t": '), 'MALFORMED_JSON'],
    // '[' starts a JSON batch (an array of device states); [1] holds no device state.
    [stateTopic, Buffer.from('  [1]'), 'INVALID_STATE'],
    [stateTopic, Buffer.from('  @1'), 'MALFORMED_CBOR'],
    [stateTopic, json([1]).subarray(0, 0), 'MALFORMED_JSON'],
    [stateTopic, Buffer.from([0xa1, 0x61]), 'MALFORMED_CBOR'],
    [stateTopic, Buffer.from([0xa1, 0x61, 0x74, 0x01, 0x00]), 'MALFORMED_CBOR'],
    [stateTopic, Buffer.from([0x1c]), 'MALFORMED_CBOR'],
    [stateTopic, Buffer.alloc(2048, 0xa0), 'PAYLOAD_TOO_LARGE'],
  ];
  for (const [topic, payload, code] of cases) {
    const before = b.rejections.rows.length;
    await c.publishAsync(topic, payload, { qos: 1 });
    assert.is(b.rejections.rows.length, before + 1, `${topic} ${code}`);
    assert.is(b.rejections.rows[before].code, code, `${topic}: ${payload.subarray(0, 20).toString('hex')}`);
    // Another device is served between every bad message.
    await bystander.publishAsync(`device/${byId.id}/asset/t/state`, json({ value: 1 }), { qos: 1 });
  }
  assert.ok(b.appended.every((e) => e.deviceId === byId.id), 'nothing of the bad device was appended');
  assert.is(b.appended.length, cases.length);
  assert.ok(c.connected);
});

// ---------------------------------------------------------------- TLS
const tls = suite('mqtt edge over TLS');

unless('mqtt-edge TLS', opensslMissing(), () => tls('with tls {cert, key} the listener speaks MQTT over TLS only: uplinks and commands work, untrusted or plain clients do not connect', async () => {
  const tmp = tempDir('mqtt-tls');
  const pair = selfSignedCertificate(tmp.dir);
  if (pair === undefined) throw new Error('openssl made no certificate');
  const t = await MqttStack.start({ edge: { tls: pair } });
  try {
    const d = await t.device('secure', [{ name: 't', profile: { type: 'number' } }]);
    const url = `mqtts://127.0.0.1:${t.edge.port}`;
    const c = await mqtt.connectAsync(url, { ca: pair.cert, username: d.token, password: d.token, reconnectPeriod: 0, connectTimeout: 5000 });
    try {
      assert.equal((await c.subscribeAsync(`device/${d.deviceId}/asset/+/feed`, { qos: 1 }))[0].qos, 1);
      await c.publishAsync(`device/${d.deviceId}/asset/t/state`, json({ value: 7 }), { qos: 1 });
      assert.is(t.appended.length, 1, 'durable before the PUBACK, over TLS');
      assert.is(t.appended[0].deviceId, d.deviceId);
    } finally {
      await c.endAsync();
    }
    const untrusted = await mqtt.connectAsync(url, { username: d.token, password: d.token, reconnectPeriod: 0, connectTimeout: 3000 }, false).then(
      (client) => { client.end(true); return undefined; },
      (error: Error) => error,
    );
    assert.ok(untrusted !== undefined, 'a client that does not trust the certificate is refused');
    assert.match(String((untrusted as Error & { code?: string }).code ?? untrusted.message), /SELF_SIGNED|self.signed|certificate/i);
    const plain = await mqtt.connectAsync(`mqtt://127.0.0.1:${t.edge.port}`, { username: d.token, password: d.token, reconnectPeriod: 0, connectTimeout: 2000 }, false).then(
      (client) => { client.end(true); return undefined; },
      (error: Error) => error,
    );
    assert.ok(plain !== undefined, 'plain MQTT on the TLS port does not connect');
    assert.is(t.appended.length, 1);
  } finally {
    await t.stop();
    tmp.remove();
  }
}));

e2e.run();
acl.run();
bad.run();
tls.run();
