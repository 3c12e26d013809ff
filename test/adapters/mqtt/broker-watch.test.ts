/**
 * BrokerWatch (adapters/mqtt/external/BrokerWatch.ts) on a scripted client and a simulated clock: the drop
 * counter the broker publishes is read defensively (garbage, negative values, a broker restart),
 * a broker that hides $SYS is tolerated, CONNACK properties are checked. Against a real Mosquitto:
 * test/adapters/mqtt/mqtt-external-flow.test.ts.
 */
import { EventEmitter } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { IConnackPacket, MqttClient } from 'mqtt';
import { checkConnack, SYS_DROPPED, SYS_VERSION, watchBroker, type BrokerFigures } from '../../../adapters/mqtt/external/BrokerWatch.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';

type Line = { level: string; message: string };
function logger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (message: string) => { lines.push({ level, message }); };
  const l = { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => l };
  return l;
}

class FakeClient extends EventEmitter {
  readonly granted: number[];
  constructor(granted: number[]) {
    super();
    this.granted = granted;
  }
  async subscribeAsync(filters: string[]) {
    if (this.granted.some((g) => g >= 0x80)) throw Object.assign(new Error('refused'), { packet: { granted: this.granted } });
    return filters.map((topic, i) => ({ topic, qos: this.granted[i] }));
  }
  say(topic: string, text: string) { this.emit('message', topic, Buffer.from(text)); }
}

test('each rise of the drop counter is counted and logged; garbage, negative values and a broker restart are not', async () => {
  const client = new FakeClient([0, 0]);
  const log = logger();
  const figures: BrokerFigures = { version: undefined, brokerDropped: 0 };
  const clock = new SimulatedClock(0);
  const started = watchBroker(client as unknown as MqttClient, { logger: log, clock, figures, waitMs: 1000 });
  await Promise.resolve();
  client.say(SYS_VERSION, 'mosquitto version 2.0.11');
  await started;
  assert.is(figures.version, 'mosquitto version 2.0.11');
  assert.ok(log.lines.some((l) => l.level === 'warn' && /max_queued_messages 0/.test(l.message)), 'Mosquitto settings warning');
  for (const text of ['100', 'abc', '-5', '', '1.5', '99999999999999999999', '150', '10', '15', '15']) client.say(SYS_DROPPED, text);
  // 100 is the baseline; +50; 10 after a restart is a new baseline; +5.
  assert.is(figures.brokerDropped, 55);
  assert.is(log.lines.filter((l) => l.level === 'error').length, 2);
  client.say('device/x/state', '7');
  assert.is(figures.brokerDropped, 55, 'other topics are not read');
});

test('a broker that refuses $SYS is logged once and start goes on after waitMs; a long version string is cut', async () => {
  const client = new FakeClient([0x80, 0x80]);
  const log = logger();
  const figures: BrokerFigures = { version: undefined, brokerDropped: 0 };
  const clock = new SimulatedClock(0);
  let done = false;
  const started = watchBroker(client as unknown as MqttClient, { logger: log, clock, figures, waitMs: 1000 }).then(() => { done = true; });
  for (let i = 0; i < 5; i++) await Promise.resolve();
  assert.is(done, false);
  clock.advance(1000);
  await started;
  assert.equal(log.lines.map((l) => l.level), ['warn']);
  assert.match(log.lines[0].message, /cannot be watched/);
  client.say(SYS_VERSION, 'x'.repeat(10_000));
  assert.is(figures.version!.length, 100);
});

test('CONNACK: no shared subscriptions or Maximum QoS 0 refuse start; a small Maximum Packet Size warns', () => {
  const connack = (properties: IConnackPacket['properties']) => ({ cmd: 'connack', sessionPresent: false, reasonCode: 0, properties }) as IConnackPacket;
  const log = logger();
  assert.throws(() => checkConnack(connack({ sharedSubscriptionAvailable: false }), log, 65_536), /Shared Subscription Available/);
  assert.throws(() => checkConnack(connack({ maximumQoS: 0 }), log, 65_536), /Maximum QoS/);
  checkConnack(connack({}), log, 65_536);
  checkConnack(connack({ maximumQoS: 1, sharedSubscriptionAvailable: true, maximumPacketSize: 1_000_000 }), log, 65_536);
  assert.equal(log.lines, []);
  checkConnack(connack({ maximumPacketSize: 1024 }), log, 65_536);
  assert.equal(log.lines.map((l) => l.level), ['warn']);
});

test.run();
