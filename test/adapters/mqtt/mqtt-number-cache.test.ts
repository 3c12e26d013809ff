/**
 * mqtt-packet builds, at the first packet it encodes, a cache of every 16-bit number as a 2-byte
 * Buffer (65,536 objects, ~7.5 MB of heap for the life of the process). Neither the embedded edge
 * nor external broker mode lets it: the edge answers CONNECT, SUBSCRIBE and delivers a command, an
 * external instance connects to the broker, and the cache stays empty.
 */
import { suite, unless } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { createRequire } from 'node:module';
import { connect as tcpConnect } from 'node:net';
import mqttPacket from 'mqtt-packet';
import { newId } from '../../../engine/kernel/ids.ts';
import { MqttStack } from '../../support/mqttStack.ts';
import { BROKER_URL, brokerReachable, ExternalStack } from '../../support/externalMqttStack.ts';
import { waitFor } from '../../support/tmp.ts';

const numbers = createRequire(import.meta.url)('mqtt-packet/numbers.js') as { cache: Record<number, Buffer> };
const cached = () => Object.keys(numbers.cache).length;

/** As a fresh process finds mqtt-packet: no cache yet, built at the next packet encoded. */
function freshCodec(): void {
  for (const key of Object.keys(numbers.cache)) delete numbers.cache[Number(key)];
  mqttPacket.writeToStream.cacheNumbers = true;
}

const str = (s: string) => { const b = Buffer.from(s); return Buffer.concat([Buffer.from([b.length >> 8, b.length & 255]), b]); };
const packet = (first: number, body: Buffer) => Buffer.concat([Buffer.from([first, body.length]), body]);

const test = suite('mqtt-packet number cache');

test('mqtt-packet left as it is builds the cache at its first packet', () => {
  freshCodec();
  assert.is(cached(), 0);
  mqttPacket.generate({ cmd: 'puback', messageId: 1 });
  assert.is(cached(), 65_536);
});

test('the embedded edge answers CONNECT and SUBSCRIBE and delivers a command without building it', async () => {
  freshCodec();
  const s = await MqttStack.start();
  try {
    const dev = await s.device('lamp', [{ name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
    const socket = tcpConnect(s.edge.port, '127.0.0.1');
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => { received = Buffer.concat([received, chunk]); });
    await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
    // MQTT 3.1.1 CONNECT (username = token), then SUBSCRIBE (packet id 7) to the device's commands, QoS 1.
    socket.write(packet(0x10, Buffer.concat([str('MQTT'), Buffer.from([4, 0x82, 0, 60]), str('lamp-1'), str(dev.token)])));
    await waitFor(() => received.length >= 4, 5000, 'CONNACK');
    assert.equal([...received.subarray(0, 4)], [0x20, 2, 0, 0]);
    socket.write(packet(0x82, Buffer.concat([Buffer.from([0, 7]), str(`device/${dev.deviceId}/asset/+/command`), Buffer.from([1])])));
    await waitFor(() => received.length >= 9, 5000, 'SUBACK');
    assert.equal([...received.subarray(4, 9)], [0x90, 3, 0, 7, 1]);
    const delivery = s.edge.commands.deliver({
      commandId: newId(), deviceId: dev.deviceId, asset: { id: dev.assetIds.led, name: 'led' }, payload: Buffer.from('{"value":true}'),
    });
    await waitFor(() => received.length > 9, 5000, 'command PUBLISH');
    assert.is(received[9] & 0xf0, 0x30);
    const packetId = received.readUInt16BE(9 + 2 + 2 + received.readUInt16BE(11));
    socket.write(Buffer.from([0x40, 2, packetId >> 8, packetId & 0xff]));
    assert.is(await delivery, 'delivered');
    socket.destroy();
    assert.is(cached(), 0);
  } finally {
    await s.stop();
  }
});

unless('mqtt-number-cache external', (await brokerReachable()) ? undefined : `no MQTT broker at ${BROKER_URL} (start Mosquitto 2.x on 127.0.0.1:1883, or set MQTT_URL_TEST)`, () => {
  const external = suite('mqtt-packet number cache: external broker mode');
  external('an external instance connects and subscribes without building it', async () => {
    freshCodec();
    const s = await ExternalStack.start();
    try {
      // Resolves once its connections have their CONNACKs and subscriptions.
      await s.instance();
      assert.is(cached(), 0);
    } finally {
      await s.stop();
    }
  });
  external.run();
});

test.run();
