/**
 * Retention of the grounds' audit logs (docs/grounds.md "Audit log"): AuditPruner over a real
 * registry (PGlite) deletes the entries older than its days and keeps the rest, on the injected
 * clock's schedule, idempotently and with two pruners at once; `--audit-retention-days` /
 * AUDIT_RETENTION_DAYS is read like the other settings (90 unset, bad values refused); and the
 * composed service's engine prunes its registry's log.
 */
import * as assert from 'uvu/assert';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { loadConfig } from '../../../app/loadConfig.ts';
import { AuditPruner, DEFAULT_AUDIT_RETENTION_DAYS } from '../../../engine/audit/AuditPruner.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { newId } from '../../../engine/kernel/ids.ts';
import type { AuditEntry } from '../../../engine/ports/registry.ts';
import { test } from '../../support/suite.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 29);
const tmp = tempDir('audit-retention');

const entry = (groundId: string, at: number, operation: string): AuditEntry =>
  ({ groundId, at, actor: { kind: 'user', id: newId() }, operation, result: { status: 200 } });

test.after(() => tmp.remove());

test('entries older than the retention go, the rest stay; a run again and two at once delete nothing twice', async () => {
  const clock = new SimulatedClock(NOW);
  const registry = await createPgliteRegistry({ clock });
  try {
    const g = newId();
    const ages = [200, 91, 90.5, 89, 1, 0];
    await registry.recordAudit(ages.map((age) => entry(g, NOW - age * DAY, `age-${String(age).replace('.', '_')}`)));
    const pruner = new AuditPruner({ log: registry, clock });
    assert.is(DEFAULT_AUDIT_RETENTION_DAYS, 90);
    assert.is(await pruner.prune(), 3);
    assert.equal((await registry.listAudit(g, {})).map((e) => e.operation), ['age-0', 'age-1', 'age-89']);
    assert.is(await pruner.prune(), 0, 'idempotent');
    const short = new AuditPruner({ log: registry, clock, retentionDays: 1 });
    const other = new AuditPruner({ log: registry, clock, retentionDays: 1 });
    const [a, b] = await Promise.all([short.prune(), other.prune()]);
    assert.is(a + b, 1, 'two engines pruning at once delete the entry once');
    assert.equal((await registry.listAudit(g, {})).map((e) => e.operation), ['age-0', 'age-1']);
  } finally {
    await registry.close();
  }
});

test('runs on the clock\'s schedule, within its first interval and at each one after; a failed run is told and retried', async () => {
  const clock = new SimulatedClock(NOW);
  const calls: number[] = [];
  const errors: FleetError[] = [];
  let fail = true;
  const pruner = new AuditPruner({
    clock, intervalMs: 60_000, retentionDays: 30, onError: (error) => errors.push(error),
    log: { async pruneAudit(olderThan) {
      calls.push(olderThan);
      if (fail) throw new FleetError('UNAVAILABLE', 'registry down');
      return 0;
    } },
  });
  pruner.start();
  clock.advance(60_000);
  await waitFor(() => errors.length === 1, 2000, 'the failed run');
  assert.is(calls.length, 1);
  assert.ok(calls[0] >= NOW - 30 * DAY && calls[0] <= NOW + 60_000 - 30 * DAY, 'the cutoff is 30 days before the run, within the first interval');
  fail = false;
  clock.advance(60_000);
  await waitFor(() => calls.length === 2, 2000, 'the next run');
  await pruner.stop();
  clock.advance(600_000);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.is(calls.length, 2, 'nothing after stop');
});

test('--audit-retention-days / AUDIT_RETENTION_DAYS: 90 unset, read from the flag or the environment, bad values refused', () => {
  assert.is(loadConfig({}, {}).auditRetentionDays, undefined);
  assert.is(loadConfig({ 'audit-retention-days': '' }, {}).auditRetentionDays, undefined, 'empty: unset, as every setting');
  assert.is(loadConfig({ 'audit-retention-days': '30' }, {}).auditRetentionDays, 30);
  assert.is(loadConfig({}, { AUDIT_RETENTION_DAYS: '400' }).auditRetentionDays, 400);
  for (const bad of ['0', '-1', '36501', '1.5', 'ninety', '９０']) {
    assert.throws(() => loadConfig({ 'audit-retention-days': bad }, {}), (error: unknown) => error instanceof FleetError && error.code === 'VALIDATION_FAILED', bad);
  }
});

test('the service\'s engine prunes its registry\'s audit log', async () => {
  const { service } = await startEmbeddedService({ dir: tmp.dir, retention: { sweepMs: 1000, auditDays: 2 } });
  try {
    const g = newId();
    const now = Date.now();
    await service.registry.recordAudit([entry(g, now - 3 * DAY, 'old'), entry(g, now - DAY, 'kept')]);
    await waitFor(async () => (await service.registry.listAudit(g, {})).length === 1, 10_000, 'the old entry pruned');
    assert.equal((await service.registry.listAudit(g, {})).map((e) => e.operation), ['kept']);
  } finally {
    await service.stop();
  }
});

test.run();
