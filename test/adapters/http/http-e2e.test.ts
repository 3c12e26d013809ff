/**
 * End to end on the embedded adapters: HTTP edge → local log → UplinkPipeline (device actors) →
 * StateBatcher → chDB → HTTP reads, with the registry (PGlite) as the actors' directory and the
 * dead letters feeding the rejections a maker reads.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encode as encodeCbor } from 'cbor-x';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { registryDirectory } from '../../../engine/ports/registry.ts';
import { buildEngine, type Engine } from '../../../app/buildEngine.ts';
import { EdgeHarness, type Reply } from '../../support/edgeHarness.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

test('states sent over HTTP are stored by the actors and read back over HTTP; dropped values show as rejections', async () => {
  const tmp = tempDir('edge-e2e');
  const registry = await createPgliteRegistry();
  const store = createChdbStore({ dir: `${tmp.dir}/chdb` });
  await store.init();
  let engine: Engine | undefined;
  const h = await EdgeHarness.start({ registry, store, onDeviceChanged: (id) => engine?.pipeline.actors.invalidate(id) });
  engine = buildEngine({
    log: h.log, store, rejections: h.rejections, directory: registryDirectory(registry), clock: systemClock,
    settings: { commitIntervalMs: 20, batchDelayMs: 10 },
  });
  const pipeline = engine.pipeline;
  await engine.start();
  try {
    const s = await h.seed([{ name: 'temperature', profile: { type: 'number' } }, { name: 'door', profile: { type: 'boolean' } }, { name: 'label', profile: { type: 'string' } }]);
    const get = (path: string) => h.request('GET', path, { token: s.deviceToken });
    const put = (path: string, options: { json?: unknown; body?: Uint8Array; contentType?: string }) => h.request('PUT', path, { token: s.deviceToken, ...options });
    const ok = (r: Reply) => assert.is(r.status, 202, r.text);

    ok(await put(`/device/${s.deviceId}/state`, { json: { temperature: { value: 20.5, at: '2024-05-01T12:00:00Z' }, door: { value: true, at: '2024-05-01T12:00:00Z' } } }));
    ok(await put(`/device/${s.deviceId}/state`, { body: encodeCbor({ temperature: 21.5 }), contentType: 'application/cbor' }));
    ok(await put(`/asset/${s.assetIds.label}/state`, { json: { value: 'kitchen', at: '2024-05-01T12:01:00Z' } }));
    const partly = await put(`/device/${s.deviceId}/state`, { json: { door: { value: 'ajar', at: '2024-05-01T12:02:00Z' }, temperature: { value: 22.5, at: '2024-05-01T12:02:00Z' } } });
    ok(partly);
    assert.equal(partly.json.rejected.map((r: { asset: string }) => r.asset), ['door']);

    await waitFor(async () => (await get(`/device/${s.deviceId}/asset/temperature/states`)).json.items.length === 3, 15_000, 'three temperatures stored');
    const history = (await get(`/device/${s.deviceId}/asset/temperature/states?order=asc`)).json.items;
    // The CBOR state had no `at`: its time is the edge's receive time.
    assert.equal(history.map((i: { value: number }) => i.value).sort(), [20.5, 21.5, 22.5]);
    assert.ok(history.some((i: { at: string }) => i.at === new Date(h.clock.now()).toISOString()));

    const latest = await get(`/device/${s.deviceId}/state`);
    assert.equal(latest.json.door, { value: true, at: '2024-05-01T12:00:00.000Z' });
    assert.equal(latest.json.label, { value: 'kitchen', at: '2024-05-01T12:01:00.000Z' });
    const label = await get(`/asset/${s.assetIds.label}/state`);
    assert.equal(label.json, { id: s.assetIds.label, state: { value: 'kitchen', at: '2024-05-01T12:01:00.000Z' } });

    await waitFor(() => h.rejections.rows.length === 1, 15_000, 'the dropped door value reaches the rejections');
    const rejections = (await get(`/device/${s.deviceId}/rejections`)).json.items;
    assert.is(rejections[0].code, 'PROFILE_VIOLATION');
    assert.is(rejections[0].asset, 'door');
    assert.is(rejections[0].uplinkId, partly.json.uplinkId);

    // A profile changed through the edge reaches the actor: strings become acceptable for door.
    assert.is((await h.request('PUT', `/device/${s.deviceId}/asset/door`, { token: s.userToken, json: { profile: { type: 'string' } } })).status, 200);
    ok(await put(`/device/${s.deviceId}/asset/door/state`, { json: { value: 'ajar', at: '2024-05-01T12:03:00Z' } }));
    await waitFor(async () => (await get(`/device/${s.deviceId}/asset/door/state`)).json.state?.value === 'ajar', 15_000, 'door stored as a string');
    assert.is(pipeline.failure, undefined);
  } finally {
    await engine.stop();
    await h.close();
    await store.close();
    await registry.close();
    tmp.remove();
  }
});

test.run();
