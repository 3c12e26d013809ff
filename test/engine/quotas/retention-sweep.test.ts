/**
 * RetentionSweep (engine/quotas/RetentionSweep.ts) over a real registry (PGlite) and chDB: each
 * ground with a retention loses its devices' states older than its days, others keep theirs; two
 * engines sweeping at once, or one sweeping again, leave the same states; the schedule runs on the
 * injected clock and a failing sweep is reported and retried at the next interval.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { test } from '../../support/suite.ts';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { RetentionSweep } from '../../../engine/quotas/RetentionSweep.ts';
import type { StateRow } from '../../../schemas/messages.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2025, 5, 1);

test('grounds with a retention lose states older than their days; two sweeps at once and a sweep again change nothing more', async () => {
  const clock = new SimulatedClock(NOW);
  const registry = await createPgliteRegistry({ clock });
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-retention-'));
  const store = createChdbStore({ dir });
  try {
    await store.init();
    const user = await registry.createUser({ name: 'ann' });
    const short = await registry.createGround({ name: 'short', userId: user.entity.id });
    const long = await registry.createGround({ name: 'long', userId: user.entity.id });
    const none = await registry.createGround({ name: 'none', userId: user.entity.id });
    await registry.setQuota(short.id, { retentionDays: 7 });
    await registry.setQuota(long.id, { retentionDays: 90, devices: 10 });
    const devices: Record<string, string> = {};
    for (const [name, g] of [['s1', short], ['s2', short], ['l1', long], ['n1', none]] as const) devices[name] = (await registry.createDevice({ groundId: g.id, name })).device.id;
    const rows: StateRow[] = [];
    for (const deviceId of Object.values(devices)) {
      for (const age of [1, 10, 100]) rows.push({ deviceId, asset: 't', ts: NOW - age * DAY, receivedAt: NOW, value: age, uplinkId: `u${age}` });
    }
    await store.append(rows);
    const sweeps = [1, 2].map(() => new RetentionSweep({ registry, retention: store.retention, clock }));
    const reports = await Promise.all(sweeps.map((s) => s.sweep()));
    assert.equal(reports[0], { grounds: 2, devices: 3 });
    const ages = async (name: string) => (await store.history({ deviceId: devices[name], asset: 't', from: 0, to: NOW + DAY })).map((s) => s.value).sort((a, b) => Number(a) - Number(b));
    assert.equal(await ages('s1'), [1], '7 days');
    assert.equal(await ages('s2'), [1]);
    assert.equal(await ages('l1'), [1, 10], '90 days');
    assert.equal(await ages('n1'), [1, 10, 100], 'no retention');
    await sweeps[0].sweep();
    assert.equal(await ages('l1'), [1, 10]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    await registry.close();
  }
});

test('the schedule: first sweep within an interval, then one per interval on the clock; a failure is reported and the next one runs', async () => {
  const clock = new SimulatedClock(NOW);
  let calls = 0;
  const errors: FleetError[] = [];
  const sweep = new RetentionSweep({
    registry: {
      listQuotas: async () => {
        calls++;
        if (calls === 1) throw new FleetError('UNAVAILABLE', 'registry away');
        return [];
      },
      listDevices: async () => [],
    },
    retention: { expireStates: async () => undefined, storedOf: async () => ({ rows: 0, compressedBytes: 0 }) },
    clock,
    intervalMs: 60_000,
    onError: (error) => errors.push(error),
  });
  sweep.start();
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  clock.advance(60_000);
  await settle();
  assert.is(calls, 1);
  assert.equal(errors.map((e) => e.code), ['UNAVAILABLE']);
  clock.advance(60_000);
  await settle();
  assert.is(calls, 2);
  await sweep.stop();
  clock.advance(600_000);
  await settle();
  assert.is(calls, 2, 'stopped');
});

test.run();
