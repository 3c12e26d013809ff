/**
 * After activation the new device is an ordinary device: its token sends states over the uplink
 * endpoints (spec §4.1–4.2: 202) and the engine validates them against the asset profiles of the
 * device type version it was activated from. Two ways: the edge harness with the uplink pipeline
 * (device actors) on each registry adapter, and the whole service from the composition root
 * (app/createService.ts) on its embedded defaults, reading the stored states back over HTTP.
 */
import { encode as encodeCbor } from 'cbor-x';
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { createService } from '../../../app/createService.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import { registryDirectory } from '../../../engine/ports/registry.ts';
import { buildEngine, type Engine } from '../../../app/buildEngine.ts';
import { Topics, type DeadLetter, type StateRow } from '../../../schemas/messages.ts';
import { activationBody, activationWorld, assertProblem, trackerDraft } from '../../support/activationWorld.ts';
import { EdgeHarness, suitePerRegistry, type RegistryFactory } from '../../support/edgeHarness.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';
import { loopbackConfig } from '../../support/loopbackConfig.ts';

// Before the harness clock's receive time (2025-01-01): an `at` more than a day ahead of it is refused.
const AT = '2024-12-31T10:00:00.000Z';

function engineSuite(factory: RegistryFactory) {
  const test = suite(`activated device through the engine (${factory.name})`);

  test('the activated device\'s token sends states; the actors check them against the device type\'s profiles', async () => {
    const { registry, dispose, database } = await factory.create();
    let engine: Engine | undefined;
    const h = await EdgeHarness.start({ registry, database, onDeviceChanged: (id) => engine?.pipeline.actors.invalidate(id) });
    const rows: StateRow[] = [];
    const dead: DeadLetter[] = [];
    engine = buildEngine({
      log: h.log, store: { append: async (r) => { rows.push(...r); } }, rejections: h.rejections,
      directory: registryDirectory(registry), clock: systemClock,
      settings: { commitIntervalMs: 20, batchDelayMs: 10 },
      onDeadLetters: (letters) => { dead.push(...letters); },
    });
    const pipeline = engine.pipeline;
    await engine.start();
    try {
      const w = await activationWorld(h);
      const a = (await w.create(activationBody(w.tracker, w.hw('e2e'), [{ networkId: 'net1', data: { devEui: w.eui(), applicationId: 'fleet' } }]))).json;
      const activated = await h.request('POST', '/activate', { token: w.user.token, json: { code: a.code, option: a.options[0].id, groundId: w.groundId } });
      assert.is(activated.status, 201, activated.text);
      const { id, token } = activated.json;
      const put = (path: string, options: { json?: unknown; body?: Uint8Array; contentType?: string }) => h.request('PUT', path, { token, ...options });

      const first = await put(`/device/${id}/state`, { json: { temperature: { value: 21.5, at: AT }, location: { value: { latitude: 50.85, longitude: 4.35 }, at: AT } } });
      assert.is(first.status, 202, first.text);
      assert.ok(first.json.uplinkId);
      // spec §2.1: the value must match the asset's profile (temperature: -40…85).
      assertProblem(await put(`/device/${id}/state`, { json: { temperature: { value: 120, at: AT } } }), 422, 'PROFILE_VIOLATION', 'body.temperature');
      assertProblem(await put(`/device/${id}/state`, { json: { location: { value: { latitude: 'north' }, at: AT } } }), 422, 'PROFILE_VIOLATION');
      assertProblem(await put(`/device/${id}/state`, { json: { fuel: { value: 3 } } }), 404, 'UNKNOWN_ASSET');
      const mixed = await put(`/device/${id}/state`, { json: { temperature: { value: 22, at: AT }, buzzer: { value: 'loud', at: AT } } });
      assert.is(mixed.status, 202, mixed.text);
      assert.equal(mixed.json.rejected.map((r: { asset: string; code: string }) => [r.asset, r.code]), [['buzzer', 'PROFILE_VIOLATION']]);
      assert.is((await put(`/device/${id}/state`, { body: encodeCbor({ temperature: 23 }), contentType: 'application/cbor' })).status, 202, 'CBOR, the type\'s payload format');
      assert.is((await put(`/device/${id}/asset/buzzer/state`, { json: { value: true, at: AT } })).status, 202);

      const envelopes = h.appended.filter((e) => e.deviceId === id);
      assert.equal(envelopes.map((e) => [e.channel, e.contentType, e.asset ?? null]), [['http', 'json', null], ['http', 'json', null], ['http', 'cbor', null], ['http', 'json', 'buzzer']]);

      await waitFor(() => rows.filter((r) => r.deviceId === id).length === 5 && dead.length === 1, 15_000, 'five states stored, one value dead-lettered');
      const stored = rows.filter((r) => r.deviceId === id).map((r) => [r.asset, r.value]).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
      assert.equal(stored, [['buzzer', true], ['location', { latitude: 50.85, longitude: 4.35 }], ['temperature', 21.5], ['temperature', 22], ['temperature', 23]]);
      assert.is(dead[0].code, 'PROFILE_VIOLATION');
      assert.is(dead[0].asset, 'buzzer');
      assert.is(dead[0].envelope.id, mixed.json.uplinkId);
      assert.is(pipeline.failure, undefined);
    } finally {
      await engine.stop();
      await h.close();
      await dispose();
    }
  });

  return test;
}

for (const s of suitePerRegistry('http-activation-e2e', engineSuite)) s.run();

const service = suite('activated device through the composition root (embedded defaults)');

service('partner → device type → activation → user activates → device sends states → stored and read back', async () => {
  const tmp = tempDir('activation-service');
  const svc = await createService({
    config: loopbackConfig(tmp.dir),
    logger: silentLogger,
  });
  try {
    const base = `http://127.0.0.1:${svc.httpPort}`;
    const call = async (method: string, path: string, token: string, json?: unknown) => {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, json: text === '' ? undefined : JSON.parse(text) };
    };
    const partner = await svc.registry.createPartner({ name: 'Acme' });
    const user = await svc.registry.createUser({ name: 'installer' });
    const ground = await svc.registry.createGround({ name: 'warehouse', userId: user.entity.id });
    const P = partner.entity.id;
    assert.is((await call('PUT', `/partner/${P}/device-types/tracker`, partner.token, trackerDraft)).status, 201);
    assert.is((await call('POST', `/partner/${P}/device-types/tracker/versions`, partner.token)).status, 201);
    const created = await call('POST', `/partner/${P}/activations`, partner.token, activationBody(`${P}/tracker`, 'IMEI-356938035643809', [{ networkId: 'net7', data: { imei: '356938035643809', imsi: '204080123456789' } }]));
    assert.is(created.status, 201, created.text);
    const activated = await call('POST', '/activate', user.token, { code: created.json.code, option: created.json.options[0].id, groundId: ground.id });
    assert.is(activated.status, 201, activated.text);
    const device = activated.json;
    assert.equal(device.network, { networkId: 'tmobilenl', data: { imei: '356938035643809', imsi: '204080123456789' } });
    assert.is((await call('PUT', `/device/${device.id}/state`, device.token, { temperature: { value: 19.5, at: AT }, buzzer: { value: false, at: AT } })).status, 202);
    assertProblem(await call('PUT', `/device/${device.id}/state`, device.token, { temperature: { value: 'warm', at: AT } }), 422, 'PROFILE_VIOLATION', 'body.temperature');
    await waitFor(async () => (await call('GET', `/device/${device.id}/state`, device.token)).json?.temperature !== undefined, 20_000, 'the state stored');
    const latest = (await call('GET', `/device/${device.id}/state`, user.token)).json;
    assert.equal(latest, { temperature: { value: 19.5, at: AT }, buzzer: { value: false, at: AT } });
  } finally {
    await svc.stop();
    tmp.remove();
  }
});

service.run();
