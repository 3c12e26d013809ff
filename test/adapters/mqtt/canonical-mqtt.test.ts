/**
 * Canonical strings and the `at` window through the MQTT edge (test/support/mqttStack.ts) with the
 * engine storing into chDB: what is refused is recorded with its code, what is stored is read back.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MqttStack, type SeededDevice } from '../../support/mqttStack.ts';
import { waitFor } from '../../support/tmp.ts';

let s: MqttStack;
let device: SeededDevice;
const COMPOSED = '\u00C4rger';
const DECOMPOSED = 'A\u0308rger';
const DAY = 86_400_000;

test.before(async () => {
  s = await MqttStack.start({ pipeline: true });
  device = await s.device('canon', [{ name: 'label', profile: { type: 'string', enum: [COMPOSED, 'ok'] } }, { name: 't', profile: { type: 'number' } }, { name: 'note' }]);
});
test.after(async () => {
  await s?.stop();
});

const history = (asset: string) => s.store!.history({ deviceId: device.deviceId, asset, order: 'asc', limit: 100 });
const codes = () => s.rejections.rows.filter((r) => r.deviceId === device.deviceId).map((r) => [r.asset, r.code, r.channel]);

test('MQTT: lone surrogates refused (INVALID_TEXT), decomposed text stored composed, at outside the window refused (INVALID_AT)', async () => {
  const client = await s.connect(device.token);
  const now = Date.now();
  const publish = (topic: string, payload: string) => client.publishAsync(topic, payload, { qos: 1 });
  await publish(`device/${device.deviceId}/asset/note/state`, '{"value": ["ok", "\\ud83d"]}');
  await publish(`device/${device.deviceId}/asset/label/state`, JSON.stringify({ value: DECOMPOSED, at: new Date(now - 1000).toISOString() }));
  await publish(`device/${device.deviceId}/asset/t/state`, JSON.stringify({ value: 1, at: new Date(now + 2 * DAY).toISOString() }));
  await publish(`device/${device.deviceId}/asset/t/state`, JSON.stringify({ value: 2, at: '1969-12-31T23:59:59Z' }));
  await publish(`device/${device.deviceId}/state`, JSON.stringify({ t: { value: 3, at: new Date(now + DAY - 60_000).toISOString() }, note: { value: { [DECOMPOSED]: 1 } } }));
  await waitFor(() => codes().length >= 3, 10_000, 'three refusals');
  assert.equal(codes(), [['note', 'INVALID_TEXT', 'mqtt'], ['t', 'INVALID_AT', 'mqtt'], ['t', 'INVALID_AT', 'mqtt']]);
  assert.match(s.rejections.rows.find((r) => r.code === 'INVALID_TEXT')!.reason, /value\/1: string holds a lone surrogate \(U\+D83D\)/);
  await waitFor(async () => (await history('t')).length === 1 && (await history('label')).length === 1 && (await history('note')).length === 1, 10_000, 'stored');
  assert.equal((await history('label')).map((r) => r.value), [COMPOSED]);
  assert.equal((await history('t')).map((r) => r.value), [3], 'within a day ahead is stored');
  assert.equal((await history('note')).map((r) => r.value), [{ [COMPOSED]: 1 }]);
});

test.run();
