/**
 * Contract of the usage port (engine/ports/usageRegistry.ts): counts added by device are found
 * under the devices' grounds and days; today and this month read apart; several flushes add up;
 * devices deleted meanwhile and grounds of others are not counted; concurrent flushes both count;
 * hostile entries refused before any query. Runs on the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { FleetRegistry, GroundRegistry, PrincipalRegistry, UsageRegistry } from '../../engine/ports/registry.ts';
import { dayOf, monthStartOf } from '../../engine/ports/usageRegistry.ts';
import { any, MALFORMED_IDS, ownedGround, registrySuite, rejects, type RegistryFactory } from './registry.contract.ts';

type R = UsageRegistry & FleetRegistry & PrincipalRegistry & GroundRegistry;

const TODAY = dayOf(Date.UTC(2026, 10, 28, 15));
const MONTH = monthStartOf(TODAY);

export function usageContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<R>(`usage contract: ${name}`, factory);

  test('counts by device land on their grounds and days; today and this month apart; flushes add up', async ({ r }) => {
    const { ground: g } = await ownedGround(r, 'g');
    const { ground: other } = await ownedGround(r, 'other');
    const device = async (groundId: string, name: string) => (await r.createDevice({ groundId, name, assets: [] })).device.id;
    const [a, b, c] = [await device(g.id, 'a'), await device(g.id, 'b'), await device(other.id, 'c')];
    assert.is(MONTH, dayOf(Date.UTC(2026, 10, 1)));
    assert.equal(await r.usageOf(g.id, TODAY, MONTH), { statesToday: 0, statesThisMonth: 0, commandsToday: 0, commandsThisMonth: 0 });
    await r.recordUsage([
      { deviceId: a, day: TODAY, states: 10, commands: 1 },
      { deviceId: b, day: TODAY, states: 5, commands: 0 },
      { deviceId: a, day: TODAY - 3, states: 7, commands: 2 },
      { deviceId: a, day: MONTH - 1, states: 1000, commands: 1000 },
      { deviceId: c, day: TODAY, states: 99, commands: 9 },
    ]);
    await r.recordUsage([{ deviceId: b, day: TODAY, states: 1, commands: 1 }, { deviceId: a, day: TODAY, states: 0, commands: 0 }]);
    assert.equal(await r.usageOf(g.id, TODAY, MONTH), { statesToday: 16, statesThisMonth: 23, commandsToday: 2, commandsThisMonth: 4 });
    assert.equal(await r.usageOf(other.id, TODAY, MONTH), { statesToday: 99, statesThisMonth: 99, commandsToday: 9, commandsThisMonth: 9 });
    await Promise.all([1, 2, 3, 4].map(() => r.recordUsage([{ deviceId: a, day: TODAY, states: 1, commands: 0 }])));
    assert.is((await r.usageOf(g.id, TODAY, MONTH)).statesToday, 20, 'concurrent flushes all count');
  });

  test('a device deleted meanwhile is skipped; a deleted ground takes its usage; malformed input refused', async ({ r }) => {
    const { ground: g } = await ownedGround(r, 'g');
    const gone = (await r.createDevice({ groundId: g.id, name: 'gone', assets: [] })).device.id;
    const kept = (await r.createDevice({ groundId: g.id, name: 'kept', assets: [] })).device.id;
    await r.deleteDevice(gone);
    await r.recordUsage([{ deviceId: gone, day: TODAY, states: 5, commands: 5 }, { deviceId: kept, day: TODAY, states: 1, commands: 0 }]);
    assert.equal(await r.usageOf(g.id, TODAY, MONTH), { statesToday: 1, statesThisMonth: 1, commandsToday: 0, commandsThisMonth: 0 });
    await r.recordUsage([]);
    for (const bad of [
      [{ deviceId: 'not an id', day: TODAY, states: 1, commands: 0 }],
      [{ deviceId: kept, day: -1, states: 1, commands: 0 }],
      [{ deviceId: kept, day: 1.5, states: 1, commands: 0 }],
      [{ deviceId: kept, day: TODAY, states: -1, commands: 0 }],
      [{ deviceId: kept, day: TODAY, states: Number.NaN, commands: 0 }],
      [{ deviceId: kept, day: TODAY, states: 1, commands: '1' }],
      [null],
      'entries',
    ]) await rejects(r.recordUsage(bad as never), 'VALIDATION_FAILED');
    await rejects(r.usageOf(g.id, 'today' as never, MONTH), 'VALIDATION_FAILED', 'today');
    for (const bad of MALFORMED_IDS) assert.is((await r.usageOf(any(bad), TODAY, MONTH)).statesToday, 0);
    assert.ok(await r.deleteGround(g.id, { force: true }));
    assert.equal(await r.usageOf(g.id, TODAY, MONTH), { statesToday: 0, statesThisMonth: 0, commandsToday: 0, commandsThisMonth: 0 });
  });

  return test;
}
