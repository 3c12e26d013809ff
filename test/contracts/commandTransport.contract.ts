/**
 * Contract of the CommandTransport port (engine/ports/commandTransport.ts), run by the embedded
 * gateway's transport and by ClientCommandTransport over Mosquitto (test/adapters/mqtt/command-transport.test.ts),
 * and by the RelayedTransport through the command relay to the embedded gateway, with real mqtt.js
 * devices. `delivered` is acknowledged by whoever the transport hands the command
 * to: the device's PUBACK (embedded) or the broker's, which then owns delivery (external broker).
 */
import type { MqttClient } from 'mqtt';
import * as assert from 'uvu/assert';
import { suite, unless } from '../support/suite.ts';
import { withholdDeviceAcks, type MqttEdgeWorld } from '../support/mqttEdgeWorlds.ts';
import type { SeededDevice } from '../support/mqttStack.ts';
import { waitFor } from '../support/tmp.ts';

let sequence = 0;

/**
 * `gaps`: cases an adapter is known to fail today, each with why; they are reported as skipped
 * (`skipped: …` in the run) until the adapter passes them.
 */
export function commandTransportContract(name: string, start: () => Promise<MqttEdgeWorld>, gaps: { duplicateAck?: string } = {}): void {
  const s = suite(`command transport contract: ${name}`);
  let w: MqttEdgeWorld;
  s.before(async () => { w = await start(); });
  s.after(async () => w.stop());

  const valve = () => w.device('valve', [{ name: 'led', is: 'actuator', profile: { type: 'boolean' } }]);
  const delivery = (dev: SeededDevice, value: unknown = true) => ({
    commandId: `c${++sequence}`, deviceId: dev.deviceId, asset: { id: dev.assetIds.led, name: 'led' },
    payload: new TextEncoder().encode(JSON.stringify({ value, at: '2026-01-01T00:00:00.000Z' })),
  });
  /** A device connection subscribed to both command topics of its asset at QoS 1; what it receives. */
  const subscribed = async (dev: SeededDevice): Promise<{ client: MqttClient; got: [string, string][] }> => {
    const got: [string, string][] = [];
    const client = await w.connect(dev, {}, (topic, payload) => got.push([topic, payload.toString()]));
    await client.subscribeAsync([`device/${dev.deviceId}/asset/led/command`, `asset/${dev.assetIds.led}/command`], { qos: 1 });
    await w.reachable?.(dev.deviceId);
    return { client, got };
  };

  s('delivered once acknowledged; the device got the payload on both command topics', async () => {
    const dev = await valve();
    const { got } = await subscribed(dev);
    const d = delivery(dev, 'on');
    assert.is(await w.transport.deliver(d), 'delivered');
    await waitFor(() => got.length === 2, 5000, 'both topics');
    const body = new TextDecoder().decode(d.payload);
    assert.equal(got.sort(), [[`asset/${dev.assetIds.led}/command`, body], [`device/${dev.deviceId}/asset/led/command`, body]]);
  });

  s('offline when no connection of the device subscribes to a command topic', async () => {
    const dev = await valve();
    assert.is(await w.transport.deliver(delivery(dev)), 'offline');
    // Connected but subscribed elsewhere (its feed) is still offline for commands.
    const c = await w.connect(dev);
    await c.subscribeAsync(`device/${dev.deviceId}/asset/+/feed`, { qos: 1 });
    assert.is(await w.transport.deliver(delivery(dev)), 'offline');
  });

  s('unacknowledged after the ack timeout; the next delivery is delivered again', async () => {
    const dev = await valve();
    const { client, got } = await subscribed(dev);
    const release = w.withholdAcks(client);
    const started = Date.now();
    let outcome: string;
    try {
      outcome = await w.transport.deliver(delivery(dev));
    } finally {
      release();
    }
    assert.is(outcome, 'unacknowledged');
    assert.ok(Date.now() - started >= w.ackTimeoutMs - 50, `waited for the ack timeout (${Date.now() - started} ms)`);
    await waitFor(async () => (await w.transport.deliver(delivery(dev, false))) === 'delivered', 10_000, 'delivered once acks come again');
    await waitFor(() => got.some(([, p]) => JSON.parse(p).value === false), 5000, 'the later command arrived');
  });

  s('onReachable names a device found offline once it subscribes, and again when it reconnects', async () => {
    const dev = await valve();
    const reachable: string[] = [];
    const stop = w.transport.onReachable((id) => { if (id === dev.deviceId) reachable.push(id); });
    try {
      assert.is(await w.transport.deliver(delivery(dev)), 'offline');
      const { client } = await subscribed(dev);
      await waitFor(() => reachable.length >= 1, 5000, 'reachable after subscribing');
      assert.is(await w.transport.deliver(delivery(dev)), 'delivered');
      await client.endAsync();
      await waitFor(async () => (await w.transport.deliver(delivery(dev))) === 'offline', 5000, 'offline once gone');
      const seen = reachable.length;
      await subscribed(dev);
      await waitFor(() => reachable.length > seen, 5000, 'reachable after reconnecting');
      assert.is(await w.transport.deliver(delivery(dev)), 'delivered');
    } finally {
      stop();
    }
    const before = reachable.length;
    assert.is(await w.transport.deliver(delivery(await valve())), 'offline');
    await new Promise((r) => setTimeout(r, 300));
    assert.is(reachable.length, before, 'an unsubscribed listener hears nothing');
  });

  s('a device that disconnects mid-delivery: never a false delivered, and the transport serves its return', async () => {
    const dev = await valve();
    const { client } = await subscribed(dev);
    const release = withholdDeviceAcks(client);
    // Gone while the command is on its way, without acknowledging it.
    client.on('message', () => client.end(true));
    let outcome: string;
    try {
      outcome = await w.transport.deliver(delivery(dev));
    } finally {
      release();
    }
    assert.is(outcome, w.acknowledgedBy === 'device' ? 'unacknowledged' : 'delivered', `${w.acknowledgedBy} acknowledges`);
    const back = await subscribed(dev);
    await waitFor(async () => (await w.transport.deliver(delivery(dev, 'again'))) === 'delivered', 10_000, 'delivered to the returning device');
    await waitFor(() => back.got.some(([, p]) => JSON.parse(p).value === 'again'), 5000, 'received');
  });

  unless(`command transport contract: ${name}: duplicate PUBACK`, gaps.duplicateAck, () => s('a duplicate PUBACK from the device does not count for the next command', async () => {
    const dev = await valve();
    const ids: number[] = [];
    const { client } = await subscribed(dev);
    client.on('packetreceive', (packet) => { if (packet.cmd === 'publish' && packet.messageId !== undefined) ids.push(packet.messageId); });
    assert.is(await w.transport.deliver(delivery(dev)), 'delivered');
    await waitFor(() => ids.length === 2, 5000, 'both publishes received');
    // The same acknowledgements again, as a confused or hostile device would send them.
    for (const id of ids) client.stream.write(Buffer.from([0x40, 0x02, id >> 8, id & 0xff]));
    const release = w.withholdAcks(client);
    try {
      assert.is(await w.transport.deliver(delivery(dev)), 'unacknowledged');
    } finally {
      release();
    }
  }));

  s.run();
}
