/**
 * ClientCommandTransport (commands through an external broker) on a simulated clock with a scripted
 * mqtt.js client: PUBACK reason codes (Success, No matching subscribers, refusals) decide the
 * outcome; no PUBACK in time, a lost connection and a closed transport are handled.
 */
import { EventEmitter } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { MqttClient } from 'mqtt';
import { ClientCommandTransport } from '../../../adapters/mqtt/external/ClientCommandTransport.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';

interface Pending { topic: string; messageId: number; cb: (error: Error | null, packet?: unknown) => void }

class FakeClient extends EventEmitter {
  connected = true;
  pending: Pending[] = [];
  #id = 0;
  publish(topic: string, _payload: Buffer, _opts: unknown, cb: Pending['cb']): void {
    this.pending.push({ topic, messageId: ++this.#id, cb });
  }
  /** Answers the oldest publish as mqtt.js does: 'packetreceive' first, then the callback with the stored PUBLISH. */
  ack(reasonCode?: number): void {
    const p = this.pending.shift()!;
    this.emit('packetreceive', { cmd: 'puback', messageId: p.messageId, reasonCode });
    const packet = { cmd: 'publish', topic: p.topic, messageId: p.messageId };
    if (reasonCode !== undefined && reasonCode >= 0x80) p.cb(Object.assign(new Error(`Publish error: ${reasonCode}`), { code: reasonCode }), packet);
    else p.cb(null, packet);
  }
}

const delivery = { commandId: 'c1', deviceId: 'D1', asset: { id: 'A1', name: 'led' }, payload: new TextEncoder().encode('{"value":true,"at":"2026-01-01T00:00:00Z"}') };
const flush = async () => { for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); };

function setup() {
  const clock = new SimulatedClock(0);
  const client = new FakeClient();
  const transport = new ClientCommandTransport({ client: client as unknown as MqttClient, clock, ackTimeoutMs: 1000, offlineRetryMs: 5000 });
  return { clock, client, transport };
}

test('both command topic shapes are published at QoS 1; a Success PUBACK on either means delivered', async () => {
  for (const codes of [[0, 0], [undefined, undefined], [0x10, 0], [0x87, 0]] as const) {
    const { client, transport } = setup();
    const outcome = transport.deliver(delivery);
    await flush();
    assert.equal(client.pending.map((p) => p.topic), ['asset/A1/command', 'device/D1/asset/led/command']);
    client.ack(codes[0]);
    client.ack(codes[1]);
    assert.is(await outcome, 'delivered', JSON.stringify(codes));
  }
});

test('No matching subscribers on both topics: offline, offered again after offlineRetryMs and on reconnect', async () => {
  const { clock, client, transport } = setup();
  const offered: string[] = [];
  transport.onReachable((id) => offered.push(id));
  const outcome = transport.deliver(delivery);
  await flush();
  client.ack(0x10);
  client.ack(0x10);
  assert.is(await outcome, 'offline');
  clock.advance(4999);
  assert.equal(offered, []);
  clock.advance(1);
  assert.equal(offered, ['D1']);
  clock.advance(10_000);
  assert.equal(offered, ['D1'], 'offered once per offline answer');
  const again = transport.deliver(delivery);
  await flush();
  client.ack(0x10);
  client.ack(0x10);
  assert.is(await again, 'offline');
  client.emit('connect');
  assert.equal(offered, ['D1', 'D1'], 'a new connection offers at once');
  assert.is(clock.pending, 0, 'no poll timer left once offered');
});

test('refused on both topics (e.g. Not authorized) fails with DOWNLINK_REFUSED, not retriable', async () => {
  const { client, transport } = setup();
  const outcome = transport.deliver(delivery).then(() => undefined, (e: unknown) => e);
  await flush();
  client.ack(0x87);
  client.ack(0x87);
  const error = await outcome;
  assert.instance(error, FleetError);
  assert.is((error as FleetError).code, 'DOWNLINK_REFUSED');
  assert.is((error as FleetError).retriable, false);
  assert.match((error as FleetError).message, /0x87/);
});

test('no PUBACK within ackTimeoutMs, or a connection lost mid-publish: unacknowledged (the actor resends)', async () => {
  const { clock, client, transport } = setup();
  const outcome = transport.deliver(delivery);
  await flush();
  clock.advance(999);
  await flush();
  let settled = false;
  outcome.then(() => { settled = true; });
  await flush();
  assert.is(settled, false);
  clock.advance(1);
  assert.is(await outcome, 'unacknowledged');
  client.ack(0); // a late PUBACK changes nothing
  client.ack(0);

  const lost = transport.deliver(delivery);
  await flush();
  for (const p of client.pending.splice(0)) p.cb(new Error('Connection closed'));
  assert.is(await lost, 'unacknowledged');
});

test('not connected: UNAVAILABLE (retriable) at once; closed: CLOSED', async () => {
  const { client, transport } = setup();
  client.connected = false;
  const error = await transport.deliver(delivery).then(() => undefined, (e: unknown) => e);
  assert.is((error as FleetError).code, 'UNAVAILABLE');
  assert.is((error as FleetError).retriable, true);
  assert.is(client.pending.length, 0, 'nothing published');
  client.connected = true;
  transport.close();
  assert.is(((await transport.deliver(delivery).then(() => undefined, (e: unknown) => e)) as FleetError).code, 'CLOSED');
});

test.run();
