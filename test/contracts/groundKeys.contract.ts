/**
 * Contract of the ground keys port (engine/ports/groundKeyRegistry.ts): a key created with its
 * token shown once and stored hashed, authenticated into its grant until revoked or expired, listed
 * by pages (thousands of them), revoked (and with its ground), hostile input refused. Runs on the
 * harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { FleetRegistry, GroundKey, GroundKeyRegistry, GroundRegistry, PrincipalRegistry } from '../../engine/ports/registry.ts';
import { MAX_EXPIRES_AT } from '../../schemas/groundKeys.ts';
import { any, ID_RE, MALFORMED_IDS, ownedGround, registrySuite, rejects, sha256, type RegistryFactory } from './registry.contract.ts';

type R = GroundKeyRegistry & GroundRegistry & FleetRegistry & PrincipalRegistry;

const GHOST = 'A'.repeat(22);
const KEY_TOKEN = /^fsk_[0-9A-Za-z]{43}$/;
/** Names no key may have: empty, too long, control, bidi override, zero-width, line separator, not text. */
const BAD_NAMES: unknown[] = ['', 'x'.repeat(129), 'a\u0000b', 'a\nb', 'a\u007fb', 'evil\u202Eexe.txt', 'a\u200Bb', 'a\u2028b', '\ud800', 7, null, ['k'], { name: 'k' }];
/** Not a key's role: owner (never), other words, a Cyrillic "е" in "editor", case, padding, other types. */
const BAD_ROLES: unknown[] = ['owner', 'admin', 'еditor', 'Editor', ' viewer', '', 1, null, ['viewer']];

export function groundKeysContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<R>(`ground keys contract: ${name}`, factory);

  test('createKey answers the key and its token once; only the hash is stored; authenticate answers the grant and records the use', async ({ r, h, clock }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const created = await r.createKey(g.id, { name: '  Ä\u0308 ingest ', role: 'editor' }, ann.entity.id);
    assert.match(created.token, KEY_TOKEN);
    assert.match(created.key.id, ID_RE);
    const expected: GroundKey = { id: created.key.id, groundId: g.id, name: '  Ä\u0308 ingest '.normalize('NFC'), role: 'editor', createdAt: clock.now(), createdBy: ann.entity.id };
    assert.equal(created.key, expected);
    const dump = JSON.stringify([await h.sql('SELECT * FROM ground_keys'), await h.sql('SELECT * FROM tokens')]);
    assert.not.ok(dump.includes(created.token.slice(4)), 'the token is nowhere in clear');
    assert.equal(await h.sql(`SELECT scope, subject_id FROM tokens WHERE hash = $1`, [sha256(created.token)]), [{ scope: 'key', subject_id: created.key.id }]);

    clock.advance(1_000);
    assert.equal(await r.authenticate(created.token), { scope: 'key', subjectId: created.key.id, key: { groundId: g.id, role: 'editor' } });
    assert.equal(await r.getKey(g.id, created.key.id), { ...expected, lastUsedAt: clock.now() });
    const other = await r.createGround({ name: 'other', userId: ann.entity.id });
    assert.is(await r.getKey(other.id, created.key.id), undefined, 'a key is found through its own ground only');
    await rejects(r.issueToken('key', created.key.id), 'VALIDATION_FAILED', 'scope');
  });

  test('a key expires: authenticated until expiresAt, then never again', async ({ r, clock }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const expiresAt = clock.now() + 60_000;
    const created = await r.createKey(g.id, { name: 'short', role: 'viewer', expiresAt }, ann.entity.id);
    assert.is(created.key.expiresAt, expiresAt);
    assert.equal(await r.authenticate(created.token), { scope: 'key', subjectId: created.key.id, key: { groundId: g.id, role: 'viewer', expiresAt } });
    clock.advance(59_999);
    assert.ok(await r.authenticate(created.token), 'a millisecond before');
    clock.advance(1);
    assert.is(await r.authenticate(created.token), undefined, 'at expiresAt');
    assert.ok(await r.getKey(g.id, created.key.id), 'listed until revoked');
  });

  test('createKey refuses hostile input: names, roles (owner included), expiries past or malformed, forged ids, extra fields', async ({ r, clock }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    for (const bad of BAD_NAMES) await rejects(r.createKey(g.id, { name: any(bad), role: 'viewer' }, ann.entity.id), 'VALIDATION_FAILED', 'name');
    for (const bad of BAD_ROLES) await rejects(r.createKey(g.id, { name: 'k', role: any(bad) as never }, ann.entity.id), 'VALIDATION_FAILED', 'role');
    for (const bad of [clock.now(), clock.now() - 1, 0, -5, 1.5, MAX_EXPIRES_AT + 1, '2030-01-01T00:00:00Z', String(clock.now() + 1000), null, Number.NaN, Infinity]) {
      await rejects(r.createKey(g.id, { name: 'k', role: 'viewer', expiresAt: bad as never }, ann.entity.id), 'VALIDATION_FAILED', 'expiresAt');
    }
    await rejects(r.createKey(g.id, { name: 'k', role: 'viewer', token: 'fsk_' } as never, ann.entity.id), 'VALIDATION_FAILED');
    await rejects(r.createKey(g.id, any(null) as never, ann.entity.id), 'VALIDATION_FAILED');
    await rejects(r.createKey(GHOST, { name: 'k', role: 'viewer' }, ann.entity.id), 'NOT_FOUND', 'groundId');
    await rejects(r.createKey(g.id, { name: 'k', role: 'viewer' }, GHOST), 'NOT_FOUND', 'createdBy');
    for (const bad of MALFORMED_IDS) {
      await rejects(r.createKey(any(bad), { name: 'k', role: 'viewer' }, ann.entity.id), 'VALIDATION_FAILED', 'groundId');
      await rejects(r.createKey(g.id, { name: 'k', role: 'viewer' }, any(bad)), 'VALIDATION_FAILED', 'createdBy');
      assert.equal(await r.listKeys(any(bad)), []);
      assert.is(await r.getKey(any(bad), GHOST), undefined);
      assert.is(await r.getKey(g.id, any(bad)), undefined);
      assert.is(await r.revokeKey(any(bad), GHOST), undefined);
      assert.is(await r.revokeKey(g.id, any(bad)), undefined);
    }
    assert.equal(await r.listKeys(g.id), [], 'nothing refused was created');
    const far = await r.createKey(g.id, { name: 'far', role: 'viewer', expiresAt: MAX_EXPIRES_AT }, ann.entity.id);
    assert.is(far.key.expiresAt, MAX_EXPIRES_AT);
  });

  test('revokeKey: the token is revoked and its hash answered; the key leaves the list; another ground cannot revoke it', async ({ r, clock }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const other = await r.createGround({ name: 'other', userId: ann.entity.id });
    const kept = await r.createKey(g.id, { name: 'kept', role: 'viewer' }, ann.entity.id);
    const gone = await r.createKey(g.id, { name: 'gone', role: 'editor' }, ann.entity.id);
    assert.is(await r.revokeKey(other.id, gone.key.id), undefined, 'not a key of that ground');
    assert.is(await r.revokeKey(g.id, GHOST), undefined);
    assert.ok(await r.authenticate(gone.token));
    const used = { ...gone.key, lastUsedAt: clock.now() };
    const revoked = await r.revokeKey(g.id, gone.key.id);
    assert.equal(revoked, { key: used, tokenHash: sha256(gone.token) });
    assert.is(await r.authenticate(gone.token), undefined);
    assert.is(await r.revokeKey(g.id, gone.key.id), undefined, 'once');
    assert.equal((await r.listKeys(g.id)).map((k) => k.id), [kept.key.id]);
    assert.ok(await r.authenticate(kept.token), 'the other key keeps working');
    // Its token revoked as a token first: revoking the key still answers the hash to announce.
    assert.is(await r.revokeToken(kept.token), true);
    assert.equal(await r.revokeKey(g.id, kept.key.id), { key: { ...kept.key, lastUsedAt: clock.now() }, tokenHash: sha256(kept.token) });
  });

  test('deleteGround revokes its keys and answers their hashes', async ({ r }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const a = await r.createKey(g.id, { name: 'a', role: 'viewer' }, ann.entity.id);
    const b = await r.createKey(g.id, { name: 'b', role: 'editor' }, ann.entity.id);
    const elsewhere = await ownedGround(r, 'elsewhere');
    const c = await r.createKey(elsewhere.ground.id, { name: 'c', role: 'viewer' }, elsewhere.user.entity.id);
    const deleted = await r.deleteGround(g.id);
    assert.equal(deleted?.keyTokenHashes, [sha256(a.token), sha256(b.token)].sort());
    assert.is(await r.authenticate(a.token), undefined);
    assert.is(await r.authenticate(b.token), undefined);
    assert.ok(await r.authenticate(c.token), 'keys of other grounds stay');
    assert.equal(await r.listKeys(g.id), []);
  });

  test('listKeys pages thousands of keys, oldest first (then id), without a gap or a repeat', async ({ r, clock }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const made: GroundKey[] = [];
    for (let batch = 0; batch < 25; batch++) {
      // Several keys share a millisecond: the id orders them.
      made.push(...(await Promise.all(Array.from({ length: 100 }, (_, i) => r.createKey(g.id, { name: `k${batch}-${i}`, role: 'viewer' }, ann.entity.id)))).map((c) => c.key));
      clock.advance(1);
    }
    const order = made.slice().sort((x, y) => x.createdAt - y.createdAt || (x.id < y.id ? -1 : 1)).map((k) => k.id);
    const seen: string[] = [];
    let after: { createdAt: number; id: string } | undefined;
    for (;;) {
      const page = await r.listKeys(g.id, { limit: 700, ...(after && { after }) });
      seen.push(...page.map((k) => k.id));
      if (page.length < 700) break;
      const last = page[page.length - 1];
      after = { createdAt: last.createdAt, id: last.id };
    }
    assert.equal(seen, order);
    assert.is((await r.listKeys(g.id)).length, 2500, 'no limit: all');
    await rejects(r.listKeys(g.id, { limit: 0 }), 'VALIDATION_FAILED');
    await rejects(r.listKeys(g.id, { limit: 1002 }), 'VALIDATION_FAILED');
    await rejects(r.listKeys(g.id, { after: { createdAt: -1, id: GHOST } }), 'VALIDATION_FAILED');
  });

  return test;
}
