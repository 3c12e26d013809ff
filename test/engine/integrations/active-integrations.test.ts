/**
 * Whether topic `events` is wanted on the local log (engine/integrations/ActiveIntegrations.ts): yes
 * until the registry first answers, then while it has an integration (active or disabled); yes from the moment
 * an integration change is heard until the registry is asked again, an older answer arriving late
 * never overriding a newer one; yes while the registry cannot be asked, asked again until it can.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { ActiveIntegrations } from '../../../engine/integrations/ActiveIntegrations.ts';
import type { RegistryChange } from '../../../engine/ports/registryChanges.ts';

/** A registry whose answers the test hands out one by one. */
function controlledRegistry() {
  const asked: Array<{ resolve(count: number): void; reject(error: Error): void }> = [];
  return {
    asked,
    integrationCount: () => new Promise<number>((resolve, reject) => asked.push({ resolve, reject })),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const changed: RegistryChange = { kind: 'integration-changed', integrationId: 'i0', groundId: 'g' };
const silent = { warn: () => undefined };

test('yes before the first answer; then as the registry says', async () => {
  const registry = controlledRegistry();
  const active = new ActiveIntegrations({ registry, clock: new SimulatedClock(0), logger: silent });
  assert.ok(active.any, 'before start');
  const started = active.start();
  assert.ok(active.any, 'while asked');
  registry.asked[0].resolve(0);
  await started;
  assert.not.ok(active.any, 'none active');
  active.changed(changed);
  assert.ok(active.any, 'at once, when a change is heard');
  registry.asked[1].resolve(1);
  await settle();
  assert.ok(active.any, 'one active');
  active.changed({ kind: 'integration-deleted', integrationId: 'i0', groundId: 'g' });
  registry.asked[2].resolve(0);
  await settle();
  assert.not.ok(active.any, 'deleted');
  active.changed({ kind: 'device-deleted', deviceId: 'd', groundId: 'g' } as unknown as RegistryChange);
  assert.is(registry.asked.length, 3, 'other changes are not its business');
  assert.not.ok(active.any);
});

test('an older answer arriving after a newer one is ignored', async () => {
  const registry = controlledRegistry();
  const active = new ActiveIntegrations({ registry, clock: new SimulatedClock(0), logger: silent });
  const started = active.start();
  registry.asked[0].resolve(0);
  await started;
  active.changed(changed);
  active.changed(changed);
  registry.asked[2].resolve(2);
  await settle();
  assert.ok(active.any, 'the newer answer: two active');
  registry.asked[1].resolve(0);
  await settle();
  assert.ok(active.any, 'the older answer (none) does not undo it');
});

test('a registry that cannot answer: yes, and asked again until it does', async () => {
  const registry = controlledRegistry();
  const clock = new SimulatedClock(0);
  const warnings: string[] = [];
  const active = new ActiveIntegrations({ registry, clock, logger: { warn: (message: string) => warnings.push(message) } });
  const started = active.start();
  registry.asked[0].reject(new Error('registry away'));
  await started;
  assert.ok(active.any, 'unknown counts as yes');
  assert.is(warnings.length, 1);
  clock.advance(5000);
  await settle();
  assert.is(registry.asked.length, 2, 'asked again');
  registry.asked[1].resolve(0);
  await settle();
  assert.not.ok(active.any);
  active.stop();
});

test.run();
