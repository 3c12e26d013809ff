/**
 * Quotas of grounds over real HTTP (docs/grounds.md "Quotas"), once per registry adapter: a device
 * more than the ground's devices quota — created (`POST /ground/{groundId}/devices`) or activated
 * (`POST /activate`) — is `403 QUOTA_EXCEEDED` problem+json, decided in the registry's transaction
 * (concurrent creations at the limit: exactly as many pass as there are places); uplinks above the
 * ground's states per second are `429 QUOTA_EXCEEDED` with Retry-After, recorded as rejections,
 * while another ground's uplinks go on.
 */
import * as assert from 'uvu/assert';
import { activationBody, activationWorld, assertProblem } from '../../support/activationWorld.ts';
import { suitePerRegistry, type RegistryFactory } from '../../support/edgeHarness.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';

function quotasSuite(factory: RegistryFactory) {
  const test = harnessSuite('http quotas', factory);

  test('devices: created up to the quota, the next one 403 QUOTA_EXCEEDED; racing creations at the limit fill the places exactly', async ({ h }) => {
    const user = await h.registry.createUser({ name: 'ann' });
    const g = await h.registry.createGround({ name: 'site', userId: user.entity.id });
    await h.registry.setQuota(g.id, { devices: 4 });
    const create = (name: string) => h.request('POST', `/ground/${g.id}/devices`, { token: user.token, json: { name } });
    assert.is((await create('one')).status, 201);
    assert.is((await create('two')).status, 201);
    const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => create(`racer-${i}`)));
    const statuses = replies.map((r) => r.status).sort();
    assert.equal(statuses, [201, 201, 403, 403, 403, 403], statuses.join(','));
    for (const r of replies) if (r.status !== 201) assertProblem(r, 403, 'QUOTA_EXCEEDED');
    const refused = await create('five');
    assertProblem(refused, 403, 'QUOTA_EXCEEDED');
    assert.match(refused.json.detail, /quota/);
    assert.is((await h.registry.listDevices(g.id)).length, 4);
  });

  test('devices: activating a code into a ground at its quota is 403 QUOTA_EXCEEDED and leaves the code unused; with room it is 201', async ({ h }) => {
    const w = await activationWorld(h);
    await h.registry.createDevice({ groundId: w.groundId, name: 'already-here' });
    await h.registry.setQuota(w.groundId, { devices: 1 });
    const a = (await w.create(activationBody(w.tracker, w.hw(), [{ networkId: 'net8', data: {} }]))).json;
    const body = { code: a.code, option: a.options[0].id, groundId: w.groundId };
    assertProblem(await h.request('POST', '/activate', { token: w.user.token, json: body }), 403, 'QUOTA_EXCEEDED');
    assert.is((await h.request('GET', `/partner/${w.partner.id}/activations/${a.code}`, { token: w.partner.token })).json.status, 'unused');
    await h.registry.setQuota(w.groundId, { devices: 2 });
    assert.is((await h.request('POST', '/activate', { token: w.user.token, json: body })).status, 201);
  });

  return test;
}

for (const s of suitePerRegistry('http-quotas', quotasSuite)) s.run();
