/**
 * openPorts with ports a caller opened already (app/openPorts.ts GivenPorts): a given registry is
 * made to publish on the given changes, the process's lookups follow them, and neither those nor a
 * given store are closed by the ports' close, nor when opening the rest fails; what openPorts
 * opened itself (the log) it closes.
 */
import { writeFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { openPorts } from '../../../app/openPorts.ts';
import { createLocalLog } from '../../../adapters/local-log/LocalLog.ts';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { InProcessRegistryChanges } from '../../../adapters/registry-changes/InProcessRegistryChanges.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { silentLogger } from '../../../engine/kernel/logger.ts';
import type { Registry } from '../../../engine/ports/registry.ts';
import type { RegistryChange } from '../../../engine/ports/registryChanges.ts';
import { loopbackConfig } from '../../support/loopbackConfig.ts';
import { memoryServiceStore } from '../../support/memoryServiceStore.ts';
import { suite } from '../../support/suite.ts';
import { tempDir } from '../../support/tmp.ts';

const test = suite<{ raw: Registry }>('openPorts: given ports', {} as never);
test.before(async (ctx) => {
  ctx.raw = await createPgliteRegistry();
});
test.after(async (ctx) => {
  await ctx.raw.close();
});

test('a given registry publishes on the given changes; the lookups drop what a change touches; close leaves the given ports open', async ({ raw }) => {
  const tmp = tempDir('open-ports');
  const changes = new InProcessRegistryChanges();
  const heard: RegistryChange[] = [];
  changes.subscribe((change) => heard.push(change));
  const store = memoryServiceStore();
  let storeClosed = false;
  store.close = async () => { storeClosed = true; };
  try {
    const ports = await openPorts({ config: loopbackConfig(`${tmp.dir}/data`), clock: new SimulatedClock(0), logger: silentLogger, given: { registry: raw, changes, store } });
    assert.is(ports.store, store);
    assert.is(ports.changes, changes);
    const user = await ports.registry.createUser({ name: 'u' });
    const ground = await ports.registry.createGround({ name: 'g', userId: user.entity.id });
    const created = await ports.registry.createDevice({ groundId: ground.id, name: 'd', assets: [{ name: 't', is: 'sensor', profile: {} }] });
    assert.ok(heard.some((c) => c.kind === 'device-changed' && c.deviceId === created.device.id), 'the given registry publishes');
    assert.is((await ports.lookups.device(created.device.id))?.id, created.device.id);
    const consumed: RegistryChange[] = [];
    ports.registryChanges.add((change) => consumed.push(change));
    assert.ok(await ports.registry.deleteDevice(created.device.id));
    assert.is(await ports.lookups.device(created.device.id), undefined, 'the cached device is dropped at once');
    assert.ok(consumed.some((c) => c.kind === 'device-deleted'));
    await ports.close();
    assert.not.ok(storeClosed, 'a given store is not closed');
    assert.ok(await raw.getUser(user.entity.id), 'a given registry stays open');
    const before = heard.length;
    await changes.publish({ kind: 'resync' });
    assert.is(heard.length, before + 1, 'given changes stay open');
    // The log it opened itself is closed: its directory can be opened again.
    await createLocalLog({ dir: `${tmp.dir}/data/log` }).close();
  } finally {
    await changes.close();
    tmp.remove();
  }
});

test('opening the rest fails (the data dir is a file): the given registry and changes stay open', async ({ raw }) => {
  const tmp = tempDir('open-ports');
  const changes = new InProcessRegistryChanges();
  try {
    const file = `${tmp.dir}/not-a-dir`;
    writeFileSync(file, 'x');
    await openPorts({ config: loopbackConfig(file), clock: new SimulatedClock(0), logger: silentLogger, given: { registry: raw, changes, store: memoryServiceStore() } })
      .then(() => assert.unreachable('opened on a file'), (error: unknown) => assert.ok(error instanceof Error));
    assert.ok(await raw.createUser({ name: 'still open' }));
    await changes.publish({ kind: 'resync' });
  } finally {
    await changes.close();
    tmp.remove();
  }
});

test.run();
