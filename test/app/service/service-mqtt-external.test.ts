/**
 * The composed service in external broker mode (MQTT_URL / --mqtt-url) against Mosquitto: no
 * embedded edge listens, a device's states published on the broker are stored and readable over
 * HTTP, a command issued over HTTP reaches the device's subscription on the broker, and its
 * lifecycle is read back from the command history.
 */
import { test, unless } from '../../support/suite.ts';
import mqtt from 'mqtt';
import * as assert from 'uvu/assert';
import { createService, type Service } from '../../../app/createService.ts';
import { loadConfig } from '../../../app/loadConfig.ts';
import { newId } from '../../../engine/kernel/ids.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { BROKER_URL, brokerReachable } from '../../support/externalMqttStack.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { loopbackConfig } from '../../support/loopbackConfig.ts';

test('MQTT_URL / --mqtt-url, MQTT_SHARE_GROUP, MQTT_CLIENT_ID, MQTT_SESSION_EXPIRY_SECONDS; bad values are refused', () => {
  assert.is(loadConfig({}, {}).mqtt.url, undefined);
  assert.equal(loadConfig({}, { MQTT_URL: 'mqtt://fs:secret@broker:1883', MQTT_SHARE_GROUP: 'fleet_a' }).mqtt, { host: '0.0.0.0', port: 1883, url: 'mqtt://fs:secret@broker:1883', shareGroup: 'fleet_a' });
  assert.is(loadConfig({ 'mqtt-url': 'mqtts://b:8883' }, { MQTT_URL: 'mqtt://a:1883' }).mqtt.url, 'mqtts://b:8883');
  for (const group of ['a/b', 'g+', '#', 'x'.repeat(65)]) assert.throws(() => loadConfig({ 'mqtt-share-group': group }, {}), /invalid configuration/, group);
  const persistent = loadConfig({ 'mqtt-client-id': 'fleet-1', 'mqtt-session-expiry': '600' }, {}).mqtt;
  assert.equal([persistent.clientId, persistent.sessionExpirySeconds], ['fleet-1', 600]);
  assert.is(loadConfig({}, { MQTT_SESSION_EXPIRY_SECONDS: '0' }).mqtt.sessionExpirySeconds, 0);
  for (const [flag, value] of [['mqtt-client-id', 'a b'], ['mqtt-client-id', 'x/y'], ['mqtt-session-expiry', '-1'], ['mqtt-session-expiry', '1.5'], ['mqtt-session-expiry', '4294967296']] as const) {
    assert.throws(() => loadConfig({ [flag]: value }, {}), /invalid configuration/, `${flag}=${value}`);
  }
});

unless('service-mqtt-external', (await brokerReachable()) ? undefined : `no MQTT broker at ${BROKER_URL} (start Mosquitto 2.x on 127.0.0.1:1883, or set MQTT_URL_TEST)`, () => {
  const tmp = tempDir('service-mqtt-external');
  let service: Service;
  let base = '';

  test.before(async () => {
    service = await createService({
      logger: silentLogger,
      config: loopbackConfig(tmp.dir, { mqtt: { host: '127.0.0.1', port: 0, url: BROKER_URL, shareGroup: `fstest-svc-${process.pid}-${newId().slice(0, 6)}` } }),
    });
    base = `http://127.0.0.1:${service.httpPort}`;
  });

  test.after(async () => {
    await service.stop();
    tmp.remove();
  });

  test('states over the broker are stored; an HTTP command reaches the device on the broker; its lifecycle is in the history', async () => {
    assert.is(service.mqttPort, undefined, 'no embedded edge listens');
    const user = await service.registry.createUser({ name: 'u' });
    const ground = await service.registry.createGround({ name: 'g', userId: user.entity.id });
    const auth = { authorization: `Bearer ${user.token}` };
    const created = await fetch(`${base}/ground/${ground.id}/devices`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'lamp', assets: [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }, { name: 'light', is: 'actuator', profile: { type: 'boolean' } }] }),
    });
    assert.is(created.status, 201);
    const device = await created.json() as { id: string; assets: Array<{ id: string; name: string }> };
    const light = device.assets.find((a) => a.name === 'light')!;

    const client = await mqtt.connectAsync(BROKER_URL, { protocolVersion: 5, reconnectPeriod: 0 });
    const received: Array<{ topic: string; body: unknown }> = [];
    client.on('message', (topic, payload) => received.push({ topic, body: JSON.parse(payload.toString()) }));
    try {
      await client.subscribeAsync([`asset/${light.id}/command`, `device/${device.id}/asset/+/feed`], { qos: 1 });
      await client.publishAsync(`device/${device.id}/asset/temperature/state`, JSON.stringify({ value: 19.25, at: '2026-11-01T08:00:00Z' }), { qos: 1 });
      await waitFor(async () => {
        const res = await fetch(`${base}/device/${device.id}/asset/temperature/state`, { headers: auth });
        return res.status === 200 && ((await res.json()) as { state?: { value: unknown } }).state?.value === 19.25;
      }, 15_000, 'state readable over HTTP');
      await waitFor(() => received.some((m) => m.topic === `device/${device.id}/asset/temperature/feed`), 10_000, 'feed on the broker');

      const command = await fetch(`${base}/asset/${light.id}/command`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ value: true }) });
      assert.is(command.status, 202);
      const { id } = await command.json() as { id: string };
      await waitFor(() => received.some((m) => m.topic === `asset/${light.id}/command`), 10_000, 'command on the broker');
      assert.is((received.find((m) => m.topic === `asset/${light.id}/command`)!.body as { value: unknown }).value, true);
      await waitFor(async () => {
        const res = await fetch(`${base}/device/${device.id}/commands`, { headers: auth });
        const items = ((await res.json()) as { items: Array<{ id: string; status: string; transitions: Array<{ status: string }> }> }).items;
        return items.some((c) => c.id === id && c.status === 'delivered' && c.transitions.map((t) => t.status).join() === 'queued,sent,delivered');
      }, 10_000, 'delivered in the command history');

      await client.publishAsync(`device/${device.id}/asset/nope/state`, JSON.stringify({ value: 1 }), { qos: 1 });
      await waitFor(async () => {
        const res = await fetch(`${base}/device/${device.id}/rejections`, { headers: auth });
        return ((await res.json()) as { items: Array<{ code: string; channel: string }> }).items.some((r) => r.code === 'UNKNOWN_ASSET' && r.channel === 'mqtt');
      }, 10_000, 'refusal in the rejections');
    } finally {
      await client.endAsync();
    }
  });

});

test.run();
