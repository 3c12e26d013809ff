import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { addMember, createGround, createPartner, createUser, revokeToken } from '../../../engine/admin/adminActions.ts';
import type { SqlRegistry } from '../../../adapters/sql-registry/createSqlRegistry.ts';
import { rejects } from '../../contracts/registry.contract.ts';

let registry: SqlRegistry;

test.before(async () => {
  registry = await createPgliteRegistry();
});
test.after(async () => {
  await registry.close();
});

/** Plain JSON: survives a round trip unchanged and has no class behind it. */
function assertPlainJson(value: unknown): void {
  assert.equal(JSON.parse(JSON.stringify(value)), value);
  assert.is(Object.getPrototypeOf(value), Object.prototype);
}

test('createPartner and createUser return an id and a working token', async () => {
  const partner = await createPartner(registry, 'Acme');
  assertPlainJson(partner);
  assert.equal(Object.keys(partner).sort(), ['id', 'token']);
  assert.match(partner.token, /^fsp_/);
  assert.equal(await registry.authenticate(partner.token), { scope: 'partner', subjectId: partner.id });
  const user = await createUser(registry, 'Ann');
  assertPlainJson(user);
  assert.match(user.token, /^fsu_/);
  assert.equal(await registry.authenticate(user.token), { scope: 'user', subjectId: user.id });
  assert.is((await registry.getUser(user.id))?.name, 'Ann');
});

test('createGround makes the user its owner; addMember grants a role (editor by default) and is idempotent', async () => {
  const ann = await createUser(registry, 'Ann');
  const bob = await createUser(registry, 'Bob');
  const ground = await createGround(registry, 'Farm', ann.id);
  assertPlainJson(ground);
  assert.equal(Object.keys(ground).sort(), ['id', 'role']);
  assert.is(ground.role, 'owner');
  assert.is(await registry.isMember(ground.id, ann.id), true);
  assert.is(await registry.isMember(ground.id, bob.id), false);
  assert.equal(await addMember(registry, ground.id, bob.id), { role: 'editor', created: true });
  assert.equal(await addMember(registry, ground.id, bob.id), { role: 'editor', created: false });
  assert.is(await registry.isMember(ground.id, bob.id), true);
  assert.equal(await addMember(registry, ground.id, bob.id, 'viewer'), { role: 'viewer', created: false }, 'a member given another role');
});

test('revokeToken reports whether a live token was revoked', async () => {
  const user = await createUser(registry, 'Revoked');
  assert.equal(await revokeToken(registry, user.token), { revoked: true });
  assert.equal(await revokeToken(registry, user.token), { revoked: false });
  assert.is(await registry.authenticate(user.token), undefined);
  assert.equal(await revokeToken(registry, 'not-a-token'), { revoked: false });
  assert.equal(await revokeToken(registry, ''), { revoked: false });
});

test('bad input fails with stable codes and creates nothing', async () => {
  const user = await createUser(registry, 'Owner');
  const ground = await createGround(registry, 'G', user.id);
  for (const name of ['', 'x'.repeat(129), 'bell\u0007', 'nul\u0000']) {
    await rejects(createPartner(registry, name), 'VALIDATION_FAILED', 'name');
    await rejects(createUser(registry, name), 'VALIDATION_FAILED', 'name');
    await rejects(createGround(registry, name, user.id), 'VALIDATION_FAILED', 'name');
  }
  await rejects(createGround(registry, 'G2', 'not-an-id'), 'VALIDATION_FAILED', 'userId');
  await rejects(createGround(registry, 'G2', 'A'.repeat(22)), 'NOT_FOUND', 'userId');
  await rejects(addMember(registry, ground.id, 'A'.repeat(22)), 'NOT_FOUND', 'userId');
  await rejects(addMember(registry, 'A'.repeat(22), user.id), 'NOT_FOUND', 'groundId');
  await rejects(addMember(registry, "'; DROP TABLE memberships; --", user.id), 'VALIDATION_FAILED', 'groundId');
  const grounds = await registry.executor.query<{ n: number }>(`SELECT count(*)::int AS n FROM grounds WHERE name = 'G2'`);
  assert.is(grounds.rows[0].n, 0);
});

test.run();
