/**
 * DurableAcks (adapters/mqtt/external/DurableAcks.ts) on a scripted stand-in for mqtt.js's packet path: a
 * PUBACK waits for its uplink's work while the connection reads on, up to the limit; PUBACKs of a
 * closed connection are never written, on it or on the next one. The real path (mqtt.js against
 * Mosquitto) is in test/adapters/mqtt/mqtt-external-flow.test.ts.
 */
import { EventEmitter } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { IPublishPacket, MqttClient, Packet } from 'mqtt';
import { DurableAcks } from '../../../adapters/mqtt/external/DurableAcks.ts';

class FakeClient extends EventEmitter {
  connected = true;
  written: Packet[] = [];
  _sendPacket(packet: Packet, cb?: () => void): void {
    this.written.push(packet);
    cb?.();
  }
  /** What mqtt.js does for a QoS 1 PUBLISH: handleMessage, then the PUBACK, then the next packet. */
  receive(acks: DurableAcks, messageId: number, work: Promise<void>): { next: boolean } {
    const state = { next: false };
    const packet = { cmd: 'publish', qos: 1, messageId, topic: 't', payload: Buffer.alloc(0), dup: false, retain: false } as IPublishPacket;
    acks.hold(packet, work, () => this._sendPacket({ cmd: 'puback', messageId } as Packet, () => { state.next = true; }));
    return state;
  }
}

const deferred = () => {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
};
const flush = async () => { for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); };
const pubacks = (c: FakeClient) => c.written.filter((p) => p.cmd === 'puback').map((p) => (p as { messageId: number }).messageId);

test('the PUBACK is written once the work settles (also when it fails), while the next packets are read', async () => {
  const client = new FakeClient();
  const acks = DurableAcks.attach(client as unknown as MqttClient, 10);
  const works = [deferred(), deferred(), deferred()];
  const states = works.map((w, i) => client.receive(acks, i + 1, w.promise));
  assert.ok(states.every((s) => s.next), 'every packet let the connection read on');
  assert.equal(pubacks(client), [], 'nothing acknowledged before durability');
  assert.is(acks.held, 3);
  works[1].resolve();
  await flush();
  assert.equal(pubacks(client), [2], 'out of order: each when its own work is done');
  works[2].reject(new Error('given up'));
  works[0].resolve();
  await flush();
  assert.equal(pubacks(client).sort(), [1, 2, 3]);
  assert.is(acks.held, 0);
  client._sendPacket({ cmd: 'pingreq' } as Packet);
  assert.is(client.written.at(-1)!.cmd, 'pingreq', 'other packets pass untouched');
});

test('past the limit the connection stops reading until a PUBACK frees room', async () => {
  const client = new FakeClient();
  const acks = DurableAcks.attach(client as unknown as MqttClient, 2);
  const works = [deferred(), deferred(), deferred(), deferred()];
  const states = works.map((w, i) => client.receive(acks, i + 1, w.promise));
  assert.equal(states.map((s) => s.next), [true, true, false, false]);
  works[0].resolve();
  await flush();
  assert.equal(states.map((s) => s.next), [true, true, true, false], 'one in, one out');
  for (const w of works) w.resolve();
  await flush();
  assert.ok(states.every((s) => s.next));
  assert.equal(pubacks(client).sort(), [1, 2, 3, 4]);
});

test('PUBACKs held when the connection closes are never written, neither now nor on the next connection', async () => {
  const client = new FakeClient();
  const acks = DurableAcks.attach(client as unknown as MqttClient, 1);
  const first = deferred();
  const second = deferred();
  client.receive(acks, 7, first.promise);
  const waiting = client.receive(acks, 8, second.promise);
  assert.is(waiting.next, false);
  client.connected = false;
  client.emit('close');
  await flush();
  assert.is(waiting.next, true, 'the waiting packet is let go');
  assert.equal(pubacks(client), [], 'not written while disconnected (mqtt.js would store it for the next connection)');
  client.connected = true;
  client.emit('connect');
  first.resolve();
  second.resolve();
  await flush();
  assert.equal(pubacks(client), [], 'the message ids belonged to the old connection');
  // The new connection works as before.
  const third = deferred();
  client.receive(acks, 7, third.promise);
  third.resolve();
  await flush();
  assert.equal(pubacks(client), [7]);
});

test('attach refuses a client without the packet path it wraps', () => {
  assert.throws(() => DurableAcks.attach(new EventEmitter() as unknown as MqttClient, 1), /_sendPacket/);
});

test.run();
