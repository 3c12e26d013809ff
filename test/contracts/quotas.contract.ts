/**
 * Contract of the quotas port (engine/ports/quotaRegistry.ts): limits set one by one, cleared,
 * removed and listed; a device more than the ground's quota refused with QUOTA_EXCEEDED in the
 * registry's transaction (exactly one of two concurrent creations at the limit passes); defaults
 * for new grounds; hostile limits refused before any query. Runs on the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { FleetRegistry, PrincipalRegistry, QuotaRegistry, ConnectivityRegistry, GroundRegistry } from '../../engine/ports/registry.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { any, MALFORMED_IDS, ownedGround, registrySuite, rejects, START, type RegistryFactory } from './registry.contract.ts';
import { SimulatedClock } from '../../engine/kernel/clock.ts';

type R = QuotaRegistry & FleetRegistry & PrincipalRegistry & ConnectivityRegistry & GroundRegistry;

const GHOST = 'A'.repeat(22);
/** Not limits: zero, negative, fractions, beyond the maximum, not numbers, NaN, Infinity, numeric text. */
const NOT_LIMITS: unknown[] = [0, -1, 1.5, 10_000_001, Number.MAX_SAFE_INTEGER, 1e308, Number.NaN, Number.POSITIVE_INFINITY, '5', '５', true, [5], { n: 5 }];

export function quotasContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<R>(`quotas contract: ${name}`, factory);

  test('setQuota sets the limits named, keeps the others, null clears one; a quota with no limit left is removed', async ({ r, clock }) => {
    const { ground: g } = await ownedGround(r);
    assert.is(await r.getQuota(g.id), undefined);
    clock.advance(10);
    const set = await r.setQuota(g.id, { devices: 3, statesPerSecond: 50 });
    assert.equal(set, { groundId: g.id, devices: 3, statesPerSecond: 50, updatedAt: clock.now() });
    clock.advance(10);
    assert.equal(await r.setQuota(g.id, { retentionDays: 30 }), { groundId: g.id, devices: 3, statesPerSecond: 50, retentionDays: 30, updatedAt: clock.now() });
    assert.equal(await r.setQuota(g.id, { devices: null }), { groundId: g.id, statesPerSecond: 50, retentionDays: 30, updatedAt: clock.now() });
    assert.equal(await r.getQuota(g.id), { groundId: g.id, statesPerSecond: 50, retentionDays: 30, updatedAt: clock.now() });
    assert.is(await r.setQuota(g.id, { statesPerSecond: null, retentionDays: null }), undefined, 'no limit left');
    assert.is(await r.getQuota(g.id), undefined);
    assert.equal(await r.listQuotas(), []);
  });

  test('removeQuota and listQuotas; a deleted ground takes its quota', async ({ r, h }) => {
    const { ground: a } = await ownedGround(r, 'a');
    const { ground: b } = await ownedGround(r, 'b');
    await r.setQuota(a.id, { devices: 1 });
    await r.setQuota(b.id, { statesPerSecond: 7 });
    assert.equal((await r.listQuotas()).map((q) => q.groundId).sort(), [a.id, b.id].sort());
    assert.is(await r.removeQuota(a.id), true);
    assert.is(await r.removeQuota(a.id), false);
    assert.is(await r.removeQuota(GHOST), false);
    await r.deleteGround(b.id);
    assert.equal(await r.listQuotas(), []);
    assert.equal(await h.sql('SELECT * FROM ground_quotas'), []);
  });

  test('hostile input: malformed ids, unknown ground, limits that are not whole numbers in range, extra fields', async ({ r }) => {
    const { ground: g } = await ownedGround(r);
    await rejects(r.setQuota(GHOST, { devices: 1 }), 'NOT_FOUND', 'groundId');
    for (const bad of MALFORMED_IDS) {
      await rejects(r.setQuota(any(bad), { devices: 1 }), 'VALIDATION_FAILED', 'groundId');
      assert.is(await r.getQuota(any(bad)), undefined);
      assert.is(await r.removeQuota(any(bad)), false);
    }
    for (const field of ['devices', 'statesPerSecond', 'retentionDays']) {
      for (const bad of NOT_LIMITS) {
        if (field === 'retentionDays' && bad === 10_000_001) continue;
        await rejects(r.setQuota(g.id, { [field]: bad } as never), 'VALIDATION_FAILED', field);
      }
    }
    await rejects(r.setQuota(g.id, { retentionDays: 36_501 }), 'VALIDATION_FAILED', 'retentionDays');
    await rejects(r.setQuota(g.id, { statesPerSecond: 1_000_001 }), 'VALIDATION_FAILED', 'statesPerSecond');
    await rejects(r.setQuota(g.id, { devices: 1, bytes: 5 } as never), 'VALIDATION_FAILED');
    await rejects(r.setQuota(g.id, any('devices=1') as never), 'VALIDATION_FAILED');
    assert.is(await r.getQuota(g.id), undefined, 'nothing refused set anything');
  });

  test('devices: one more device than the quota is QUOTA_EXCEEDED; a freed place is taken again; other grounds are not limited', async ({ r }) => {
    const { ground: g } = await ownedGround(r);
    const { ground: other } = await ownedGround(r, 'other');
    await r.setQuota(g.id, { devices: 2 });
    const first = await r.createDevice({ groundId: g.id, name: 'd1' });
    await r.createDevice({ groundId: g.id, name: 'd2' });
    const refused = await rejects(r.createDevice({ groundId: g.id, name: 'd3' }), 'QUOTA_EXCEEDED', 'devices');
    assert.is(refused.status, 403);
    assert.is((await r.listDevices(g.id)).length, 2, 'nothing of the refused device stays');
    await r.deleteDevice(first.device.id);
    await r.createDevice({ groundId: g.id, name: 'd3' });
    for (let i = 0; i < 3; i++) await r.createDevice({ groundId: other.id, name: `o${i}` });
    await r.setQuota(g.id, { devices: 1 });
    await rejects(r.createDevice({ groundId: g.id, name: 'd4' }), 'QUOTA_EXCEEDED');
    assert.is((await r.listDevices(g.id)).length, 2, 'a lowered quota keeps the devices already there');
    await r.setQuota(g.id, { devices: null, statesPerSecond: 3 });
    await r.createDevice({ groundId: g.id, name: 'd4' });
  });

  test('devices: concurrent creations at the limit — exactly as many pass as there are places', async ({ r }) => {
    const { ground: g } = await ownedGround(r);
    await r.setQuota(g.id, { devices: 3 });
    await r.createDevice({ groundId: g.id, name: 'd0' });
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => r.createDevice({ groundId: g.id, name: `c${i}` })));
    const passed = outcomes.filter((o) => o.status === 'fulfilled').length;
    assert.is(passed, 2);
    for (const o of outcomes) {
      if (o.status === 'rejected') assert.is((o.reason as FleetError).code, 'QUOTA_EXCEEDED');
    }
    assert.is((await r.listDevices(g.id)).length, 3);
  });

  test('liveEdges counts the edges whose lease is alive at a time', async ({ r }) => {
    assert.is(await r.liveEdges(START), 0);
    await r.renewEdge('a'.repeat(22), START + 1000);
    await r.renewEdge('b'.repeat(22), START + 3000);
    assert.is(await r.liveEdges(START), 2);
    assert.is(await r.liveEdges(START + 1000), 1, 'a lease ending at a time is over then');
    assert.is(await r.liveEdges(START + 5000), 0);
    await rejects(r.liveEdges(Number.NaN), 'VALIDATION_FAILED', 'now');
  });

  test('defaults: a new ground starts with the configured limits, which then change like any', async () => {
    const clock = new SimulatedClock(START);
    const h = await factory({ clock, quotaDefaults: { devices: 1, statesPerSecond: 100 } });
    try {
      const r = h.registry;
      const { ground: g } = await ownedGround(r);
      assert.equal(await r.getQuota(g.id), { groundId: g.id, devices: 1, statesPerSecond: 100, updatedAt: START });
      await r.createDevice({ groundId: g.id, name: 'one' });
      await rejects(r.createDevice({ groundId: g.id, name: 'two' }), 'QUOTA_EXCEEDED');
      await r.setQuota(g.id, { devices: 2 });
      await r.createDevice({ groundId: g.id, name: 'two' });
    } finally {
      await h.dispose();
    }
  });

  return test;
}
