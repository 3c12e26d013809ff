/**
 * The admin CLI's changes in the grounds' audit logs (docs/grounds.md "Audit log"), through the real
 * CLI: against a service's admin socket and against a registry opened directly. Each change of a
 * ground (create-ground, add-member, set-quota, remove-quota, quickstart) is recorded with the actor
 * kind `operator` and the OS user's name, its target and result, refusals of an existing ground
 * included (the last owner kept: 409, a bad limit: 422); commands that change no ground, and those
 * naming no ground that exists, write nothing. An operator name that is no login name is `unknown`.
 */
import * as assert from 'uvu/assert';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { callAdminSocket } from '../../../app/adminSocket.ts';
import { operatorName } from '../../../app/adminOperations.ts';
import type { ListedAuditEntry, Registry } from '../../../engine/ports/registry.ts';
import { runAdmin, serveAdmin } from '../../support/adminCli.ts';
import { test } from '../../support/suite.ts';
import { tempDir } from '../../support/tmp.ts';

const tmp = tempDir('admin-audit');
const me = operatorName(userInfo().username);
const admin = (args: string[]) => runAdmin(tmp.dir, [...args, '--json']);

const lines = (entries: ListedAuditEntry[]) => entries.map((e) => [e.operation, `${e.actor.kind}:${e.actor.id}`, e.targetId, e.result.status, e.result.code]);

test.after(() => tmp.remove());

test('through a running service: each change of a ground recorded as the operator, refusals of an existing ground too', async () => {
  const service = await serveAdmin(join(tmp.dir, 'service'));
  const { registry, run } = service;
  try {
    assert.match(me, /^[A-Za-z0-9._@-]+$/);
    const ann = await run('create-user', 'ann');
    const bob = await run('create-user', 'bob');
    const ground = await run('create-ground', 'home', '--user', String(ann.body!.id));
    assert.is(ground.code, 0, ground.stderr);
    const g = String(ground.body!.id);
    assert.is((await run('add-member', g, String(bob.body!.id), '--role', 'viewer')).code, 0);
    assert.match((await run('add-member', g, String(ann.body!.id), '--role', 'editor')).stderr, /CONFLICT/);
    assert.is((await run('set-quota', g, '--devices', '5')).code, 0);
    assert.match((await run('set-quota', g, '--devices', '0')).stderr, /VALIDATION_FAILED/);
    assert.is((await run('show-quota', g)).code, 0);
    assert.is((await run('remove-quota', g)).code, 0);
    assert.match((await run('set-quota', 'A'.repeat(22), '--devices', '3')).stderr, /NOT_FOUND/);
    assert.match((await run('add-member', "' OR 1=1 --", String(bob.body!.id))).stderr, /NOT_FOUND|VALIDATION_FAILED/);

    const operator = `operator:${me}`;
    assert.equal(lines(await registry.listAudit(g, {})), [
      ['remove-quota', operator, g, 200, undefined],
      ['set-quota', operator, g, 422, 'VALIDATION_FAILED'],
      ['set-quota', operator, g, 200, undefined],
      ['add-member', operator, String(ann.body!.id), 409, 'CONFLICT'],
      ['add-member', operator, String(bob.body!.id), 200, undefined],
      ['create-ground', operator, g, 200, undefined],
    ]);
    assert.equal(await registry.listAudit('A'.repeat(22), {}), [], 'no entry for a ground that does not exist');
    const { rows } = await registry.executor.query<{ n: unknown }>('SELECT count(*) AS n FROM ground_audit');
    assert.is(Number(rows[0].n), 6, 'nothing else written');
  } finally {
    await service.close();
  }
});

test('an operator name that is no login name is recorded as unknown', async () => {
  const service = await serveAdmin(join(tmp.dir, 'names'));
  const { registry, socketPath } = service;
  try {
    const user = await registry.createUser({ name: 'ann' });
    const g = await registry.createGround({ name: 'home', userId: user.entity.id });
    const names = ['root; DROP TABLE ground_audit', 'x'.repeat(65), '', '../../etc/passwd', 'admin\ttab', 'ops-1'];
    for (const name of names) {
      const reply = await callAdminSocket(socketPath, 'set-quota', { groundId: g.id, devices: '7' }, name);
      assert.is(reply?.status, 200, JSON.stringify(reply?.body));
    }
    const noHeader = await callAdminSocket(socketPath, 'remove-quota', { groundId: g.id });
    assert.is(noHeader?.status, 200);
    assert.equal((await registry.listAudit(g.id, {})).map((e) => e.actor.id), ['unknown', 'ops-1', 'unknown', 'unknown', 'unknown', 'unknown', 'unknown']);
  } finally {
    await service.close();
  }
});

test('with no service running (the registry opened directly): the same entries, quickstart included', async () => {
  const dataDir = join(tmp.dir, 'direct');
  const ann = await admin(['create-user', 'ann', '--data-dir', dataDir, '--init']);
  assert.is(ann.code, 0, ann.stderr);
  const ground = await admin(['create-ground', 'home', '--user', String(ann.body!.id), '--data-dir', dataDir]);
  const g = String(ground.body!.id);
  assert.is((await admin(['set-quota', g, '--retention-days', '30', '--data-dir', dataDir])).code, 0);
  const quick = await admin(['quickstart', 'demo', '--data-dir', dataDir]);
  assert.is(quick.code, 0, quick.stderr);
  let registry: Registry | undefined;
  try {
    registry = await createPgliteRegistry({ dir: join(dataDir, 'registry'), create: false });
    assert.equal(lines(await registry.listAudit(g, {})), [
      ['set-quota', `operator:${me}`, g, 200, undefined],
      ['create-ground', `operator:${me}`, g, 200, undefined],
    ]);
    const q = String(quick.body!.groundId);
    assert.equal(lines(await registry.listAudit(q, {})), [['quickstart', `operator:${me}`, q, 200, undefined]]);
  } finally {
    await registry?.close();
  }
});

test.run();
