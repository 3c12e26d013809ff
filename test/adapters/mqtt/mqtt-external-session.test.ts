/**
 * External broker mode with persistent sessions, against Mosquitto: an instance killed while it
 * holds uplinks unacknowledged (its log never answered) loses none of them — the broker keeps them,
 * and those assigned to it while it was down, in the session and delivers them to the instance that
 * comes back with the same client id.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { test, unless } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { newId } from '../../../engine/kernel/ids.ts';
import { BROKER_URL, brokerReachable, ExternalStack } from '../../support/externalMqttStack.ts';
import { waitFor } from '../../support/tmp.ts';

const CHILD = new URL('../../support/externalMqttChild.ts', import.meta.url).pathname;

unless('mqtt-external-session', (await brokerReachable()) ? undefined : `no MQTT broker at ${BROKER_URL} (start Mosquitto 2.x on 127.0.0.1:1883, or set MQTT_URL_TEST)`, () => {
  let s: ExternalStack;
  test.before(async () => { s = await ExternalStack.start(); });
  test.after(async () => s.stop());

  test('uplinks held by a killed instance are delivered to its successor with the same client id', async () => {
    const dev = await s.device('sensor', [{ name: 't', profile: { type: 'number' } }]);
    const device = await s.registry.getDevice(dev.deviceId);
    const clientIdPrefix = `fstest-session-${process.pid}-${newId().slice(0, 6)}`;
    const sessionExpirySeconds = 60;
    const child = spawn(process.execPath, [CHILD, JSON.stringify({ url: BROKER_URL, group: s.group, clientIdPrefix, sessionExpirySeconds, device })], { stdio: ['ignore', 'pipe', 'inherit'] });
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await waitFor(() => lines.includes('ready'), 15_000, 'child subscribed');
      const publisher = await s.client();
      const send = (v: number) => publisher.publishAsync(`device/${dev.deviceId}/asset/t/state`, JSON.stringify({ value: v, at: new Date(Date.UTC(2026, 0, 1, 0, 0, v)).toISOString() }), { qos: 1 });
      for (const v of [0, 1, 2]) await send(v);
      await waitFor(() => lines.some((l) => l.startsWith('held ')), 5000, 'the child holds an uplink');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    // Assigned to the dead instance's session while it is away.
    const publisher = await s.client();
    for (const v of [3, 4]) {
      await publisher.publishAsync(`device/${dev.deviceId}/asset/t/state`, JSON.stringify({ value: v, at: new Date(Date.UTC(2026, 0, 1, 0, 0, v)).toISOString() }), { qos: 1 });
    }
    const successor = await s.instance({ clientIdPrefix, sessionExpirySeconds, connections: 1 });
    await waitFor(async () => (await s.store.history({ deviceId: dev.deviceId, asset: 't' })).length === 5, 15_000, 'all five stored');
    const values = (await s.store.history({ deviceId: dev.deviceId, asset: 't', order: 'asc' })).map((x) => x.value);
    assert.equal(values, [0, 1, 2, 3, 4]);
    assert.ok(successor.appended.length >= 5, 'the successor appended what the dead instance held');
  });

  test.run();
});
