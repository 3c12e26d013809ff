/**
 * Contract of the principals port (engine/ports/principalRegistry.ts): partners, users and their
 * bearer tokens, stored as hashes only. Runs on the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { FleetRegistry, PrincipalRegistry } from '../../engine/ports/registry.ts';
import { any, ID_RE, MALFORMED_IDS, ownedGround, registrySuite, rejects, sha256, START, type RegistryFactory } from './registry.contract.ts';

export function principalsContract(name: string, factory: RegistryFactory) {
  // Grounds and devices only to hold device tokens (and ground names among the names checked).
  const test = registrySuite<PrincipalRegistry & Pick<FleetRegistry, 'createGround' | 'createDevice'>>(`principals contract: ${name}`, factory);

  test('partners and users: created with a scoped token, read back, unknown ids absent', async ({ r, clock }) => {
    clock.advance(5);
    const p = await r.createPartner({ name: 'Acme Sensors' });
    assert.ok(ID_RE.test(p.entity.id));
    assert.equal(p.entity, { id: p.entity.id, name: 'Acme Sensors', createdAt: START + 5 });
    assert.match(p.token, /^fsp_[0-9A-Za-z]{43}$/);
    assert.equal(await r.getPartner(p.entity.id), p.entity);
    const u = await r.createUser({ name: 'Ann' });
    assert.match(u.token, /^fsu_[0-9A-Za-z]{43}$/);
    assert.equal(await r.getUser(u.entity.id), u.entity);
    assert.is.not(p.entity.id, u.entity.id);
    assert.is(await r.getPartner(u.entity.id), undefined);
    assert.is(await r.getUser(p.entity.id), undefined);
    assert.equal(await r.authenticate(p.token), { scope: 'partner', subjectId: p.entity.id });
    assert.equal(await r.authenticate(u.token), { scope: 'user', subjectId: u.entity.id });
  });

  test('names are validated before anything is stored', async ({ r, h }) => {
    const before = await h.sql('SELECT count(*)::int AS n FROM users');
    for (const bad of ['', 'x'.repeat(129), 'a\u0000b', 'line\nbreak', 'tab\t', 7, null, undefined]) {
      await rejects(r.createUser({ name: any(bad) }), 'VALIDATION_FAILED', 'name');
      await rejects(r.createPartner({ name: any(bad) }), 'VALIDATION_FAILED', 'name');
      await rejects(r.createGround({ name: any(bad) }), 'VALIDATION_FAILED', 'name');
    }
    await rejects(r.createUser(undefined as never), 'VALIDATION_FAILED', 'name');
    assert.equal(await h.sql('SELECT count(*)::int AS n FROM users'), before);
    const odd = await r.createUser({ name: "Robert'); DROP TABLE users;-- ünïcødé ✓" });
    assert.is((await r.getUser(odd.entity.id))?.name, "Robert'); DROP TABLE users;-- ünïcødé ✓");
  });

  test('tokens: only a SHA-256 hash is stored, never the plaintext', async ({ r, h }) => {
    const p = await r.createPartner({ name: 'p' });
    const { ground: g } = await ownedGround(r);
    const d = await r.createDevice({ groundId: g.id, name: 'hashed' });
    const rows = await h.sql('SELECT * FROM tokens');
    const dump = JSON.stringify(rows);
    for (const token of [p.token, d.token]) {
      assert.not.ok(dump.includes(token), 'plaintext token in tokens table');
      assert.not.ok(dump.includes(token.slice(4)), 'token secret in tokens table');
      const row = rows.find((x) => x.hash === sha256(token));
      assert.ok(row, 'row keyed by sha256(token)');
    }
    const deviceRow = rows.find((x) => x.hash === sha256(d.token))!;
    assert.is(deviceRow.scope, 'device');
    assert.is(deviceRow.subject_id, d.device.id);
    assert.is(deviceRow.revoked_at, null);
    // No other table holds it either.
    const everything = JSON.stringify(await h.sql('SELECT d.*, a.* FROM devices d LEFT JOIN assets a ON a.device_id = d.id'));
    assert.not.ok(everything.includes(d.token.slice(4)));
  });

  test('authenticate: malformed, unknown and tampered tokens are refused', async ({ r }) => {
    const u = await r.createUser({ name: 'u' });
    const secret = u.token.slice(4);
    for (const bad of ['', 'Bearer ' + u.token, u.token + 'x', u.token.slice(0, -1), `fsx_${secret}`, `fsd_${secret}`, `fsp_${secret}`, "fsu_' OR 1=1 --", u.token.toUpperCase(), `fsu_${'A'.repeat(43)}`, 42, null, undefined, {}]) {
      assert.is(await r.authenticate(any(bad)), undefined, `token ${String(bad)}`);
    }
    assert.equal(await r.authenticate(u.token), { scope: 'user', subjectId: u.entity.id });
  });

  test('revocation: a revoked token stops working, other tokens of the subject keep working', async ({ r, h, clock }) => {
    const u = await r.createUser({ name: 'rotating' });
    const second = await r.issueToken('user', u.entity.id);
    assert.match(second, /^fsu_/);
    assert.is.not(second, u.token);
    clock.advance(1000);
    assert.is(await r.revokeToken(u.token), true);
    assert.is(await r.revokeToken(u.token), false);
    assert.is(await r.authenticate(u.token), undefined);
    assert.equal(await r.authenticate(second), { scope: 'user', subjectId: u.entity.id });
    const [row] = await h.sql('SELECT revoked_at FROM tokens WHERE hash = $1', [sha256(u.token)]);
    assert.is(Number(row.revoked_at), clock.now());
    assert.is(await r.revokeToken(`fsu_${'B'.repeat(43)}`), false);
    assert.is(await r.revokeToken('garbage'), false);
    assert.is(await r.revokeToken(any(undefined)), false);
  });

  test('issueToken: subject must exist, scope and id are validated', async ({ r }) => {
    const p = await r.createPartner({ name: 'p' });
    const { ground: g } = await ownedGround(r);
    const d = await r.createDevice({ groundId: g.id, name: 'tok' });
    const t = await r.issueToken('device', d.device.id);
    assert.equal(await r.authenticate(t), { scope: 'device', subjectId: d.device.id });
    await rejects(r.issueToken('user', p.entity.id), 'NOT_FOUND', 'subjectId');
    await rejects(r.issueToken('device', p.entity.id), 'NOT_FOUND', 'subjectId');
    await rejects(r.issueToken(any('admin') as never, p.entity.id), 'VALIDATION_FAILED', 'scope');
    for (const bad of MALFORMED_IDS) await rejects(r.issueToken('partner', any(bad)), 'VALIDATION_FAILED', 'subjectId');
  });

  return test;
}
