/**
 * Contract of the grounds port (engine/ports/groundRegistry.ts): members' roles (added, changed,
 * listed by pages), the last owner kept under concurrency, a ground renamed and deleted (refused
 * while it holds devices, unless forced: then its devices go as deleteDevice deletes one). Runs on
 * the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { FleetRegistry, GroundRegistry, IntegrationRegistry, PrincipalRegistry, RuleRegistry } from '../../engine/ports/registry.ts';
import { any, MALFORMED_IDS, ownedGround, registrySuite, rejects, type RegistryFactory } from './registry.contract.ts';

type R = GroundRegistry & FleetRegistry & PrincipalRegistry & IntegrationRegistry & RuleRegistry;

const GHOST = 'A'.repeat(22);
/** Not roles: another word, a number, an array, a Cyrillic "о" in "owner", a different case, padding. */
const NOT_ROLES: unknown[] = ['admin', 1, ['owner'], 'оwner', 'Owner', ' owner', '', null, undefined, { role: 'owner' }];

export function groundsContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<R>(`grounds contract: ${name}`, factory);

  test('roles: the creator owns the ground (or takes the role given), addMember makes an editor, memberRole reads them', async ({ r }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const bob = await r.createUser({ name: 'bob' });
    assert.is(await r.memberRole(g.id, ann.entity.id), 'owner');
    assert.is(await r.memberRole(g.id, bob.entity.id), undefined);
    await r.addMember(g.id, bob.entity.id);
    assert.is(await r.memberRole(g.id, bob.entity.id), 'editor');
    await r.setMemberRole(g.id, bob.entity.id, 'viewer');
    await r.addMember(g.id, bob.entity.id);
    assert.is(await r.memberRole(g.id, bob.entity.id), 'viewer', 'addMember keeps a member\'s role');
    const viewing = await r.createGround({ name: 'watched', userId: bob.entity.id, role: 'viewer' });
    assert.is(await r.memberRole(viewing.id, bob.entity.id), 'viewer');
    await rejects(r.createGround({ name: 'x', userId: bob.entity.id, role: any('admin') as never }), 'VALIDATION_FAILED', 'role');
    for (const bad of MALFORMED_IDS) {
      assert.is(await r.memberRole(any(bad), ann.entity.id), undefined);
      assert.is(await r.memberRole(g.id, any(bad)), undefined);
      assert.equal(await r.listMembers(any(bad)), []);
    }
  });

  test('setMemberRole adds or changes a member and says which; unknown ground or user NOT_FOUND; malformed input VALIDATION_FAILED', async ({ r, clock }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const bob = await r.createUser({ name: 'bob' });
    clock.advance(5);
    const added = await r.setMemberRole(g.id, bob.entity.id, 'viewer');
    assert.equal(added, { member: { userId: bob.entity.id, name: 'bob', role: 'viewer', createdAt: clock.now() }, created: true, changed: true });
    clock.advance(5);
    const changed = await r.setMemberRole(g.id, bob.entity.id, 'editor');
    assert.equal(changed, { member: { ...added.member, role: 'editor' }, created: false, changed: true }, 'the joining time stays');
    assert.equal(await r.setMemberRole(g.id, bob.entity.id, 'editor'), { member: changed.member, created: false, changed: false });
    assert.equal(await r.setMemberRole(g.id, ann.entity.id, 'owner'), { member: (await r.listMembers(g.id))[0], created: false, changed: false });
    await rejects(r.setMemberRole(GHOST, bob.entity.id, 'viewer'), 'NOT_FOUND', 'groundId');
    await rejects(r.setMemberRole(g.id, GHOST, 'viewer'), 'NOT_FOUND', 'userId');
    for (const bad of NOT_ROLES) await rejects(r.setMemberRole(g.id, bob.entity.id, any(bad) as never), 'VALIDATION_FAILED', 'role');
    for (const bad of MALFORMED_IDS) {
      await rejects(r.setMemberRole(any(bad), bob.entity.id, 'viewer'), 'VALIDATION_FAILED', 'groundId');
      await rejects(r.setMemberRole(g.id, any(bad), 'viewer'), 'VALIDATION_FAILED', 'userId');
    }
    assert.is(await r.memberRole(g.id, bob.entity.id), 'editor', 'nothing refused changed anything');
  });

  test('listMembers: in the order they joined, with names and roles, by pages', async ({ r, clock }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const others = [];
    for (const name of ['bob', 'cy', 'di']) {
      clock.advance(1);
      const u = await r.createUser({ name });
      await r.setMemberRole(g.id, u.entity.id, name === 'cy' ? 'owner' : 'viewer');
      others.push(u.entity.id);
    }
    const all = await r.listMembers(g.id);
    assert.equal(all.map((m) => [m.userId, m.role]), [[ann.entity.id, 'owner'], [others[0], 'viewer'], [others[1], 'owner'], [others[2], 'viewer']]);
    assert.equal(all.map((m) => m.name), ['owner', 'bob', 'cy', 'di']);
    const first = await r.listMembers(g.id, { limit: 2 });
    assert.equal(first, all.slice(0, 2));
    const last = first[first.length - 1];
    assert.equal(await r.listMembers(g.id, { limit: 10, after: { createdAt: last.createdAt, id: last.userId } }), all.slice(2));
    await rejects(r.listMembers(g.id, { limit: 0 }), 'VALIDATION_FAILED');
    assert.equal(await r.listMembers(GHOST), []);
  });

  test('the last owner can be neither demoted nor removed; with a second owner either can go', async ({ r }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const bob = await r.createUser({ name: 'bob' });
    await r.addMember(g.id, bob.entity.id);
    for (const role of ['editor', 'viewer'] as const) {
      const e = await rejects(r.setMemberRole(g.id, ann.entity.id, role), 'CONFLICT');
      assert.match(e.message, /last owner/);
    }
    await rejects(r.removeMember(g.id, ann.entity.id), 'CONFLICT');
    assert.is(await r.memberRole(g.id, ann.entity.id), 'owner');
    assert.is(await r.removeMember(g.id, bob.entity.id), true, 'a non-owner goes freely');
    await r.setMemberRole(g.id, bob.entity.id, 'owner');
    await r.setMemberRole(g.id, ann.entity.id, 'viewer');
    await rejects(r.removeMember(g.id, bob.entity.id), 'CONFLICT');
    await r.setMemberRole(g.id, ann.entity.id, 'owner');
    assert.is(await r.removeMember(g.id, bob.entity.id), true);
    assert.equal((await r.listMembers(g.id)).map((m) => [m.userId, m.role]), [[ann.entity.id, 'owner']]);
  });

  test('two owners demoting (or removing) each other at once: exactly one passes, one owner stays', async ({ r }) => {
    for (let round = 0; round < 6; round++) {
      const { user: ann, ground: g } = await ownedGround(r, `race ${round}`);
      const bob = await r.createUser({ name: 'bob' });
      await r.setMemberRole(g.id, bob.entity.id, 'owner');
      const change = (userId: string) => (round % 2 === 0 ? r.setMemberRole(g.id, userId, 'viewer') : r.removeMember(g.id, userId));
      const outcomes = await Promise.allSettled([change(ann.entity.id), change(bob.entity.id)]);
      const refused = outcomes.filter((o) => o.status === 'rejected');
      assert.is(refused.length, 1, `round ${round}: ${outcomes.map((o) => o.status).join(', ')}`);
      assert.is((refused[0] as PromiseRejectedResult).reason.code, 'CONFLICT');
      const owners = (await r.listMembers(g.id)).filter((m) => m.role === 'owner');
      assert.is(owners.length, 1, `round ${round}: one owner left`);
    }
  });

  test('updateGround renames in canonical form; unknown NOT_FOUND, bad names VALIDATION_FAILED', async ({ r }) => {
    const { ground: g } = await ownedGround(r);
    assert.equal(await r.updateGround(g.id, { name: '\uFEFFA\u0308telier' }), { ...g, name: '\u00C4telier' });
    assert.equal(await r.getGround(g.id), { ...g, name: '\u00C4telier' });
    assert.equal(await r.updateGround(g.id, {}), { ...g, name: '\u00C4telier' }, 'an empty patch changes nothing');
    await rejects(r.updateGround(GHOST, { name: 'x' }), 'NOT_FOUND', 'groundId');
    for (const name of ['', 'x'.repeat(129), 'a\u200Bb', 7]) await rejects(r.updateGround(g.id, { name: any(name) }), 'VALIDATION_FAILED', 'name');
    await rejects(r.updateGround(g.id, { name: 'x', extra: 1 } as never), 'VALIDATION_FAILED');
    await rejects(r.updateGround(any('nope'), { name: 'x' }), 'VALIDATION_FAILED', 'groundId');
  });

  test('deleteGround: refused while it has devices; forced, its devices go (tokens revoked) with its members, integrations and rules', async ({ r, h }) => {
    const { user: ann, ground: g } = await ownedGround(r);
    const bob = await r.createUser({ name: 'bob' });
    await r.addMember(g.id, bob.entity.id);
    const device = await r.createDevice({ groundId: g.id, name: 'd1', assets: [{ name: 'temp', is: 'sensor', profile: { type: 'number' } }] });
    const integration = await r.createIntegration({ groundId: g.id, name: 'app', kind: 'webhook', url: 'https://receiver.example/hook', events: ['state'] });
    const rule = await r.createRule({ groundId: g.id, name: 'hot', asset: 'temp', condition: { above: 30 }, severity: 'major' });
    const e = await rejects(r.deleteGround(g.id), 'CONFLICT', 'devices');
    assert.match(e.message, /1 device/);
    await rejects(r.deleteGround(g.id, { force: false }), 'CONFLICT');
    assert.ok(await r.getGround(g.id), 'nothing deleted');
    assert.ok(await r.getDevice(device.device.id));

    const deleted = await r.deleteGround(g.id, { force: true });
    assert.equal(deleted, {
      deviceIds: [device.device.id],
      memberIds: [ann.entity.id, bob.entity.id].sort(),
      integrationIds: [integration.integration.id],
      ruleIds: [rule.id],
      keyTokenHashes: [],
    });
    assert.is(await r.getGround(g.id), undefined);
    assert.is(await r.getDevice(device.device.id), undefined);
    assert.is(await r.authenticate(device.token), undefined, 'the device token is revoked');
    assert.is(await r.getIntegration(integration.integration.id), undefined);
    assert.is(await r.getRule(rule.id), undefined);
    assert.is(await r.isMember(g.id, ann.entity.id), false);
    assert.equal(await r.listGrounds(ann.entity.id), []);
    assert.equal(await h.sql('SELECT id FROM assets WHERE device_id = $1', [device.device.id]), []);
    assert.ok(await r.getUser(bob.entity.id), 'users stay');
    assert.is(await r.deleteGround(g.id), undefined, 'gone');

    const empty = await r.createGround({ name: 'empty' });
    assert.equal(await r.deleteGround(empty.id), { deviceIds: [], memberIds: [], integrationIds: [], ruleIds: [], keyTokenHashes: [] });
    for (const bad of MALFORMED_IDS) assert.is(await r.deleteGround(any(bad)), undefined);
  });

  return test;
}
