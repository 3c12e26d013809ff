/**
 * The embedded edge with MQTT 5 and 3.1.1 clients (mqtt.js): limits advertised in CONNACK, states
 * on every topic shape, refusal reason codes (PUBACK, SUBACK, DISCONNECT) recorded once, commands
 * and feeds on both topic shapes, sessions resumed, client ids bound to their principal.
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { encode as cborEncode } from 'cbor-x';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { connect as tcpConnect } from 'node:net';
import mqttPacket from 'mqtt-packet';
import { MqttStack, pubackCode, subackCodes, type SeededDevice } from '../../support/mqttStack.ts';
import { waitFor } from '../../support/tmp.ts';

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

/** Connects and returns the client with its CONNACK; `close` events are kept for the test to read. */
async function connect(url: string, token: string, extra: IClientOptions = {}): Promise<{ client: MqttClient; connack: mqtt.IConnackPacket; disconnects: mqtt.IDisconnectPacket[] }> {
  const client = mqtt.connect(url, { username: token, password: token, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 5, ...extra });
  const disconnects: mqtt.IDisconnectPacket[] = [];
  client.on('disconnect', (packet) => disconnects.push(packet));
  const connack = await new Promise<mqtt.IConnackPacket>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  return { client, connack, disconnects };
}

const closed = (client: MqttClient) => new Promise<void>((resolve) => (client.connected ? client.once('close', () => resolve()) : resolve()));

// ---------------------------------------------------------------- MQTT 5
const v5 = suite('mqtt 5 on the embedded edge');
let s: MqttStack;
let dev: SeededDevice;
let other: SeededDevice;
const clients: MqttClient[] = [];
v5.before(async () => {
  s = await MqttStack.start({ pipeline: true, edge: { maxRefusals: 100, maxPayloadBytes: 1024 } });
  dev = await s.device('five', [{ name: 't', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
  other = await s.device('other', [{ name: 't', profile: { type: 'number' } }]);
});
v5.after(async () => {
  for (const c of clients) c.end(true);
  await s.stop();
});

v5('CONNACK advertises the limits: packet size, receive maximum, topic aliases, QoS 1, no retain, no shared subscriptions', async () => {
  const { client, connack } = await connect(s.url, dev.token);
  clients.push(client);
  assert.is(connack.reasonCode, 0);
  const p = connack.properties!;
  assert.is(p.maximumPacketSize, 256 * 1024);
  assert.is(p.receiveMaximum, 32);
  assert.is(p.topicAliasMaximum, 16);
  assert.is(p.maximumQoS, 1);
  assert.is(p.retainAvailable, false);
  assert.is(p.sharedSubscriptionAvailable, false);
  assert.is(p.wildcardSubscriptionAvailable, true);
});

v5('states on every topic shape are stored; the MQTT 5 content type picks CBOR; topic aliases work', async () => {
  const { client } = await connect(s.url, dev.token);
  clients.push(client);
  const before = s.appended.length;
  await client.publishAsync(`asset/${dev.assetIds.t}/state`, json({ value: 1 }), { qos: 1 });
  assert.is(s.appended.length, before + 1, 'durable before the PUBACK');
  await client.publishAsync(`device/${dev.deviceId}/asset/t/state`, json({ value: 2 }), { qos: 1 });
  await client.publishAsync(`device/${dev.deviceId}/state`, Buffer.from(cborEncode({ t: 3 })), { qos: 1, properties: { contentType: 'application/cbor' } });
  await client.publishAsync(`device/${dev.deviceId}/asset/t/state`, json({ value: 4 }), { qos: 1, properties: { topicAlias: 3 } });
  await client.publishAsync('', json({ value: 5 }), { qos: 1, properties: { topicAlias: 3 } });
  await client.publishAsync(`device/${dev.deviceId}/state`, json({ t: { value: 6 } }), { qos: 0 });
  await waitFor(() => s.appended.length === before + 6, 5000, 'six appended');
  assert.equal(s.appended.slice(before).map((e) => [e.contentType, e.asset ?? null]), [
    ['json', 't'], ['json', 't'], ['cbor', null], ['json', 't'], ['json', 't'], ['json', null],
  ]);
  await waitFor(async () => (await s.store!.history({ deviceId: dev.deviceId, asset: 't' })).length === 6, 10_000, 'stored');
});

v5('refused publishes get PUBACK reason codes with a reason string, and are recorded once each', async () => {
  const { client } = await connect(s.url, dev.token);
  clients.push(client);
  const reasons: string[] = [];
  client.on('packetreceive', (p) => { if (p.cmd === 'puback' && p.properties?.reasonString) reasons.push(p.properties.reasonString); });
  const mine = () => s.rejections.rows.filter((r) => r.deviceId === dev.deviceId).length;
  const before = mine();
  const appended = s.appended.length;
  assert.is(await pubackCode(client, `device/${other.deviceId}/state`, json({ t: { value: 1 } })), 0x87, 'another device: not authorized');
  assert.is(await pubackCode(client, 'random/topic', json({})), 0x87, 'not an uplink topic');
  assert.is(await pubackCode(client, `device/${dev.deviceId}/asset/nope/state`, json({ value: 1 })), 0x90, 'unknown asset: topic name invalid');
  assert.is(await pubackCode(client, `device/${dev.deviceId}/asset/t/state`, Buffer.from('{"value":')), 0x99, 'malformed JSON');
  assert.is(await pubackCode(client, `device/${dev.deviceId}/asset/t/state`, json({ value: 'warm' })), 0x99, 'profile violation');
  assert.is(await pubackCode(client, `device/${dev.deviceId}/asset/t/state`, Buffer.from([0xff, 0xfe]), { payloadFormatIndicator: true }), 0x99, 'not the UTF-8 it claims');
  assert.is(await pubackCode(client, `device/${dev.deviceId}/asset/t/state`, json({ value: 'x'.repeat(2000) })), 0x83, 'payload above maxPayloadBytes');
  assert.is(mine(), before + 7, 'each refusal recorded once');
  assert.is(s.appended.length, appended, 'nothing appended');
  assert.is(reasons.length, 7);
  assert.match(reasons[0], /^FORBIDDEN: /);
  assert.match(reasons[2], /^UNKNOWN_ASSET: device has no asset "nope"/);
  assert.ok(client.connected);
});

v5('SUBACK reason codes: 0x87 not authorized, 0x9E shared subscriptions; QoS granted up to 1 (0x8F: mqtt-hostile)', async () => {
  const { client } = await connect(s.url, dev.token);
  clients.push(client);
  const codes = await subackCodes(client, [
    `device/${other.deviceId}/asset/+/command`, `$share/g/device/${dev.deviceId}/asset/+/command`, '#',
    `device/${dev.deviceId}/asset/+/command`, `asset/${dev.assetIds.t}/feed`,
  ], 1);
  assert.equal(codes, [0x87, 0x9e, 0x87, 1, 1]);
  const { client: c2 } = await connect(s.url, dev.token);
  clients.push(c2);
  const granted = await c2.subscribeAsync(`device/${dev.deviceId}/asset/led/command`, { qos: 2 });
  assert.is(granted[0].qos, 1, 'QoS 2 requested, 1 granted');
});

v5('QoS 2 and retained publishes are protocol errors in MQTT 5: DISCONNECT 0x9B / 0x9A, nothing appended', async () => {
  for (const [options, code] of [[{ qos: 2 }, 0x9b], [{ qos: 1, retain: true }, 0x9a]] as const) {
    const { client, disconnects } = await connect(s.url, dev.token);
    const appended = s.appended.length;
    const gone = closed(client);
    client.publish(`device/${dev.deviceId}/asset/t/state`, json({ value: 1 }), options as mqtt.IClientPublishOptions);
    await gone;
    assert.equal(disconnects.map((d) => d.reasonCode), [code]);
    assert.is(s.appended.length, appended);
  }
});

v5('feeds reach both topic shapes, asset/<id>/feed included, for MQTT 5 and 3.1.1 subscribers', async () => {
  const { client: five } = await connect(s.url, dev.token);
  const three = await s.connect(s.userToken);
  clients.push(five);
  const got5: string[] = [];
  const got3: string[] = [];
  five.on('message', (topic, payload) => got5.push(`${topic} ${JSON.parse(payload.toString()).value}`));
  three.on('message', (topic, payload) => got3.push(`${topic} ${JSON.parse(payload.toString()).value}`));
  await five.subscribeAsync(`asset/${dev.assetIds.t}/feed`, { qos: 0 });
  await three.subscribeAsync([`asset/${dev.assetIds.t}/feed`, `device/${dev.deviceId}/asset/t/feed`], { qos: 0 });
  await five.publishAsync(`device/${dev.deviceId}/asset/t/state`, json({ value: 42 }), { qos: 1 });
  await waitFor(() => got5.length === 1 && got3.length === 2, 10_000, 'feeds');
  assert.equal(got5, [`asset/${dev.assetIds.t}/feed 42`]);
  assert.equal(got3.sort(), [`asset/${dev.assetIds.t}/feed 42`, `device/${dev.deviceId}/asset/t/feed 42`]);
});

v5('commands reach an MQTT 5 subscriber on both topic shapes', async () => {
  const { client } = await connect(s.url, dev.token);
  clients.push(client);
  const got: string[] = [];
  client.on('message', (topic, payload) => got.push(`${topic} ${payload.toString()}`));
  await client.subscribeAsync([`asset/${dev.assetIds.led}/command`, `device/${dev.deviceId}/asset/+/command`], { qos: 1 });
  const payload = json({ value: true, at: '2026-01-01T00:00:00.000Z' });
  assert.is(await s.edge.commands.deliver({ commandId: 'c1', deviceId: dev.deviceId, asset: { id: dev.assetIds.led, name: 'led' }, payload }), 'delivered');
  await waitFor(() => got.length === 2, 2000, 'both shapes');
  assert.equal(got.sort(), [`asset/${dev.assetIds.led}/command ${payload}`, `device/${dev.deviceId}/asset/led/command ${payload}`]);
  assert.is(await s.edge.commands.deliver({ commandId: 'c2', deviceId: other.deviceId, asset: { id: 'x', name: 't' }, payload }), 'offline');
});

// ---------------------------------------------------------------- sessions
const sessions = suite('mqtt sessions bound to the device');
let ss: MqttStack;
let a: SeededDevice;
let b: SeededDevice;
sessions.before(async () => {
  ss = await MqttStack.start({ edge: { maxRefusals: 100 } });
  a = await ss.device('a', [{ name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
  b = await ss.device('b', [{ name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
});
sessions.after(async () => ss.stop());

const command = (d: SeededDevice, value: boolean) => ss.edge.commands.deliver({
  commandId: `c-${value}`, deviceId: d.deviceId, asset: { id: d.assetIds.led, name: 'led' }, payload: json({ value }),
});

sessions('an MQTT 5 session with an expiry is resumed: session present, subscriptions kept, commands delivered without subscribing again', async () => {
  const first = await connect(ss.url, a.token, { clientId: 'sess-a', clean: false, properties: { sessionExpiryInterval: 60 } });
  assert.is(first.connack.sessionPresent, false);
  await first.client.subscribeAsync(`device/${a.deviceId}/asset/+/command`, { qos: 1 });
  await first.client.endAsync();
  assert.is(await command(a, true), 'offline', 'nobody connected');
  const second = await connect(ss.url, a.token, { clientId: 'sess-a', clean: false, properties: { sessionExpiryInterval: 60 } });
  assert.is(second.connack.sessionPresent, true);
  const got: string[] = [];
  second.client.on('message', (_t, p) => got.push(p.toString()));
  assert.is(await command(a, false), 'delivered');
  assert.equal(got, [JSON.stringify({ value: false })]);
  await second.client.endAsync();
  const clean = await connect(ss.url, a.token, { clientId: 'sess-a', clean: true });
  assert.is(clean.connack.sessionPresent, false, 'clean start discards it');
  assert.is(await command(a, true), 'offline');
  await clean.client.endAsync();
});

sessions('MQTT 3.1.1 persistent sessions (clean session 0) are resumed; clean ones are not', async () => {
  const first = await ss.connect(a.token, { clientId: 'sess-311', clean: false });
  await first.subscribeAsync(`asset/${a.assetIds.led}/command`, { qos: 1 });
  await first.endAsync();
  const again = mqtt.connect(ss.url, { username: a.token, password: a.token, clientId: 'sess-311', clean: false, reconnectPeriod: 0 });
  const connack = await new Promise<mqtt.IConnackPacket>((resolve) => again.once('connect', resolve));
  assert.is(connack.sessionPresent, true);
  const got: string[] = [];
  again.on('message', (t) => got.push(t));
  assert.is(await command(a, true), 'delivered');
  assert.equal(got, [`asset/${a.assetIds.led}/command`]);
  await again.endAsync();
});

sessions('another device cannot take a client id over (CONNACK 0x85 / 2), nor see its session; the victim stays connected', async () => {
  const victim = await connect(ss.url, a.token, { clientId: 'shared-id', clean: false, properties: { sessionExpiryInterval: 60 } });
  await victim.client.subscribeAsync(`device/${a.deviceId}/asset/+/command`, { qos: 1 });
  const thief5 = await connect(ss.url, b.token, { clientId: 'shared-id', clean: false }).then(() => 'connected', (e: { code?: number }) => e.code);
  assert.is(thief5, 0x85);
  const thief3 = await mqtt.connectAsync(ss.url, { username: b.token, password: b.token, clientId: 'shared-id', reconnectPeriod: 0 }).then(() => 'connected', (e: { code?: number }) => e.code);
  assert.is(thief3, 2);
  const user = await mqtt.connectAsync(ss.url, { username: ss.userToken, clientId: 'shared-id', reconnectPeriod: 0 }).then(() => 'connected', (e: { code?: number }) => e.code);
  assert.is(user, 2, 'a user of the same ground neither');
  assert.ok(victim.client.connected, 'the victim was not disconnected');
  const got: string[] = [];
  victim.client.on('message', (t) => got.push(t));
  assert.is(await command(a, true), 'delivered');
  assert.is(got.length, 1);
  // Once the victim's session is gone the id is free.
  await victim.client.endAsync();
  const later = await connect(ss.url, a.token, { clientId: 'shared-id', clean: true });
  await later.client.endAsync();
  const free = await connect(ss.url, b.token, { clientId: 'shared-id', clean: true });
  assert.is(free.connack.reasonCode, 0);
  await free.client.endAsync();
});

sessions('the same device reconnecting takes its session over: the older connection gets DISCONNECT 0x8E', async () => {
  const older = await connect(ss.url, a.token, { clientId: 'takeover', clean: false, properties: { sessionExpiryInterval: 60 } });
  await older.client.subscribeAsync(`device/${a.deviceId}/asset/led/command`, { qos: 1 });
  const gone = closed(older.client);
  const newer = await connect(ss.url, a.token, { clientId: 'takeover', clean: false, properties: { sessionExpiryInterval: 60 } });
  await gone;
  assert.equal(older.disconnects.map((d) => d.reasonCode), [0x8e]);
  assert.is(newer.connack.sessionPresent, true);
  const got: string[] = [];
  newer.client.on('message', (t) => got.push(t));
  assert.is(await command(a, false), 'delivered');
  assert.equal(got, [`device/${a.deviceId}/asset/led/command`]);
  await newer.client.endAsync();
});

sessions('an MQTT 5 client without a client id gets one assigned', async () => {
  const { client, connack } = await connect(ss.url, a.token, { clientId: '' });
  assert.match(String(connack.properties?.assignedClientIdentifier), /^fs-/);
  await client.endAsync();
});

sessions('a refused QoS 1 publish sent again after a reconnect (DUP, same packet id) is recorded once', async () => {
  const strict = await MqttStack.start({ edge: { maxRefusals: 0 } });
  try {
    const d = await strict.device('dup', [{ name: 't', profile: { type: 'number' } }]);
    // The refusal that uses the allowance up is acknowledged before the close, so the client has nothing to resend.
    const c = await strict.connect(d.token, { clientId: 'dup-client', clean: false });
    const gone = closed(c);
    await c.publishAsync('not/an/uplink', json({}), { qos: 1 });
    await gone;
    assert.is(strict.rejections.rows.length, 1);
    // A client that lost the PUBACK resends with DUP and the same packet id: answered, not recorded again.
    const socket = tcpConnect(strict.edge.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    const acks: number[] = [];
    const parser = mqttPacket.parser({ protocolVersion: 4 });
    parser.on('packet', (p) => { if (p.cmd === 'puback') acks.push(p.messageId!); });
    socket.on('data', (chunk) => parser.parse(chunk));
    socket.write(mqttPacket.generate({ cmd: 'connect', clientId: 'dup-client', clean: false, username: d.token, protocolVersion: 4, keepalive: 0 } as mqttPacket.IConnectPacket));
    socket.write(mqttPacket.generate({ cmd: 'publish', topic: 'other/topic', payload: json({}), qos: 1, messageId: 7, dup: false, retain: false }));
    await waitFor(() => acks.length === 1, 3000, 'first answer');
    socket.destroy();
    await waitFor(() => strict.edge.stats.connected === 0, 3000, 'closed');
    const again = tcpConnect(strict.edge.port, '127.0.0.1');
    await new Promise((r) => again.once('connect', r));
    again.on('data', (chunk) => parser.parse(chunk));
    again.write(mqttPacket.generate({ cmd: 'connect', clientId: 'dup-client', clean: false, username: d.token, protocolVersion: 4, keepalive: 0 } as mqttPacket.IConnectPacket));
    again.write(mqttPacket.generate({ cmd: 'publish', topic: 'other/topic', payload: json({}), qos: 1, messageId: 7, dup: true, retain: false }));
    await waitFor(() => acks.length === 2, 3000, 'resend answered');
    again.destroy();
    assert.equal(acks, [7, 7]);
    assert.is(strict.rejections.rows.length, 2, 'the first connection and the first publish of the second, not the resend');
  } finally {
    await strict.stop();
  }
});

v5.run();
sessions.run();
