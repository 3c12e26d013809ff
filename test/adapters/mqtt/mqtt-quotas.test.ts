/**
 * The states-per-second quota of a ground on the embedded MQTT edge, with real mqtt.js clients
 * (docs/grounds.md "Quotas"): MQTT 5 publishes over the rate are answered PUBACK 0x97 (Quota
 * exceeded) and the connection stays; MQTT 3.1.1 ones are acknowledged and dropped (3.1.1 has no
 * refusal), recorded as the device's rejection; a device of another ground is not limited.
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { MqttStack, pubackCode, type SeededDevice } from '../../support/mqttStack.ts';
import { waitFor } from '../../support/tmp.ts';

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

const test = suite('mqtt quotas: states per second');
let s: MqttStack;
let limited: SeededDevice;
let second: SeededDevice;
let free: { deviceId: string; token: string };
test.before(async () => {
  s = await MqttStack.start({ edge: { maxRefusals: 3 } });
  limited = await s.device('limited', [{ name: 't', profile: { type: 'number' } }]);
  second = await s.device('second', [{ name: 't', profile: { type: 'number' } }]);
  const freeGround = await s.registry.createGround({ name: 'free', userId: s.userId });
  const created = await s.registry.createDevice({ groundId: freeGround.id, name: 'free', assets: [{ name: 't', is: 'sensor', profile: {} }] });
  free = { deviceId: created.device.id, token: created.token };
  // 1 state a second: a burst of 2, then one a second.
  await s.registry.setQuota(s.groundId, { statesPerSecond: 1 });
  await waitFor(() => s.rates.rates.limits(s.groundId), 1000, 'the quota applied within a second');
});
test.after(async () => {
  await s.stop();
});

test('MQTT 5: the burst passes, then PUBACK 0x97 (Quota exceeded); the connection stays open past the refusal allowance; another ground goes on', async () => {
  const client = await s.connect(limited.token, { protocolVersion: 5 });
  const topic = `device/${limited.deviceId}/asset/t/state`;
  const codes: number[] = [];
  for (let i = 0; i < 8; i++) codes.push(await pubackCode(client, topic, json({ value: i })));
  assert.ok(codes.filter((c) => c === 0).length <= 3, `at most the burst and a refill: ${codes.join(',')}`);
  assert.ok(codes.filter((c) => c === 0x97).length >= 5, codes.join(','));
  assert.equal([...new Set(codes)].sort(), [0, 0x97]);
  assert.ok(client.connected, 'refusals over the quota do not count towards maxRefusals (3)');
  const other = await s.connect(free.token, { protocolVersion: 5 });
  for (let i = 0; i < 10; i++) assert.is(await pubackCode(other, `device/${free.deviceId}/asset/t/state`, json({ value: i })), 0);
  await waitFor(() => s.rejections.rows.some((r) => r.deviceId === limited.deviceId && r.code === 'QUOTA_EXCEEDED'), 2000, 'the refusal recorded');
});

test('MQTT 3.1.1: over the quota a publish is acknowledged and dropped, and recorded as the device\'s rejection', async () => {
  const client = await s.connect(second.token, { protocolVersion: 4 });
  const before = s.appended.filter((e) => e.deviceId === second.deviceId).length;
  for (let i = 0; i < 8; i++) assert.is(await pubackCode(client, `device/${second.deviceId}/asset/t/state`, json({ value: i })), 0, 'acknowledged');
  const accepted = s.appended.filter((e) => e.deviceId === second.deviceId).length - before;
  assert.ok(accepted <= 3, `at most the burst left and a refill: ${accepted}`);
  await waitFor(() => s.rejections.rows.some((r) => r.deviceId === second.deviceId && r.code === 'QUOTA_EXCEEDED'), 2000, 'the drop recorded');
  const row = s.rejections.rows.find((r) => r.deviceId === second.deviceId && r.code === 'QUOTA_EXCEEDED')!;
  assert.is(row.channel, 'mqtt');
  assert.match(row.reason, /over its quota of states per second/);
  assert.ok(client.connected);
});

test.run();
