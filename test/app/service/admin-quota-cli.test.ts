/**
 * `fleetstream admin set-quota | show-quota | remove-quota` (docs/grounds.md "Quotas") through the
 * real CLI, against a service's admin socket and against a registry opened directly: limits set,
 * cleared with `none`, shown and removed; hostile limits (zero, negative, a fraction, an exponent,
 * huge, non-numeric, other digits, empty) and an unknown or malformed ground refused with a clear
 * error and nothing changed; the configuration's defaults (QUOTA_*) given to a new ground. The
 * changes are in the ground's audit log (test/app/service/admin-audit.test.ts has the rest).
 */
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { publishingRegistry } from '../../../engine/access/publishingRegistry.ts';
import { InProcessRegistryChanges } from '../../../adapters/registry-changes/InProcessRegistryChanges.ts';
import type { RegistryChange } from '../../../engine/ports/registryChanges.ts';
import { runAdmin, serveAdmin } from '../../support/adminCli.ts';
import { test } from '../../support/suite.ts';
import { tempDir } from '../../support/tmp.ts';

const tmp = tempDir('admin-quota');
const admin = (args: string[], env: Record<string, string | undefined> = {}) => runAdmin(tmp.dir, [...args, '--json'], env);

test.after(() => tmp.remove());

test('set-quota, show-quota, remove-quota through a running service: limits set, one cleared with none, all removed; each change announced', async () => {
  const changes = new InProcessRegistryChanges();
  const heard: RegistryChange[] = [];
  changes.subscribe((change) => { heard.push(change); });
  const service = await serveAdmin(join(tmp.dir, 'service'), publishingRegistry(await createPgliteRegistry(), changes));
  const { registry, run } = service;
  try {
    const user = await registry.createUser({ name: 'ann' });
    const g = await registry.createGround({ name: 'home', userId: user.entity.id });
    assert.equal((await run('show-quota', g.id)).body, { groundId: g.id, devices: null, statesPerSecond: null, retentionDays: null });
    const set = await run('set-quota', g.id, '--devices', '5', '--states-per-second', '200', '--retention-days', '30');
    assert.is(set.code, 0, set.stderr);
    assert.equal(set.body, { groundId: g.id, devices: 5, statesPerSecond: 200, retentionDays: 30 });
    assert.equal((await run('set-quota', g.id, '--devices', 'none')).body, { groundId: g.id, devices: null, statesPerSecond: 200, retentionDays: 30 });
    assert.equal((await registry.getQuota(g.id))?.statesPerSecond, 200, 'in the registry');
    assert.equal(heard.filter((c) => c.kind === 'quota-changed'), [{ kind: 'quota-changed', groundId: g.id }, { kind: 'quota-changed', groundId: g.id }]);
    assert.equal((await run('remove-quota', g.id)).body, { groundId: g.id, removed: true });
    assert.equal((await run('remove-quota', g.id)).body, { groundId: g.id, removed: false });
    assert.is(await registry.getQuota(g.id), undefined);
    // Each change in the ground's audit log, as the operator; show-quota changes nothing.
    assert.equal((await registry.listAudit(g.id, {})).map((e) => [e.operation, e.actor.kind, e.targetId, e.result.status]), [
      ['remove-quota', 'operator', g.id, 200], ['remove-quota', 'operator', g.id, 200], ['set-quota', 'operator', g.id, 200], ['set-quota', 'operator', g.id, 200],
    ]);
  } finally {
    await service.close();
  }
});

test('hostile limits and grounds: refused with the option named, nothing set', async () => {
  const service = await serveAdmin(join(tmp.dir, 'hostile'));
  const { registry, run } = service;
  try {
    const user = await registry.createUser({ name: 'ann' });
    const g = await registry.createGround({ name: 'home', userId: user.entity.id });
    const cases: [string[], RegExp][] = [
      [['--devices=0'], /VALIDATION_FAILED: --devices: at least 1/],
      [['--devices=-3'], /VALIDATION_FAILED: --devices: a whole number/],
      [['--states-per-second', '2.5'], /VALIDATION_FAILED: --states-per-second: a whole number/],
      [['--states-per-second', '1e3'], /VALIDATION_FAILED: --states-per-second: a whole number/],
      [['--states-per-second', '1000001'], /VALIDATION_FAILED: --states-per-second: at most 1000000/],
      [['--retention-days', '99999999999999999999'], /VALIDATION_FAILED: --retention-days: a whole number/],
      [['--retention-days', '36501'], /VALIDATION_FAILED: --retention-days: at most 36500/],
      [['--devices', 'ten'], /VALIDATION_FAILED: --devices: a whole number/],
      [['--devices', '５'], /VALIDATION_FAILED: --devices: a whole number/],
      [['--devices', ' 5'], /VALIDATION_FAILED: --devices: a whole number/],
      [['--devices', '0x10'], /VALIDATION_FAILED: --devices: a whole number/],
      [['--devices='], /VALIDATION_FAILED: missing devices/],
      [[], /VALIDATION_FAILED: set-quota needs at least one of --devices/],
    ];
    for (const [options, expected] of cases) {
      const refused = await run('set-quota', g.id, ...options);
      assert.is.not(refused.code, 0, options.join(' '));
      assert.match(refused.stderr, expected, `${options.join(' ')}: ${refused.stderr}`);
    }
    const unknown = await run('set-quota', 'A'.repeat(22), '--devices', '3');
    assert.match(unknown.stderr, /NOT_FOUND: no ground A{22}/);
    assert.match((await run('show-quota', 'A'.repeat(22))).stderr, /NOT_FOUND/);
    assert.match((await run('remove-quota', "' OR 1=1 --")).stderr, /NOT_FOUND/);
    assert.match((await run('set-quota', '../../etc', '--devices', '3')).stderr, /NOT_FOUND|VALIDATION_FAILED/);
    assert.is(await registry.getQuota(g.id), undefined, 'nothing refused set anything');
  } finally {
    await service.close();
  }
});

test('the configuration\'s defaults (QUOTA_DEVICES, --quota-states-per-second) are a new ground\'s quota', async () => {
  const dataDir = join(tmp.dir, 'defaults');
  const env = { QUOTA_DEVICES: '2' };
  const user = await admin(['create-user', 'ann', '--data-dir', dataDir, '--init'], env);
  assert.is(user.code, 0, user.stderr);
  const ground = await admin(['create-ground', 'home', '--user', String(user.body!.id), '--data-dir', dataDir, '--quota-states-per-second', '50'], env);
  assert.is(ground.code, 0, ground.stderr);
  const shown = await admin(['show-quota', String(ground.body!.id), '--data-dir', dataDir]);
  assert.equal(shown.body, { groundId: ground.body!.id, devices: 2, statesPerSecond: 50, retentionDays: null });
  const bad = await admin(['create-ground', 'x', '--user', String(user.body!.id), '--data-dir', dataDir], { QUOTA_DEVICES: '-1' });
  assert.match(bad.stderr, /VALIDATION_FAILED: invalid configuration: \/quotas\/devices/);
});

test.run();
