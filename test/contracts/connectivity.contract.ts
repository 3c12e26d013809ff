/**
 * Contract of the connectivity port (engine/ports/connectivityRegistry.ts): last seen times that
 * only move forward, edges' leases and the sessions recorded on them (connected while the lease is
 * alive, gone with a dropped edge, dropped an hour after a lease lapsed), and a ground's silent
 * devices by pages. Runs on the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { ConnectivityRegistry, FleetRegistry, PrincipalRegistry } from '../../engine/ports/registry.ts';
import { any, MALFORMED_IDS, ownedGround, registrySuite, rejects, START, type RegistryFactory } from './registry.contract.ts';

const MISSING = 'A'.repeat(22);
const EDGE_A = 'edgeAAAAAAAAAAAAAAAAAA';
const EDGE_B = 'edgeBBBBBBBBBBBBBBBBBB';

type Registry = ConnectivityRegistry & FleetRegistry & PrincipalRegistry;

export function connectivityContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<Registry>(`connectivity contract: ${name}`, factory);

  const devicesOf = async (r: Registry, n: number) => {
    const { ground } = await ownedGround(r);
    const devices = [];
    for (let i = 0; i < n; i++) devices.push((await r.createDevice({ groundId: ground.id, name: `d${i}` })).device);
    return { ground, devices };
  };

  test('lastSeenAt: absent until seen, then only moves forward; the latest of one flush wins', async ({ r }) => {
    const { devices: [a, b] } = await devicesOf(r, 2);
    assert.equal(await r.connectivity(a.id, START), { connected: false });
    await r.recordActivity([{ deviceId: a.id, at: START + 10 }, { deviceId: a.id, at: START + 30 }, { deviceId: a.id, at: START + 20 }]);
    assert.equal(await r.connectivity(a.id, START), { lastSeenAt: START + 30, connected: false });
    await r.recordActivity([{ deviceId: a.id, at: START + 5 }, { deviceId: b.id, at: START + 7 }]);
    assert.equal((await r.connectivity(a.id, START))?.lastSeenAt, START + 30, 'an older time does not move it back');
    assert.equal((await r.connectivity(b.id, START))?.lastSeenAt, START + 7);
    await r.recordActivity([{ deviceId: a.id, at: START + 40 }]);
    assert.equal((await r.connectivity(a.id, START))?.lastSeenAt, START + 40);
    await r.recordActivity([]);
  });

  test('recordActivity: unknown and deleted devices and ids that cannot exist are ignored; bad times refused', async ({ r }) => {
    const { devices: [a, gone] } = await devicesOf(r, 2);
    assert.ok(await r.deleteDevice(gone.id));
    await r.recordActivity([{ deviceId: MISSING, at: START }, { deviceId: gone.id, at: START }, { deviceId: any('nope'), at: START }, { deviceId: a.id, at: START + 1 }]);
    assert.equal((await r.connectivity(a.id, START))?.lastSeenAt, START + 1);
    assert.is(await r.connectivity(gone.id, START), undefined);
    for (const at of [-1, 1.5, Number.NaN, any('1'), 2 ** 63]) {
      await rejects(r.recordActivity([{ deviceId: a.id, at: at as number }]), 'VALIDATION_FAILED', 'seen/0/at');
    }
    await rejects(r.recordActivity({} as never), 'VALIDATION_FAILED', 'seen');
  });

  test('connectivity: undefined for a missing device or a malformed id, without a query', async ({ r }) => {
    assert.is(await r.connectivity(MISSING, START), undefined);
    for (const id of MALFORMED_IDS) assert.is(await r.connectivity(any(id), START), undefined);
  });

  test('sessions: connected while the edge lease is alive, not once it lapses, again once renewed', async ({ r }) => {
    const { devices: [a, b] } = await devicesOf(r, 2);
    assert.is(await r.renewEdge(EDGE_A, START + 1000), false, 'a new edge had no lease');
    assert.is(await r.renewEdge(EDGE_A, START + 1000), true);
    await r.recordSessions(EDGE_A, [{ deviceId: a.id, since: START }], []);
    assert.equal(await r.connectivity(a.id, START + 999), { connected: true });
    assert.equal(await r.connectivity(b.id, START + 999), { connected: false });
    assert.equal(await r.connectivity(a.id, START + 1000), { connected: false }, 'lapsed at alive_until');
    assert.is(await r.renewEdge(EDGE_A, START + 3000), true);
    assert.equal(await r.connectivity(a.id, START + 2000), { connected: true }, 'the sessions of a renewed lease count again');
    await r.recordSessions(EDGE_A, [], [a.id]);
    assert.equal(await r.connectivity(a.id, START + 2000), { connected: false });
    await r.dropEdge(EDGE_A);
  });

  test('sessions: one device on two edges stays connected until its last session closes; a dropped edge takes its sessions', async ({ r, h }) => {
    const { devices: [a, b] } = await devicesOf(r, 2);
    await r.renewEdge(EDGE_A, START + 10_000);
    await r.renewEdge(EDGE_B, START + 10_000);
    await r.recordSessions(EDGE_A, [{ deviceId: a.id, since: START }, { deviceId: b.id, since: START }], []);
    await r.recordSessions(EDGE_B, [{ deviceId: a.id, since: START + 1 }], []);
    await r.recordSessions(EDGE_A, [{ deviceId: a.id, since: START + 2 }], [], );
    await r.recordSessions(EDGE_A, [], [a.id]);
    assert.equal(await r.connectivity(a.id, START + 5), { connected: true }, 'still open on edge B');
    await r.dropEdge(EDGE_B);
    assert.equal(await r.connectivity(a.id, START + 5), { connected: false });
    assert.equal(await r.connectivity(b.id, START + 5), { connected: true });
    assert.is(await r.renewEdge(EDGE_B, START + 10_000), false, 'a dropped edge has no lease');
    const rows = await h.sql('SELECT count(*) AS n FROM device_sessions WHERE edge_id = $1', [EDGE_B]);
    assert.is(Number(rows[0].n), 0);
    // Opened and closed in one call: closed wins only for devices not opened again.
    await r.recordSessions(EDGE_B, [{ deviceId: a.id, since: START + 3 }], [a.id, b.id, MISSING, any('bad')]);
    assert.equal(await r.connectivity(a.id, START + 5), { connected: true });
    await r.dropEdge(EDGE_A);
    await r.dropEdge(EDGE_B);
    await r.dropEdge(any('not an id'));
    assert.equal(await r.connectivity(b.id, START + 5), { connected: false });
  });

  test('sessions: a lease lapsed for an hour is dropped with its sessions when another edge renews', async ({ r, h, clock }) => {
    const { devices: [a] } = await devicesOf(r, 1);
    const now = clock.now();
    await r.renewEdge(EDGE_A, now + 1000);
    await r.recordSessions(EDGE_A, [{ deviceId: a.id, since: now }], []);
    clock.advance(1000 + 3_600_000 + 1);
    await r.renewEdge(EDGE_B, clock.now() + 1000);
    assert.is(Number((await h.sql('SELECT count(*) AS n FROM device_sessions WHERE edge_id = $1', [EDGE_A]))[0].n), 0);
    assert.is(await r.renewEdge(EDGE_A, clock.now() + 1000), false, 'the crashed edge, back, records its sessions again');
    await r.dropEdge(EDGE_A);
    await r.dropEdge(EDGE_B);
  });

  test('sessions: malformed edge ids and times are refused', async ({ r }) => {
    for (const id of MALFORMED_IDS) {
      await rejects(r.renewEdge(any(id), START), 'VALIDATION_FAILED', 'edgeId');
      await rejects(r.recordSessions(any(id), [], []), 'VALIDATION_FAILED', 'edgeId');
    }
    await rejects(r.renewEdge(EDGE_A, -5), 'VALIDATION_FAILED', 'aliveUntil');
    await rejects(r.recordSessions(EDGE_A, [{ deviceId: MISSING, since: any('x') as unknown as number }], []), 'VALIDATION_FAILED', 'opened/0/at');
    await rejects(r.recordSessions(EDGE_A, [], any('x') as unknown as string[]), 'VALIDATION_FAILED', 'closed');
  });

  test('silent devices: longest silent first, never seen counted from creation, by pages, only the ground\'s', async ({ r, clock }) => {
    const { ground, devices } = await devicesOf(r, 5);
    await devicesOf(r, 2); // another ground's
    const created = devices[0].createdAt;
    // d0 never seen (silent since creation); d1 seen long ago; d2 seen recently; d3 seen at the cutoff; d4 never seen.
    const cutoff = created + 1_000_000;
    await r.recordActivity([
      { deviceId: devices[1].id, at: created + 500 },
      { deviceId: devices[2].id, at: cutoff + 1 },
      { deviceId: devices[3].id, at: cutoff },
    ]);
    clock.advance(1);
    const all = await r.listSilentDevices(ground.id, { silentSince: cutoff });
    const sinceOf = (i: number) => [created, created + 500, cutoff + 1, cutoff, devices[4].createdAt][i];
    const expected = [0, 1, 3, 4].sort((x, y) => sinceOf(x) - sinceOf(y) || (devices[x].id < devices[y].id ? -1 : 1)).map((i) => devices[i].id);
    assert.equal(all.map((d) => d.id), expected);
    const one = all.find((d) => d.id === devices[1].id)!;
    const { assets: _assets, ...device1 } = devices[1];
    assert.equal(one, { ...device1, lastSeenAt: created + 500, silentSince: created + 500 });
    assert.not.ok('lastSeenAt' in all.find((d) => d.id === devices[0].id)!, 'never seen: no lastSeenAt');

    const pages: string[] = [];
    let after: { silentSince: number; id: string } | undefined;
    for (;;) {
      const page = await r.listSilentDevices(ground.id, { silentSince: cutoff, limit: 3, after });
      pages.push(...page.slice(0, 2).map((d) => d.id));
      if (page.length <= 2) break;
      const last = page[1];
      after = { silentSince: last.silentSince, id: last.id };
    }
    assert.equal(pages, expected, 'pages of 2 (3 asked) cover the list once');
    assert.equal(await r.listSilentDevices(ground.id, { silentSince: created - 1 }), []);
    assert.equal(await r.listSilentDevices(MISSING, { silentSince: cutoff }), []);
    assert.equal(await r.listSilentDevices(any(null), { silentSince: cutoff }), []);
    await rejects(r.listSilentDevices(ground.id, { silentSince: -1 }), 'VALIDATION_FAILED', 'silentSince');
    await rejects(r.listSilentDevices(ground.id, { silentSince: cutoff, limit: 0 }), 'VALIDATION_FAILED', 'limit');
    await rejects(r.listSilentDevices(ground.id, { silentSince: cutoff, after: { silentSince: 1, id: 'x' } }), 'VALIDATION_FAILED', 'after.id');
  });

  return test;
}
