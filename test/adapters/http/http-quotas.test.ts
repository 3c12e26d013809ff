/**
 * Quotas of grounds over real HTTP (docs/grounds.md "Quotas"), once per registry adapter: a device
 * more than the ground's devices quota — created (`POST /ground/{groundId}/devices`) or activated
 * (`POST /activate`) — is `403 QUOTA_EXCEEDED` problem+json, decided in the registry's transaction
 * (concurrent creations at the limit: exactly as many pass as there are places); uplinks above the
 * ground's states per second are `429 QUOTA_EXCEEDED` with Retry-After, recorded as rejections,
 * while another ground's uplinks go on. Device creations and activations, refused or not, are in the
 * ground's audit log (states sent are data, not changes: they are not).
 */
import * as assert from 'uvu/assert';
import { activationBody, activationWorld, assertProblem } from '../../support/activationWorld.ts';
import { EdgeHarness, suitePerRegistry, type RegistryFactory } from '../../support/edgeHarness.ts';
import { waitFor } from '../../support/tmp.ts';
import { harnessSuite } from '../../support/harnessSuite.ts';
import { auditUntil, type AuditReader } from '../../support/auditLog.ts';

const reader = (h: EdgeHarness): AuditReader => ({ get: (path, token) => h.request('GET', path, { token }), tick: () => h.clock.advance(250) });

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
    // Each creation in the ground's audit log, the refused ones with their code.
    const audit = await auditUntil(reader(h), g.id, user.token, (items) => items.length >= 9);
    assert.equal(audit.map((e) => `${e.operation} ${e.actor.id} ${e.result.status} ${e.result.code ?? ''}`).sort(), [
      ...Array.from({ length: 4 }, () => `createDevice ${user.entity.id} 201 `),
      ...Array.from({ length: 5 }, () => `createDevice ${user.entity.id} 403 QUOTA_EXCEEDED`),
    ]);
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
    const activated = await h.request('POST', '/activate', { token: w.user.token, json: body });
    assert.is(activated.status, 201);
    const audit = await auditUntil(reader(h), w.groundId, w.user.token, (items) => items.length >= 2);
    assert.equal(audit.map((e) => [e.operation, e.actor.id, e.targetId, e.result.status, e.result.code]), [
      ['activate', w.user.id, activated.json.id, 201, undefined],
      ['activate', w.user.id, w.groundId, 403, 'QUOTA_EXCEEDED'],
    ]);
  });

  test('states per second: a burst of twice the rate passes, then 429 QUOTA_EXCEEDED with Retry-After, recorded once a second per device; the rate refills; another ground goes on; a changed quota applies at once', async ({ h }) => {
    const user = await h.registry.createUser({ name: 'ann' });
    const g = await h.registry.createGround({ name: 'limited', userId: user.entity.id });
    const free = await h.registry.createGround({ name: 'free', userId: user.entity.id });
    const assets = [{ name: 'temperature', is: 'sensor' as const, profile: { type: 'number' } }];
    const d = await h.registry.createDevice({ groundId: g.id, name: 'd', assets });
    const other = await h.registry.createDevice({ groundId: free.id, name: 'o', assets });
    await h.registry.setQuota(g.id, { statesPerSecond: 5 });
    await waitFor(() => quotaApplied(h, g.id), 1000, 'the quota applied within a second');
    const send = (device: { device: { id: string }; token: string }, value: unknown) =>
      h.request('PUT', `/device/${device.device.id}/asset/temperature/state`, { token: device.token, json: { value } });
    for (let i = 0; i < 10; i++) assert.is((await send(d, i)).status, 202, `burst ${i}`);
    const over = await send(d, 10);
    assertProblem(over, 429, 'QUOTA_EXCEEDED');
    assert.is(over.headers.get('retry-after'), '1');
    assert.match(over.json.detail, /over its quota of states per second/);
    assert.type(over.json.uplinkId, 'string', 'the refusal names the uplink its rejection is recorded under');
    assert.is((await send(d, 11)).status, 429);
    for (let i = 0; i < 20; i++) assert.is((await send(other, i)).status, 202, 'another ground is not limited');
    await waitFor(() => h.rejections.rows.some((r) => r.code === 'QUOTA_EXCEEDED'), 2000, 'the refusal recorded');
    assert.is(h.rejections.rows.filter((r) => r.code === 'QUOTA_EXCEEDED' && r.deviceId === d.device.id).length, 1, 'a device\'s quota refusals recorded once a second');
    // A device state of three states takes three.
    h.clock.advance(600);
    assert.is((await send(d, 12)).status, 202, '3 states refilled in 600 ms');
    assert.is((await send(d, 13)).status, 202);
    assert.is((await send(d, 14)).status, 202);
    assert.is((await send(d, 15)).status, 429);
    h.clock.advance(1000);
    const batch = await h.request('PUT', `/device/${d.device.id}/state`, { token: d.token, json: { temperature: { value: 1 } } });
    assert.is(batch.status, 202);
    await h.registry.setQuota(g.id, { statesPerSecond: null, devices: 10 });
    await waitFor(() => !quotaApplied(h, g.id), 1000, 'the removed rate applied within a second');
    for (let i = 0; i < 30; i++) assert.is((await send(d, i)).status, 202, 'no rate any more');
  });

  return test;
}

/** Whether the harness's edge holds a rate for the ground. */
function quotaApplied(h: EdgeHarness, groundId: string): boolean {
  return h.rates.rates.limits(groundId);
}

for (const s of suitePerRegistry('http-quotas', quotasSuite)) s.run();
