/**
 * The composed service over MQTT and HTTP together: a device publishes states over MQTT, a user
 * reads them over HTTP and sends a command that reaches the device's MQTT subscription, and the
 * feed carries stored states back.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import { createService, type Service } from '../../../app/createService.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { loopbackConfig } from '../../support/loopbackConfig.ts';
import { sendJson } from '../../support/sendJson.ts';

const tmp = tempDir('service-mqtt');
let service: Service;
let base = '';

test.before(async () => {
  service = await createService({ logger: silentLogger, config: loopbackConfig(tmp.dir) });
  base = `http://127.0.0.1:${service.httpPort}`;
});

test.after(async () => {
  await service.stop();
  tmp.remove();
});

test('MQTT states are stored, commands issued over HTTP reach the device over MQTT, feeds follow', async () => {
  const user = await service.registry.createUser({ name: 'u' });
  const ground = await service.registry.createGround({ name: 'g', userId: user.entity.id });
  const created = await sendJson(`${base}/ground/${ground.id}/devices`, 'POST', user.token, { name: 'lamp', assets: [
    { name: 'temperature', is: 'sensor', profile: { type: 'number' } },
    { name: 'light', is: 'actuator', profile: { type: 'boolean' } },
  ] });
  assert.is(created.status, 201);
  const device = await created.json() as { id: string; token: string; assets: Array<{ id: string; name: string }> };

  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${service.mqttPort}`, { username: device.token, password: device.token, reconnectPeriod: 0 });
  const received: Array<{ topic: string; body: unknown }> = [];
  client.on('message', (topic, payload) => received.push({ topic, body: JSON.parse(payload.toString()) }));
  try {
    await client.subscribeAsync([`device/${device.id}/asset/+/command`, `device/${device.id}/asset/+/feed`], { qos: 1 });
    await client.publishAsync(`device/${device.id}/asset/temperature/state`, JSON.stringify({ value: 19.25, at: '2026-11-01T08:00:00Z' }), { qos: 1 });

    await waitFor(async () => {
      const res = await fetch(`${base}/device/${device.id}/asset/temperature/state`, { headers: { authorization: `Bearer ${user.token}` } });
      return res.status === 200 && ((await res.json()) as { state?: { value: unknown } }).state?.value === 19.25;
    }, 15_000, 'MQTT state readable over HTTP');
    await waitFor(() => received.some((m) => m.topic === `device/${device.id}/asset/temperature/feed`), 10_000, 'feed of the stored state');
    assert.equal(received.find((m) => m.topic.endsWith('/feed'))!.body, { value: 19.25, at: '2026-11-01T08:00:00.000Z' });

    const command = await sendJson(`${base}/device/${device.id}/asset/light/command`, 'PUT', user.token, { value: true });
    assert.is(command.status, 202);
    await waitFor(() => received.some((m) => m.topic === `device/${device.id}/asset/light/command`), 10_000, 'command over MQTT');
    const delivered = received.find((m) => m.topic === `device/${device.id}/asset/light/command`)!.body as { value: unknown; at: string };
    assert.is(delivered.value, true);
    assert.ok(!Number.isNaN(Date.parse(delivered.at)), 'the command carries at (spec §2.3)');

    type Listed = { items: Array<{ id: string; status: string; queuedAt: number; transitions: Array<{ status: string }> }> };
    const list = async (query = '') => {
      const res = await fetch(`${base}/device/${device.id}/commands${query}`, { headers: { authorization: `Bearer ${user.token}` } });
      assert.is(res.status, 200);
      return (await res.json() as Listed).items;
    };
    await waitFor(async () => (await list()).some((c) => c.status === 'delivered'), 10_000, 'command lifecycle recorded as delivered');
    const [stored] = await list();
    assert.equal(stored.transitions.map((t) => t.status), ['queued', 'sent', 'delivered'], 'every transition is in the command history');
    assert.equal((await list(`?from=${stored.queuedAt}&to=${stored.queuedAt + 1}`)).map((c) => c.id), [stored.id]);
    assert.equal(await list(`?from=${stored.queuedAt + 1}`), []);
    const rows = await service.store.commands.list({ deviceId: device.id });
    assert.is(rows[0].status, 'delivered', 'read from the store, not from memory');

    const refused = await sendJson(`${base}/device/${device.id}/asset/temperature/command`, 'PUT', user.token, { value: 3 });
    assert.is(refused.status, 422, 'a sensor takes no commands');

    // The command side looks devices up through cached lookups: a profile change reaches it at once.
    const changed = await sendJson(`${base}/device/${device.id}/asset/light`, 'PUT', user.token, { is: 'actuator', profile: { type: 'integer', minimum: 0, maximum: 100 } });
    assert.is(changed.status, 200);
    const dimmed = await sendJson(`${base}/device/${device.id}/asset/light/command`, 'PUT', user.token, { value: 42 });
    assert.is(dimmed.status, 202, 'the edge checks the new profile');
    await waitFor(() => received.some((m) => m.topic === `device/${device.id}/asset/light/command` && (m.body as { value: unknown }).value === 42), 10_000, 'command under the new profile delivered');
    assert.equal((await service.store.rejections.recent(device.id)).filter((r) => r.channel === 'command'), [], 'the command side did not refuse it under the old profile');
  } finally {
    await client.endAsync();
  }
});

test.run();
