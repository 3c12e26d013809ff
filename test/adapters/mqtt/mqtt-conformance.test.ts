/**
 * MQTT 5.0 normative statements a server must keep for the packets the embedded edge accepts
 * (CONNECT, PUBLISH, PUBACK, PUBREL, SUBSCRIBE, UNSUBSCRIBE, PINGREQ, DISCONNECT, AUTH), each test
 * named after its conformance id (or its section where the statement has none), over raw sockets.
 * docs/mqtt.md lists them with what the edge does. MQTT 3.1.1 behaviour that must not change is
 * checked beside the MQTT 5 rule where the two differ.
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import mqttPacket from 'mqtt-packet';
import { createMqttEdge, type MqttEdge } from '../../../adapters/mqtt/gateway/createMqttEdge.ts';
import { varintBytes } from '../../../adapters/mqtt/gateway/FrameReader.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { MqttStack, type SeededDevice } from '../../support/mqttStack.ts';
import { waitFor } from '../../support/tmp.ts';
import { raw, type Raw } from '../../support/rawMqtt.ts';

/** A packet from its first byte and body (the Remaining Length is computed). */
const frame = (first: number, body: number[] | Buffer) => Buffer.concat([Buffer.from([first, ...varintBytes(body.length)]), Buffer.from(body)]);

function connectPacket(token: string, version: 4 | 5, extra: Partial<mqttPacket.IConnectPacket> = {}): Buffer {
  return mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clientId: '', clean: true, keepalive: 0, username: token, ...extra } as mqttPacket.IConnectPacket);
}

/** Sends CONNECT and waits for the CONNACK (whatever its code). */
async function connack(port: number, packet: Buffer, version: 4 | 5): Promise<{ r: Raw; ack: mqttPacket.IConnackPacket }> {
  const r = await raw(port, version);
  r.socket.write(packet);
  await waitFor(() => r.packets.some((p) => p.cmd === 'connack'), 3000, 'CONNACK');
  return { r, ack: r.packets.find((p) => p.cmd === 'connack') as mqttPacket.IConnackPacket };
}

/** A connection whose CONNECT was accepted. */
async function open(port: number, token: string, version: 4 | 5, extra: Partial<mqttPacket.IConnectPacket> = {}): Promise<Raw> {
  const { r, ack } = await connack(port, connectPacket(token, version, extra), version);
  assert.is(version === 5 ? ack.reasonCode : ack.returnCode, 0, 'CONNECT accepted');
  return r;
}

const withinMs = (p: Promise<void>, ms: number, what: string) => Promise.race([p, new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);

/** Waits for the close; the reason code of the DISCONNECT sent before it (undefined: none). */
async function closedWith(r: Raw, what: string): Promise<number | undefined> {
  await withinMs(r.closed, 3000, what);
  return (r.packets.find((p) => p.cmd === 'disconnect') as mqttPacket.IDisconnectPacket | undefined)?.reasonCode;
}

const t = suite('mqtt 5 conformance of the embedded edge');
let s: MqttStack;
let dev: SeededDevice;
const stateTopic = () => `device/${dev.deviceId}/asset/t/state`;
t.before(async () => {
  s = await MqttStack.start({ edge: { maxRefusals: 1000, ackTimeoutMs: 1500 } });
  dev = await s.device('conformance', [{ name: 't', profile: { type: 'number' } }, { name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
});
t.after(async () => s.stop());

// ---------------------------------------------------------------- CONNECT

t('MQTT-4.12.0-1: a CONNECT with an Authentication Method the edge does not support gets CONNACK 0x8C (Bad authentication method) and is closed', async () => {
  const { r, ack } = await connack(s.edge.port, connectPacket(dev.token, 5, { properties: { authenticationMethod: 'SCRAM-SHA-256', authenticationData: Buffer.from('client-first') } }), 5);
  assert.is(ack.reasonCode, 0x8c);
  assert.is(ack.sessionPresent, false);
  // [MQTT-3.1.4-6]: nothing the client sent after the refused CONNECT is processed.
  const before = s.appended.length;
  r.socket.write(mqttPacket.generate({ cmd: 'publish', topic: stateTopic(), payload: '{"value":1}', qos: 1, messageId: 1, dup: false, retain: false }, { protocolVersion: 5 }));
  await withinMs(r.closed, 2000, 'closed after CONNACK 0x8C');
  assert.is(s.appended.length, before);
  assert.equal(r.packets.map((p) => p.cmd), ['connack']);
});

t('§3.1.2.11.10: Authentication Data without an Authentication Method is a Protocol Error: CONNACK 0x82, closed', async () => {
  const { r, ack } = await connack(s.edge.port, connectPacket(dev.token, 5, { properties: { authenticationData: Buffer.from('x') } }), 5);
  assert.is(ack.reasonCode, 0x82);
  await withinMs(r.closed, 2000, 'closed');
});

// MQTT 3.1.1 has neither Maximum QoS nor Retain Available: its QoS 2 publishes are taken, and so are such Wills.
const refusedWills = [
  { name: 'MQTT-3.2.2-12: a Will QoS above the Maximum QoS (1) is refused: CONNACK 0x9B (QoS not supported), closed; MQTT 3.1.1 unchanged', qos: 2 as const, retain: false, reasonCode: 0x9b },
  { name: 'MQTT-3.2.2-13: a Will with Retain 1 while Retain Available is 0 is refused: CONNACK 0x9A (Retain not supported), closed; MQTT 3.1.1 unchanged', qos: 1 as const, retain: true, reasonCode: 0x9a },
];
for (const { name, qos, retain, reasonCode } of refusedWills) {
  t(name, async () => {
    const will = { topic: `device/${dev.deviceId}/asset/t/state`, payload: Buffer.from('{"value":0}'), qos, retain };
    const { r, ack } = await connack(s.edge.port, connectPacket(dev.token, 5, { will }), 5);
    assert.is(ack.reasonCode, reasonCode);
    await withinMs(r.closed, 2000, 'closed');
    const old = await open(s.edge.port, dev.token, 4, { will });
    old.socket.destroy();
  });
}

t('§3.1.2.11: a CONNECT property twice, Receive Maximum 0 or Maximum Packet Size 0 is a Protocol Error: CONNACK 0x82, closed', async () => {
  // Session Expiry Interval (0x11) twice, Receive Maximum (0x21) 0, Maximum Packet Size (0x27) 0.
  for (const props of [[0x11, 0, 0, 0, 1, 0x11, 0, 0, 0, 2], [0x21, 0, 0], [0x27, 0, 0, 0, 0]]) {
    const token = Buffer.from(dev.token);
    const body = [0, 4, ...Buffer.from('MQTT'), 5, 0x82, 0, 0, props.length, ...props, 0, 0, token.length >> 8, token.length & 0xff, ...token];
    const { r, ack } = await connack(s.edge.port, frame(0x10, body), 5);
    assert.is(ack.reasonCode, 0x82, `properties ${Buffer.from(props).toString('hex')}`);
    await withinMs(r.closed, 2000, 'closed');
  }
});

t('MQTT-3.1.2-3: a CONNECT whose reserved Connect Flags bit is 1 is malformed: closed without CONNACK', async () => {
  const packet = Buffer.from(connectPacket(dev.token, 5));
  // Fixed header (2 bytes), protocol name (6), level (1): the Connect Flags byte.
  packet[9] |= 1;
  const r = await raw(s.edge.port, 5);
  r.socket.write(packet);
  await withinMs(r.closed, 2000, 'closed');
  assert.equal(r.packets, []);
});

t('MQTT-3.1.2-22: no packet for 1.5 × Keep Alive closes the connection (MQTT 5: DISCONNECT 0x8D)', async () => {
  const r = await open(s.edge.port, dev.token, 5, { keepalive: 1 });
  const started = Date.now();
  assert.is(await closedWith(r, 'keep alive'), 0x8d);
  assert.ok(Date.now() - started >= 1400, 'not before 1.5 × Keep Alive');
});

t('MQTT-4.12.0-6: a client that named no Authentication Method gets none in CONNACK, and no AUTH', async () => {
  const r = await open(s.edge.port, dev.token, 5);
  r.socket.write(frame(0xc0, []));
  await waitFor(() => r.packets.some((p) => p.cmd === 'pingresp'), 2000, 'PINGRESP');
  assert.is((r.packets[0] as mqttPacket.IConnackPacket).properties?.authenticationMethod, undefined);
  assert.ok(!r.packets.some((p) => p.cmd === 'auth'));
  r.socket.destroy();
});

t('§2.2.2.2: a property not valid in CONNECT (Topic Alias) is malformed: CONNACK 0x81, closed', async () => {
  const token = Buffer.from(dev.token);
  const props = [0x23, 0, 1];
  const body = [0, 4, ...Buffer.from('MQTT'), 5, 0x82, 0, 0, props.length, ...props, 0, 0, token.length >> 8, token.length & 0xff, ...token];
  const { r, ack } = await connack(s.edge.port, frame(0x10, body), 5);
  assert.is(ack.reasonCode, 0x81);
  await withinMs(r.closed, 2000, 'closed');
});

// ---------------------------------------------------------------- fixed header flags

t('MQTT-2.1.3-1: a CONNECT whose reserved fixed-header flags are not 0 is malformed: closed without CONNACK', async () => {
  const packet = Buffer.from(connectPacket(dev.token, 5));
  packet[0] = 0x12;
  const r = await raw(s.edge.port, 5);
  r.socket.write(packet);
  await withinMs(r.closed, 2000, 'closed');
  assert.equal(r.packets, []);
});

const flagCases: { id: string; what: string; packet: (version: 4 | 5) => Buffer }[] = [
  { id: 'MQTT-2.1.3-1', what: 'PUBACK with flags 0x2', packet: () => frame(0x42, [0, 1]) },
  { id: 'MQTT-2.1.3-1', what: 'PINGREQ with flags 0x1', packet: () => frame(0xc1, []) },
  { id: 'MQTT-3.6.1-1', what: 'PUBREL with flags 0x0 (must be 0x2)', packet: () => frame(0x60, [0, 1]) },
  { id: 'MQTT-3.8.1-1', what: 'SUBSCRIBE with flags 0x0 (must be 0x2)', packet: (v) => frame(0x80, [0, 1, ...(v === 5 ? [0] : []), 0, 1, 0x23, 0]) },
  { id: 'MQTT-3.10.1-1', what: 'UNSUBSCRIBE with flags 0x0 (must be 0x2)', packet: (v) => frame(0xa0, [0, 1, ...(v === 5 ? [0] : []), 0, 1, 0x23]) },
  { id: 'MQTT-3.14.1-1', what: 'DISCONNECT with flags 0x1', packet: () => frame(0xe1, []) },
  { id: 'MQTT-3.15.1-1', what: 'AUTH with flags 0x1', packet: () => frame(0xf1, []) },
];
for (const c of flagCases) {
  t(`${c.id}: ${c.what} is malformed: closed (MQTT 5: DISCONNECT 0x81 Malformed Packet), nothing answered`, async () => {
    for (const version of [4, 5] as const) {
      const r = await open(s.edge.port, dev.token, version);
      r.socket.write(c.packet(version));
      const reason = await closedWith(r, `${c.what}, v${version}`);
      if (version === 5) assert.is(reason, 0x81, `v${version}`);
      assert.equal(r.packets.map((p) => p.cmd).filter((cmd) => cmd !== 'disconnect'), ['connack'], `v${version}: nothing answered`);
    }
  });
}

t('§2.2 (Remaining Length of PINGREQ is 0): a PINGREQ with a body is malformed: closed (MQTT 5: DISCONNECT 0x81)', async () => {
  const r = await open(s.edge.port, dev.token, 5);
  r.socket.write(frame(0xc0, [0]));
  assert.is(await closedWith(r, 'PINGREQ with a body'), 0x81);
  assert.ok(!r.packets.some((p) => p.cmd === 'pingresp'));
});

t('MQTT-3.12.4-1: a PINGREQ is answered with PINGRESP', async () => {
  for (const version of [4, 5] as const) {
    const r = await open(s.edge.port, dev.token, version);
    r.socket.write(frame(0xc0, []));
    await waitFor(() => r.packets.some((p) => p.cmd === 'pingresp'), 2000, 'PINGRESP');
    r.socket.destroy();
  }
});

// ---------------------------------------------------------------- PUBLISH

t('MQTT-3.3.4-6: a PUBLISH from a client carrying a Subscription Identifier is a Protocol Error: DISCONNECT 0x82, nothing appended', async () => {
  const before = s.appended.length;
  const r = await open(s.edge.port, dev.token, 5);
  // Topic, packet id 1, properties: Subscription Identifier (0x0B) 7.
  const topic = Buffer.from(stateTopic());
  r.socket.write(frame(0x32, [topic.length >> 8, topic.length & 0xff, ...topic, 0, 1, 2, 0x0b, 7, ...Buffer.from('{"value":5}')]));
  assert.is(await closedWith(r, 'PUBLISH with a Subscription Identifier'), 0x82);
  assert.ok(!r.packets.some((p) => p.cmd === 'puback'));
  assert.is(s.appended.length, before);
});

t('MQTT-3.3.1-4: a PUBLISH with both QoS bits set is malformed: DISCONNECT 0x81, nothing appended', async () => {
  const before = s.appended.length;
  const r = await open(s.edge.port, dev.token, 5);
  const topic = Buffer.from(stateTopic());
  r.socket.write(frame(0x36, [topic.length >> 8, topic.length & 0xff, ...topic, 0, 1, 0, ...Buffer.from('{"value":5}')]));
  assert.is(await closedWith(r, 'QoS 3'), 0x81);
  assert.is(s.appended.length, before);
});

t('MQTT-3.3.2-2: a Topic Name with a wildcard: DISCONNECT 0x90 (Topic Name invalid), nothing appended', async () => {
  const before = s.appended.length;
  for (const name of [`device/${dev.deviceId}/asset/+/state`, `device/${dev.deviceId}/#`]) {
    const r = await open(s.edge.port, dev.token, 5);
    r.socket.write(mqttPacket.generate({ cmd: 'publish', topic: name, payload: '{"value":1}', qos: 1, messageId: 1, dup: false, retain: false }, { protocolVersion: 5 }));
    assert.is(await closedWith(r, name), 0x90);
  }
  assert.is(s.appended.length, before);
});

t('MQTT-3.2.2-17, MQTT-3.3.2-8, MQTT-3.3.2-12: Topic Aliases 1…16 are taken; 0 or above the Topic Alias Maximum: DISCONNECT 0x94; an alias never set: 0x82', async () => {
  const before = s.appended.length;
  const r = await open(s.edge.port, dev.token, 5);
  r.socket.write(mqttPacket.generate({ cmd: 'publish', topic: stateTopic(), payload: '{"value":1}', qos: 1, messageId: 1, dup: false, retain: false, properties: { topicAlias: 16 } }, { protocolVersion: 5 }));
  r.socket.write(mqttPacket.generate({ cmd: 'publish', topic: '', payload: '{"value":2}', qos: 1, messageId: 2, dup: false, retain: false, properties: { topicAlias: 16 } }, { protocolVersion: 5 }));
  await waitFor(() => r.packets.filter((p) => p.cmd === 'puback').length === 2, 3000, 'two PUBACKs');
  assert.is(s.appended.length, before + 2);
  r.socket.destroy();
  for (const [alias, topic, reason] of [[17, stateTopic(), 0x94], [0, stateTopic(), 0x94], [5, '', 0x82]] as const) {
    const c = await open(s.edge.port, dev.token, 5);
    const t5 = Buffer.from(topic);
    c.socket.write(frame(0x32, [t5.length >> 8, t5.length & 0xff, ...t5, 0, 1, 3, 0x23, alias >> 8, alias & 0xff, ...Buffer.from('{"value":3}')]));
    assert.is(await closedWith(c, `alias ${alias}`), reason, `alias ${alias}`);
  }
  assert.is(s.appended.length, before + 2);
});

t('§2.2.2.2: a PUBLISH property given twice is a Protocol Error: DISCONNECT 0x82, nothing appended', async () => {
  const before = s.appended.length;
  const r = await open(s.edge.port, dev.token, 5);
  const topic = Buffer.from(stateTopic());
  // Payload Format Indicator (0x01) twice.
  r.socket.write(frame(0x32, [topic.length >> 8, topic.length & 0xff, ...topic, 0, 1, 4, 0x01, 1, 0x01, 1, ...Buffer.from('{"value":5}')]));
  assert.is(await closedWith(r, 'PUBLISH with a property twice'), 0x82);
  assert.is(s.appended.length, before);
});

// ---------------------------------------------------------------- SUBSCRIBE, UNSUBSCRIBE

t('§3.2.2.3.12: a SUBSCRIBE with a Subscription Identifier while CONNACK said Subscription Identifiers Available 0 is a Protocol Error: DISCONNECT 0xA1, nothing subscribed', async () => {
  const r = await open(s.edge.port, dev.token, 5);
  const ack = r.packets.find((p) => p.cmd === 'connack') as mqttPacket.IConnackPacket;
  assert.is(ack.properties?.subscriptionIdentifiersAvailable, false);
  const filter = `device/${dev.deviceId}/asset/led/command`;
  r.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos: 1 }], properties: { subscriptionIdentifier: 9 } } as mqttPacket.ISubscribePacket, { protocolVersion: 5 }));
  assert.is(await closedWith(r, 'SUBSCRIBE with a Subscription Identifier'), 0xa1);
  assert.ok(!r.packets.some((p) => p.cmd === 'suback'), 'no SUBACK');
  // Nothing was kept: a persistent session of the same client id has no subscription to resume.
  const again = await open(s.edge.port, dev.token, 5, { clientId: 'subid-check', clean: false, properties: { sessionExpiryInterval: 60 } });
  assert.is((again.packets.find((p) => p.cmd === 'connack') as mqttPacket.IConnackPacket).sessionPresent, false);
  again.socket.destroy();
});

const withoutTopicFilter = [
  { name: 'MQTT-3.8.3-2: a SUBSCRIBE without a Topic Filter is a Protocol Error: closed, no SUBACK', header: 0x82, packet: 'SUBSCRIBE', ack: 'suback' },
  { name: 'MQTT-3.10.3-2: an UNSUBSCRIBE without a Topic Filter is a Protocol Error: closed, no UNSUBACK', header: 0xa2, packet: 'UNSUBSCRIBE', ack: 'unsuback' },
];
for (const { name, header, packet, ack } of withoutTopicFilter) {
  t(name, async () => {
    for (const version of [4, 5] as const) {
      const r = await open(s.edge.port, dev.token, version);
      r.socket.write(frame(header, [0, 1, ...(version === 5 ? [0] : [])]));
      const reason = await closedWith(r, `empty ${packet} v${version}`);
      if (version === 5) assert.is(reason, 0x82);
      assert.ok(!r.packets.some((p) => p.cmd === ack));
    }
  });
}

t('MQTT-3.8.3-4: No Local on a shared subscription is a Protocol Error: DISCONNECT 0x82', async () => {
  const r = await open(s.edge.port, dev.token, 5);
  r.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 2, subscriptions: [{ topic: `$share/g/device/${dev.deviceId}/asset/t/feed`, qos: 0, nl: true }] } as mqttPacket.ISubscribePacket, { protocolVersion: 5 }));
  assert.is(await closedWith(r, 'No Local on a shared subscription'), 0x82);
  assert.ok(!r.packets.some((p) => p.cmd === 'suback'));
});

t('MQTT-3.8.3-5: reserved bits of the Subscription Options set: malformed, DISCONNECT 0x81', async () => {
  const r = await open(s.edge.port, dev.token, 5);
  r.socket.write(frame(0x82, [0, 1, 0, 0, 1, 0x23, 0x40]));
  assert.is(await closedWith(r, 'reserved subscription option bits'), 0x81);
});

// ---------------------------------------------------------------- what the edge sends

t('MQTT-3.1.2-29: with Request Problem Information 0, refusal PUBACK and SUBACK carry no Reason String', async () => {
  const r = await open(s.edge.port, dev.token, 5, { properties: { requestProblemInformation: false } });
  r.socket.write(mqttPacket.generate({ cmd: 'publish', topic: `device/${dev.deviceId}/asset/nope/state`, payload: '{"value":1}', qos: 1, messageId: 4, dup: false, retain: false }, { protocolVersion: 5 }));
  r.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 5, subscriptions: [{ topic: '#', qos: 0 }] } as mqttPacket.ISubscribePacket, { protocolVersion: 5 }));
  await waitFor(() => r.packets.some((p) => p.cmd === 'puback') && r.packets.some((p) => p.cmd === 'suback'), 3000, 'PUBACK and SUBACK');
  const puback = r.packets.find((p) => p.cmd === 'puback') as mqttPacket.IPubackPacket;
  const suback = r.packets.find((p) => p.cmd === 'suback') as mqttPacket.ISubackPacket;
  assert.is(puback.reasonCode, 0x90, 'still refused');
  assert.equal(suback.granted, [0x87], 'still refused');
  assert.is(puback.properties?.reasonString, undefined);
  assert.is(suback.properties?.reasonString, undefined);
  r.socket.destroy();
  // Asked for (the default): the reason is there.
  const asked = await open(s.edge.port, dev.token, 5);
  asked.socket.write(mqttPacket.generate({ cmd: 'publish', topic: `device/${dev.deviceId}/asset/nope/state`, payload: '{"value":1}', qos: 1, messageId: 4, dup: false, retain: false }, { protocolVersion: 5 }));
  await waitFor(() => asked.packets.some((p) => p.cmd === 'puback'), 3000, 'PUBACK');
  assert.match(String((asked.packets.find((p) => p.cmd === 'puback') as mqttPacket.IPubackPacket).properties?.reasonString), /UNKNOWN_ASSET/);
  asked.socket.destroy();
});

t('MQTT-3.4.2-2, MQTT-3.9.2-1, MQTT-3.14.2-3: a Reason String that would exceed the client\'s Maximum Packet Size is left out', async () => {
  const max = 40;
  const r = await open(s.edge.port, dev.token, 5, { clientId: 'small-packets', properties: { maximumPacketSize: max } });
  const sizes: number[] = [];
  r.socket.on('data', (chunk: Buffer) => sizes.push(chunk.length));
  r.socket.write(mqttPacket.generate({ cmd: 'publish', topic: `device/${dev.deviceId}/asset/nope/state`, payload: '{"value":1}', qos: 1, messageId: 4, dup: false, retain: false }, { protocolVersion: 5 }));
  await waitFor(() => r.packets.some((p) => p.cmd === 'puback'), 3000, 'PUBACK');
  r.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 5, subscriptions: [{ topic: '#', qos: 0 }] } as mqttPacket.ISubscribePacket, { protocolVersion: 5 }));
  await waitFor(() => r.packets.some((p) => p.cmd === 'suback'), 3000, 'SUBACK');
  // A packet type the edge never accepts from a client: DISCONNECT 0x82 with a long reason.
  r.socket.write(frame(0x50, [0, 9]));
  assert.is(await closedWith(r, 'PUBREC'), 0x82);
  const puback = r.packets.find((p) => p.cmd === 'puback') as mqttPacket.IPubackPacket;
  assert.is(puback.reasonCode, 0x90);
  for (const p of r.packets.filter((p) => p.cmd !== 'connack')) {
    assert.ok(mqttPacket.generate(p, { protocolVersion: 5 }).length <= max, `${p.cmd} within ${max} bytes`);
  }
  assert.ok(sizes.every((n) => n <= max * 3), 'nothing large was written');
});

t('MQTT-3.1.2-24: a command larger than the client\'s Maximum Packet Size is not sent (it stays queued: not counted as delivered)', async () => {
  const r = await open(s.edge.port, dev.token, 5, { clientId: 'small-commands', properties: { maximumPacketSize: 64 } });
  r.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `device/${dev.deviceId}/asset/led/command`, qos: 1 }] } as mqttPacket.ISubscribePacket, { protocolVersion: 5 }));
  await waitFor(() => r.packets.some((p) => p.cmd === 'suback'), 2000, 'SUBACK');
  const payload = new TextEncoder().encode(JSON.stringify({ value: true, at: '2026-11-28T00:00:00.000Z', pad: 'x'.repeat(40) }));
  assert.is(await s.edge.commands.deliver({ commandId: 'big', deviceId: dev.deviceId, asset: { id: dev.assetIds.led, name: 'led' }, payload }), 'offline');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.ok(!r.packets.some((p) => p.cmd === 'publish'));
  r.socket.destroy();
});

t('MQTT-3.14.2-1: the edge uses DISCONNECT reason codes only: the registry failing during an uplink gives 0x89 (Server busy), not the CONNACK code 0x88', async () => {
  let failing = false;
  const registry = {
    authenticate: s.registry.authenticate.bind(s.registry),
    getAssetById: s.registry.getAssetById.bind(s.registry),
    memberRole: s.registry.memberRole.bind(s.registry),
    getDevice: (...args: Parameters<typeof s.registry.getDevice>) => (failing ? Promise.reject(new Error('registry down')) : s.registry.getDevice(...args)),
  };
  const edge: MqttEdge = await createMqttEdge({ registry, admission: s.intake.admission, clock: systemClock, port: 0, host: '127.0.0.1', cacheTtlMs: 0 });
  try {
    const r = await open(edge.port, dev.token, 5);
    failing = true;
    r.socket.write(mqttPacket.generate({ cmd: 'publish', topic: stateTopic(), payload: '{"value":1}', qos: 1, messageId: 1, dup: false, retain: false }, { protocolVersion: 5 }));
    assert.is(await closedWith(r, 'registry failing'), 0x89);
  } finally {
    await edge.close();
  }
});

t('MQTT-3.3.4-9: the edge sends no more unacknowledged QoS 1 commands than the client\'s Receive Maximum', async () => {
  const r = await open(s.edge.port, dev.token, 5, { clientId: 'receive-one', properties: { receiveMaximum: 1 } });
  // Both command topic shapes of the asset: one command goes out on each.
  r.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [
    { topic: `device/${dev.deviceId}/asset/led/command`, qos: 1 }, { topic: `asset/${dev.assetIds.led}/command`, qos: 1 },
  ] } as mqttPacket.ISubscribePacket, { protocolVersion: 5 }));
  await waitFor(() => r.packets.some((p) => p.cmd === 'suback'), 2000, 'SUBACK');
  const payload = new TextEncoder().encode('{"value":true}');
  const outcome = s.edge.commands.deliver({ commandId: 'rm', deviceId: dev.deviceId, asset: { id: dev.assetIds.led, name: 'led' }, payload });
  await waitFor(() => r.packets.some((p) => p.cmd === 'publish'), 2000, 'a command');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const publishes = r.packets.filter((p) => p.cmd === 'publish') as mqttPacket.IPublishPacket[];
  assert.is(publishes.length, 1, 'one in flight at Receive Maximum 1');
  r.socket.write(mqttPacket.generate({ cmd: 'puback', messageId: publishes[0].messageId! }, { protocolVersion: 5 }));
  assert.is(await outcome, 'delivered');
  // The quota is free again: the next command goes out.
  const next = s.edge.commands.deliver({ commandId: 'rm2', deviceId: dev.deviceId, asset: { id: dev.assetIds.led, name: 'led' }, payload });
  await waitFor(() => r.packets.filter((p) => p.cmd === 'publish').length === 2, 2000, 'the next command');
  const second = r.packets.filter((p) => p.cmd === 'publish')[1] as mqttPacket.IPublishPacket;
  r.socket.write(mqttPacket.generate({ cmd: 'puback', messageId: second.messageId! }, { protocolVersion: 5 }));
  assert.is(await next, 'delivered');
  r.socket.destroy();
});

t('MQTT-3.3.4-9: a device at its Receive Maximum with a command unacknowledged is not "offline": the command is retried, not parked', async () => {
  const r = await open(s.edge.port, dev.token, 5, { clientId: 'receive-full', properties: { receiveMaximum: 1 } });
  r.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `device/${dev.deviceId}/asset/led/command`, qos: 1 }] } as mqttPacket.ISubscribePacket, { protocolVersion: 5 }));
  await waitFor(() => r.packets.some((p) => p.cmd === 'suback'), 2000, 'SUBACK');
  const payload = new TextEncoder().encode('{"value":true}');
  const first = s.edge.commands.deliver({ commandId: 'f1', deviceId: dev.deviceId, asset: { id: dev.assetIds.led, name: 'led' }, payload });
  await waitFor(() => r.packets.some((p) => p.cmd === 'publish'), 2000, 'a command');
  assert.is(await s.edge.commands.deliver({ commandId: 'f2', deviceId: dev.deviceId, asset: { id: dev.assetIds.led, name: 'led' }, payload }), 'unacknowledged');
  assert.is(r.packets.filter((p) => p.cmd === 'publish').length, 1);
  r.socket.destroy();
  assert.is(await first, 'unacknowledged');
});

// ---------------------------------------------------------------- DISCONNECT, AUTH, unexpected packets

t('§3.14.2.2.2: a DISCONNECT with a non-zero Session Expiry Interval after a CONNECT with 0 is a Protocol Error: DISCONNECT 0x82, no session kept', async () => {
  const r = await open(s.edge.port, dev.token, 5, { clientId: 'expiry-zero', clean: true });
  r.socket.write(mqttPacket.generate({ cmd: 'disconnect', reasonCode: 0, properties: { sessionExpiryInterval: 3600 } }, { protocolVersion: 5 }));
  assert.is(await closedWith(r, 'DISCONNECT with expiry'), 0x82);
  const again = await open(s.edge.port, dev.token, 5, { clientId: 'expiry-zero', clean: false, properties: { sessionExpiryInterval: 60 } });
  assert.is((again.packets.find((p) => p.cmd === 'connack') as mqttPacket.IConnackPacket).sessionPresent, false);
  again.socket.destroy();
});

t('MQTT-3.14.2-2: a DISCONNECT that shortens a non-zero Session Expiry Interval is taken; the edge sends none on its own DISCONNECT', async () => {
  const r = await open(s.edge.port, dev.token, 5, { clientId: 'expiry-short', clean: true, properties: { sessionExpiryInterval: 60 } });
  r.socket.write(mqttPacket.generate({ cmd: 'disconnect', reasonCode: 0, properties: { sessionExpiryInterval: 0 } }, { protocolVersion: 5 }));
  assert.is(await closedWith(r, 'DISCONNECT'), undefined, 'the client closed; no DISCONNECT back');
  const again = await open(s.edge.port, dev.token, 5, { clientId: 'expiry-short', clean: false, properties: { sessionExpiryInterval: 60 } });
  assert.is((again.packets.find((p) => p.cmd === 'connack') as mqttPacket.IConnackPacket).sessionPresent, false, 'expiry 0: the session ended');
  again.socket.write(connectPacket(dev.token, 5));
  await withinMs(again.closed, 2000, 'second CONNECT');
  const disconnect = again.packets.find((p) => p.cmd === 'disconnect') as mqttPacket.IDisconnectPacket;
  assert.is(disconnect.properties?.sessionExpiryInterval, undefined);
});

t('MQTT-4.12.0-7: an AUTH from a client that named no Authentication Method is a Protocol Error: DISCONNECT 0x82', async () => {
  const r = await open(s.edge.port, dev.token, 5);
  r.socket.write(mqttPacket.generate({ cmd: 'auth', reasonCode: 0x18, properties: { authenticationMethod: 'SCRAM-SHA-256' } } as mqttPacket.IAuthPacket, { protocolVersion: 5 }));
  assert.is(await closedWith(r, 'AUTH'), 0x82);
});

t('MQTT-4.13.1-1: PUBREC and PUBCOMP for PUBLISHes the edge never sent at QoS 2 are Protocol Errors: DISCONNECT 0x82', async () => {
  for (const first of [0x50, 0x70]) {
    const r = await open(s.edge.port, dev.token, 5);
    r.socket.write(frame(first, [0, 1]));
    assert.is(await closedWith(r, `packet 0x${first.toString(16)}`), 0x82);
  }
});

t('§3.6.2.1: a PUBREL from an MQTT 5 client (which cannot have a QoS 2 exchange open) gets PUBCOMP 0x92 (Packet Identifier not found)', async () => {
  const r = await open(s.edge.port, dev.token, 5);
  r.socket.write(frame(0x62, [0, 7]));
  await waitFor(() => r.packets.some((p) => p.cmd === 'pubcomp'), 2000, 'PUBCOMP');
  const pubcomp = r.packets.find((p) => p.cmd === 'pubcomp') as mqttPacket.IPubcompPacket;
  assert.is(pubcomp.messageId, 7);
  assert.is(pubcomp.reasonCode, 0x92);
  r.socket.destroy();
});

t.run();
