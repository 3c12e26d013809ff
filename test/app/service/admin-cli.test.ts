/**
 * The admin CLI finds the registry it is meant to change: it never starts a fresh registry in a data
 * dir that has none unless told to (`--init`), and it names the data dir it used on stderr, so
 * `--json` on stdout stays parseable. (Issue #10: run from another directory, it used to create
 * `./data` and print a token the running service did not know.)
 */
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { runAdmin, serveAdmin } from '../../support/adminCli.ts';
import { test, withEnv } from '../../support/suite.ts';
import { tempDir } from '../../support/tmp.ts';
import { dropSchema } from '../../support/postgresSchema.ts';

const tmp = tempDir('admin-cli');
const admin = (cwd: string, ...args: string[]) => runAdmin(cwd, args);

test.after(() => tmp.remove());

test('without a registry in the data dir it looks in, admin refuses, says where it looked and creates nothing', async () => {
  const cwd = join(tmp.dir, 'elsewhere');
  mkdirSync(cwd);
  const run = await admin(cwd, 'create-user', 'alice', '--json');
  assert.is.not(run.code, 0);
  assert.is(run.stdout, '');
  assert.ok(run.stderr.includes(`no registry in data dir ${join(cwd, 'data')}`), run.stderr);
  assert.match(run.stderr, /--data-dir/);
  assert.match(run.stderr, /--init/);
  assert.equal(readdirSync(cwd), [], 'no ./data created');
});

test('--init creates the registry; later commands open it and say so', async () => {
  const dataDir = join(tmp.dir, 'fresh');
  const created = await admin(tmp.dir, 'create-user', 'alice', '--json', '--data-dir', dataDir, '--init');
  assert.is(created.code, 0, created.stderr);
  const user = JSON.parse(created.stdout) as { id: string; token: string };
  assert.match(user.token, /^fsu_/);
  assert.ok(created.stderr.includes(`registry created (--init) in data dir ${dataDir}`), created.stderr);
  assert.ok(existsSync(join(dataDir, 'registry', 'PG_VERSION')));

  const next = await admin(tmp.dir, 'create-ground', 'home', '--user', user.id, '--json', '--data-dir', dataDir);
  assert.is(next.code, 0, next.stderr);
  assert.ok((JSON.parse(next.stdout) as { id: string }).id);
  assert.ok(next.stderr.includes(`no service running there; registry opened in data dir ${dataDir}`), next.stderr);
});

test('create-ground and add-member take --role (owner, editor by default); a bad role or the last owner demoted is refused', async () => {
  const dataDir = join(tmp.dir, 'roles');
  const json = (...args: string[]) => admin(tmp.dir, ...args, '--json', '--data-dir', dataDir);
  const ann = (await json('create-user', 'ann', '--init')).body as { id: string };
  const bob = (await json('create-user', 'bob')).body as { id: string };
  const cy = (await json('create-user', 'cy')).body as { id: string };
  const ground = await json('create-ground', 'home', '--user', ann.id);
  assert.is(ground.code, 0, ground.stderr);
  assert.is(ground.body!.role, 'owner');
  const watched = await json('create-ground', 'watched', '--user', bob.id, '--role', 'viewer');
  assert.is(watched.body!.role, 'viewer', watched.stderr);
  const groundId = String(ground.body!.id);
  assert.equal((await json('add-member', groundId, bob.id)).body, { role: 'editor', created: true });
  assert.equal((await json('add-member', groundId, cy.id, '--role', 'viewer')).body, { role: 'viewer', created: true });
  assert.equal((await json('add-member', groundId, cy.id, '--role', 'owner')).body, { role: 'owner', created: false });
  const bad = await json('add-member', groundId, bob.id, '--role', 'admin');
  assert.is.not(bad.code, 0);
  assert.match(bad.stderr, /VALIDATION_FAILED: role: must be one of viewer, editor, owner/);
  assert.is((await json('add-member', groundId, ann.id, '--role', 'viewer')).code, 0, 'cy is an owner too');
  const last = await json('add-member', groundId, cy.id, '--role', 'editor');
  assert.is.not(last.code, 0);
  assert.match(last.stderr, /CONFLICT: the last owner/);
  const registry = await createPgliteRegistry({ dir: join(dataDir, 'registry') });
  try {
    assert.equal((await registry.listMembers(groundId)).map((m) => [m.userId, m.role]), [[ann.id, 'viewer'], [bob.id, 'editor'], [cy.id, 'owner']]);
  } finally {
    await registry.close();
  }
});

test('with a service running on another data dir, the refusal names the data dir looked in; pointed at the service, admin says it found it', async () => {
  const serviceDir = join(tmp.dir, 'service-data');
  const service = await serveAdmin(serviceDir);
  const { registry } = service;
  try {
    const cwd = join(tmp.dir, 'other');
    mkdirSync(cwd);
    const refused = await admin(cwd, 'create-user', 'bob', '--json');
    assert.is.not(refused.code, 0);
    assert.ok(refused.stderr.includes(`no registry in data dir ${join(cwd, 'data')}`), refused.stderr);
    assert.ok(refused.stderr.includes(`no service running there (nothing on ${join(cwd, 'data', 'admin.sock')})`), refused.stderr);
    assert.equal(readdirSync(cwd), []);

    const found = await admin(cwd, 'create-user', 'bob', '--json', '--data-dir', serviceDir);
    assert.is(found.code, 0, found.stderr);
    assert.ok(found.stderr.includes(`running service found on ${join(serviceDir, 'admin.sock')} (data dir ${serviceDir})`), found.stderr);
    const bob = JSON.parse(found.stdout) as { id: string; token: string };
    assert.equal(await registry.authenticate(bob.token), { scope: 'user', subjectId: bob.id }, 'the service knows the token');
    assert.not.ok(existsSync(join(serviceDir, 'registry')), 'the CLI did not open a registry of its own');
  } finally {
    await service.close();
  }
});

withEnv('admin-cli on PostgreSQL', ['DATABASE_URL_TEST'], 'a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/postgres', ({ DATABASE_URL_TEST: url }) => {
  test('with DATABASE_URL, admin names the PostgreSQL database and schema on stderr, its password hidden', async () => {
    const schema = `admin_cli_test_${process.pid}`;
    const withPassword = new URL(url);
    withPassword.password = 'not-shown';
    try {
      const run = await admin(tmp.dir, 'create-user', 'carol', '--json', '--database-url', withPassword.toString(), '--database-schema', schema);
      assert.is(run.code, 0, run.stderr);
      assert.match((JSON.parse(run.stdout) as { token: string }).token, /^fsu_/);
      assert.match(run.stderr, new RegExp(`registry in PostgreSQL postgres://[^ ]*${withPassword.host}.* \\(schema ${schema}\\)`));
      assert.not.match(run.stderr, /not-shown/);
    } finally {
      await dropSchema(url!, schema);
    }
  });
});

test.run();
