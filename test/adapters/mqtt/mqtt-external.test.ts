/**
 * External broker mode against Mosquitto (127.0.0.1:1883, or MQTT_URL_TEST), beyond the MQTT edge
 * contract (test/adapters/mqtt/mqtt-edge-contract.test.ts: topic shapes, commands, feeds, sessions): uplinks
 * retried while the log is away, two instances splitting the load, bad payloads and unknown topics
 * recorded as rejections while others are served, start failures.
 * Device ids are fresh per run and the share group is unique to the run (the broker is shared).
 */
import { suite, unless } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { encode as cborEncode } from 'cbor-x';
import { createExternalMqtt } from '../../../adapters/mqtt/external/createExternalMqtt.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { registryDirectory } from '../../../engine/ports/registry.ts';
import { publishingRegistry } from '../../../engine/access/publishingRegistry.ts';
import { InProcessRegistryChanges } from '../../../adapters/registry-changes/InProcessRegistryChanges.ts';
import { Topics } from '../../../schemas/messages.ts';
import { BROKER_URL, brokerReachable, ExternalStack } from '../../support/externalMqttStack.ts';
import type { SeededDevice } from '../../support/mqttStack.ts';
import { THERMO_ASSETS } from '../../support/mqttEdgeWorlds.ts';
import { waitFor } from '../../support/tmp.ts';

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

unless('mqtt-external', (await brokerReachable()) ? undefined : `no MQTT broker at ${BROKER_URL} (start Mosquitto 2.x on 127.0.0.1:1883, or set MQTT_URL_TEST)`, () => {
  // ------------------------------------------------------------------ uplinks
  const up = suite('external broker: uplinks');
  let s: ExternalStack;
  let dev: SeededDevice;
  up.before(async () => {
    s = await ExternalStack.start();
    await s.instance();
    dev = await s.device('thermo', THERMO_ASSETS);
  });
  up.after(async () => s.stop());

  up('while the log is unavailable an uplink is retried, then appended once', async () => {
    const flaky = await s.instance({ shareGroup: `${s.group}-flaky`, connections: 1 }, 3);
    const device = await s.client();
    await device.publishAsync(`device/${dev.deviceId}/asset/temperature/state`, json({ value: 99, at: '2026-01-02T00:00:00Z' }), { qos: 1 });
    await waitFor(() => flaky.appended.length === 1, 10_000, 'appended after the retries');
    assert.is(flaky.mqtt.stats.dropped, 0);
    await new Promise((r) => setTimeout(r, 200));
    assert.is(flaky.appended.length, 1, 'once');
  });

  up('a device deleted elsewhere: its next uplink is refused at once, though its cached copy would live 10 minutes', async () => {
    const changes = new InProcessRegistryChanges();
    const following = await s.instance({ shareGroup: `${s.group}-changes`, connections: 1, changes, cacheTtlMs: 600_000 });
    const gone = await s.device('deleted-elsewhere', [{ name: 't', profile: { type: 'number' } }]);
    const device = await s.client();
    const topic = `device/${gone.deviceId}/asset/t/state`;
    const mine = () => following.appended.filter((e) => e.deviceId === gone.deviceId).length;
    await device.publishAsync(topic, json({ value: 1 }), { qos: 1 });
    await waitFor(() => mine() === 1, 10_000, 'appended while the device exists (and now cached)');
    const refusedBefore = following.mqtt.stats.refused;
    assert.ok(await publishingRegistry(s.registry, changes).deleteDevice(gone.deviceId));
    await device.publishAsync(topic, json({ value: 2 }), { qos: 1 });
    await waitFor(() => following.mqtt.stats.refused === refusedBefore + 1, 10_000, 'the next uplink refused');
    assert.is(mine(), 1, 'not appended');
    await waitFor(() => s.rejections.rows.some((r) => r.deviceId === gone.deviceId && r.code === 'UNKNOWN_DEVICE'), 10_000, 'recorded as UNKNOWN_DEVICE');
    await changes.close();
  });

  // ------------------------------------------------------------------ load sharing
  const share = suite('external broker: two instances share the uplinks');
  let t: ExternalStack;
  share.before(async () => {
    t = await ExternalStack.start();
    await t.instance({ connections: 2 });
    await t.instance({ connections: 2 });
  });
  share.after(async () => t.stop());

  share('every message is taken by exactly one instance and stored once', async () => {
    const devices = await Promise.all([0, 1, 2, 3].map((i) => t.device(`d${i}`, [{ name: 'n', profile: { type: 'integer' } }])));
    const publishers = await Promise.all(devices.map(() => t.client()));
    const perDevice = 50;
    await Promise.all(devices.map(async (d, i) => {
      for (let k = 0; k < perDevice; k++) {
        const topic = k % 2 === 0 ? `device/${d.deviceId}/asset/n/state` : `asset/${d.assetIds.n}/state`;
        await publishers[i].publishAsync(topic, json({ value: k, at: new Date(Date.UTC(2026, 0, 1) + k * 1000).toISOString() }), { qos: 1 });
      }
    }));
    const total = devices.length * perDevice;
    const [a, b] = t.instances;
    await waitFor(() => a.appended.length + b.appended.length === total, 20_000, 'all appended');
    assert.ok(a.appended.length > 0 && b.appended.length > 0, `both instances took a share (${a.appended.length}/${b.appended.length})`);
    for (const d of devices) {
      await waitFor(async () => (await t.store.history({ deviceId: d.deviceId, asset: 'n', limit: 1000 })).length === perDevice, 20_000, `states of ${d.deviceId}`);
      const values = (await t.store.history({ deviceId: d.deviceId, asset: 'n', limit: 1000, order: 'asc' })).map((x) => x.value);
      assert.equal(values, Array.from({ length: perDevice }, (_, k) => k), 'each message stored once');
    }
    await new Promise((r) => setTimeout(r, 200));
    assert.is(a.appended.length + b.appended.length, total, 'nothing taken twice');
  });

  // ------------------------------------------------------------------ bad input
  const bad = suite('external broker: bad payloads and unknown topics');
  let b: ExternalStack;
  let bd: SeededDevice;
  let by: SeededDevice;
  bad.before(async () => {
    b = await ExternalStack.start();
    await b.instance({ maxPayloadBytes: 1024, connections: 1 });
    bd = await b.device('bad', [{ name: 't', profile: { type: 'number' } }]);
    by = await b.device('bystander', [{ name: 't', profile: { type: 'number' } }]);
  });
  bad.after(async () => b.stop());

  bad('refused with codes and recorded for the device the topic names; another client is served between each', async () => {
    const sender = await b.client();
    const bystander = await b.client();
    const appended = b.instances[0].appended;
    const assetTopic = `asset/${bd.assetIds.t}/state`;
    const deviceAssetTopic = `device/${bd.deviceId}/asset/t/state`;
    const stateTopic = `device/${bd.deviceId}/state`;
    const unknownDevice = `nodevice${process.pid}x${Date.now()}`;
    const cases: [string, Buffer, string, string, string?][] = [
      [assetTopic, Buffer.from('{"value":'), 'MALFORMED_JSON', bd.deviceId],
      [assetTopic, Buffer.from([0xff, 0xfe]), 'MALFORMED_JSON', bd.deviceId],
      [assetTopic, json([1, 2]), 'INVALID_STATE', bd.deviceId],
      [assetTopic, json({ value: 1, at: 5 }), 'INVALID_AT', bd.deviceId],
      [assetTopic, json({ value: 'x'.repeat(2000) }), 'PAYLOAD_TOO_LARGE', bd.deviceId],
      [deviceAssetTopic, Buffer.alloc(0), 'MALFORMED_JSON', bd.deviceId],
      [deviceAssetTopic, json({ val: 1 }), 'INVALID_STATE', bd.deviceId],
      [stateTopic, Buffer.from('{"t": '), 'MALFORMED_JSON', bd.deviceId],
      [stateTopic, json([1]), 'INVALID_STATE', bd.deviceId], // a JSON batch holding no device state
      [stateTopic, Buffer.from('@1'), 'MALFORMED_CBOR', bd.deviceId],
      [stateTopic, Buffer.from([0xa1, 0x61]), 'MALFORMED_CBOR', bd.deviceId],
      [stateTopic, json({ t: { value: 1 } }), 'MALFORMED_CBOR', bd.deviceId, 'application/cbor'],
      [stateTopic, Buffer.from(cborEncode({ t: 1 })), 'MALFORMED_JSON', bd.deviceId, 'application/json; charset=utf-8'],
      [`device/${unknownDevice}/state`, json({ t: { value: 1 } }), 'UNKNOWN_DEVICE', unknownDevice],
      [`device/${unknownDevice}/asset/t/state`, json({ value: 1 }), 'UNKNOWN_DEVICE', unknownDevice],
      [`device/${bd.deviceId}/asset/nope/state`, json({ value: 1 }), 'UNKNOWN_ASSET', bd.deviceId],
      [`asset/noasset${process.pid}x${Date.now()}/state`, json({ value: 1 }), 'UNKNOWN_ASSET', ''],
    ];
    // The broker is shared: other runs' uplinks reach this group too (and are refused as unknown
    // devices), so rows are picked by the device, or for an unknown asset id by the id in the reason.
    // A refusal of no device is a dead letter only (no device lists it among its rejections).
    const ours = (deviceId: string, topic: string) => (r: { deviceId: string; reason: string }) =>
      r.deviceId === deviceId && (deviceId !== '' || r.reason.includes(topic.split('/')[1]));
    const recorded = (deviceId: string, topic: string) => (deviceId !== ''
      ? b.rejections.rows
      : b.deadLetters.map((l) => ({ code: l.code, deviceId: l.envelope.deviceId, channel: l.envelope.channel, reason: l.reason }))
    ).filter(ours(deviceId, topic));
    for (const [topic, payload, code, deviceId, contentType] of cases) {
      const before = recorded(deviceId, topic).length;
      const served = appended.filter((e) => e.deviceId === by.deviceId).length;
      await sender.publishAsync(topic, payload, { qos: 1, properties: contentType === undefined ? undefined : { contentType } });
      await bystander.publishAsync(`device/${by.deviceId}/asset/t/state`, json({ value: 1 }), { qos: 1 });
      await waitFor(() => recorded(deviceId, topic).length === before + 1
        && appended.filter((e) => e.deviceId === by.deviceId).length === served + 1, 5000, `${topic} ${code}`);
      const row = recorded(deviceId, topic)[before];
      assert.equal([row.code, row.deviceId, row.channel], [code, deviceId, 'mqtt'], `${topic}: ${payload.subarray(0, 20).toString('hex')}`);
      assert.ok(row.reason.length > 0 && row.reason.length < 300);
    }
    assert.ok(!appended.some((e) => e.deviceId === bd.deviceId), 'nothing of the refused messages was appended');
    assert.is(appended.filter((e) => e.deviceId === by.deviceId).length, cases.length);
  });

  bad('an unreachable broker fails start with UNAVAILABLE; a bad share group is refused before connecting', async () => {
    let error: unknown;
    try {
      await createExternalMqtt({ url: 'mqtt://127.0.0.1:9', registry: b.registry, admission: b.instances[0].intake.admission, clock: systemClock, connectTimeoutMs: 2000 });
    } catch (e) {
      error = e;
    }
    assert.instance(error, FleetError);
    assert.is((error as FleetError).code, 'UNAVAILABLE');
    for (const shareGroup of ['', 'a/b', 'a+', '#']) {
      try {
        await createExternalMqtt({ url: BROKER_URL, registry: b.registry, admission: b.instances[0].intake.admission, clock: systemClock, shareGroup });
        assert.unreachable(shareGroup);
      } catch (e) {
        assert.instance(e, TypeError);
      }
    }
  });

  up.run();
  share.run();
  bad.run();
});
