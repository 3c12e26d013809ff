/**
 * Where registry changes come from and what they drop: every mutation of a publishing registry
 * (engine/access/publishingRegistry.ts, over a real PGlite registry) publishes exactly the change it
 * made, once committed and before it resolves, and nothing when it changed nothing; the cached
 * lookups (engine/access/RegistryLookups.ts, over a counting registry) drop exactly what a change
 * touches.
 */
import * as assert from 'uvu/assert';
import { createPgliteRegistry } from '../../../adapters/pglite/createPgliteRegistry.ts';
import { InProcessRegistryChanges } from '../../../adapters/registry-changes/InProcessRegistryChanges.ts';
import { publishingRegistry } from '../../../engine/access/publishingRegistry.ts';
import { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import { hashToken, newToken } from '../../../engine/access/tokens.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { newId } from '../../../engine/kernel/ids.ts';
import type { DeviceWithAssets, Principal, Registry } from '../../../engine/ports/registry.ts';
import type { RegistryChange } from '../../../engine/ports/registryChanges.ts';
import { suite } from '../../support/suite.ts';

const publish = suite<{ raw: Registry; registry: Registry; heard: RegistryChange[]; changes: InProcessRegistryChanges }>('publishing registry', {} as never);

publish.before.each(async (context) => {
  context.raw = await createPgliteRegistry();
  context.changes = new InProcessRegistryChanges();
  context.heard = [];
  context.changes.subscribe((change) => context.heard.push(change));
  context.registry = publishingRegistry(context.raw, context.changes);
});
publish.after.each(async ({ registry, changes }) => {
  await registry.close();
  await changes.close();
});

publish('each mutation publishes what it changed, before it resolves', async ({ registry, heard }) => {
  const user = await registry.createUser({ name: 'u' });
  const other = await registry.createUser({ name: 'v' });
  const ground = await registry.createGround({ name: 'g', userId: user.entity.id });
  assert.equal(heard, [], 'principals and grounds: nothing cached can be stale about them');

  const created = await registry.createDevice({ groundId: ground.id, name: 'd', assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
  const deviceId = created.device.id;
  const expect = (change: RegistryChange) => {
    assert.equal(heard, [change], 'published once');
    heard.length = 0;
  };
  expect({ kind: 'device-changed', deviceId });

  await registry.updateDevice(deviceId, { title: 'new title' });
  expect({ kind: 'device-changed', deviceId });
  await registry.upsertAsset(deviceId, 'h', { is: 'sensor', profile: { type: 'number' } });
  expect({ kind: 'device-changed', deviceId });
  await registry.upsertAsset(deviceId, 't', { profile: { type: 'number', maximum: 10 } });
  expect({ kind: 'device-changed', deviceId });
  assert.ok(await registry.deleteAsset(deviceId, 'h'));
  expect({ kind: 'device-changed', deviceId });

  await registry.addMember(ground.id, other.entity.id);
  expect({ kind: 'membership-changed', groundId: ground.id, userId: other.entity.id });
  assert.ok(await registry.removeMember(ground.id, other.entity.id));
  expect({ kind: 'membership-changed', groundId: ground.id, userId: other.entity.id });

  const extra = await registry.issueToken('device', deviceId);
  assert.equal(heard, [], 'a new token');
  assert.ok(await registry.revokeToken(extra));
  expect({ kind: 'token-revoked', tokenHash: hashToken(extra) });

  assert.ok(await registry.deleteDevice(deviceId));
  expect({ kind: 'device-deleted', deviceId });
});

publish('a role changed is a membership change; a deleted ground is published as what went with it; nothing for what changed nothing', async ({ registry, heard }) => {
  const user = await registry.createUser({ name: 'u' });
  const other = await registry.createUser({ name: 'v' });
  const ground = await registry.createGround({ name: 'g', userId: user.entity.id });
  await registry.setMemberRole(ground.id, other.entity.id, 'viewer');
  assert.equal(heard, [{ kind: 'membership-changed', groundId: ground.id, userId: other.entity.id }]);
  heard.length = 0;
  await registry.setMemberRole(ground.id, other.entity.id, 'viewer');
  await registry.setMemberRole(ground.id, user.entity.id, 'viewer').then(() => assert.unreachable('demoted the last owner'), () => undefined);
  await registry.removeMember(ground.id, user.entity.id).then(() => assert.unreachable('removed the last owner'), () => undefined);
  await registry.updateGround(ground.id, { name: 'renamed' });
  assert.equal(heard, [], 'the same role, refusals, a new name');

  const device = await registry.createDevice({ groundId: ground.id, name: 'd', assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
  const integration = await registry.createIntegration({ groundId: ground.id, name: 'app', kind: 'webhook', url: 'https://receiver.example/hook', events: ['state'] });
  const rule = await registry.createRule({ groundId: ground.id, name: 'hot', asset: 't', condition: { above: 30 }, severity: 'major' });
  heard.length = 0;
  await registry.deleteGround(ground.id).then(() => assert.unreachable('deleted a ground with devices'), () => undefined);
  assert.equal(heard, []);
  await registry.deleteGround(ground.id, { force: true });
  const members = [user.entity.id, other.entity.id].sort();
  assert.equal(heard, [
    { kind: 'device-deleted', deviceId: device.device.id },
    ...members.map((userId) => ({ kind: 'membership-changed', groundId: ground.id, userId })),
    { kind: 'integration-deleted', integrationId: integration.integration.id, groundId: ground.id },
    { kind: 'rule-deleted', ruleId: rule.id, groundId: ground.id },
  ]);
  heard.length = 0;
  assert.is(await registry.deleteGround(ground.id), undefined);
  assert.equal(heard, []);
});

publish('nothing is published when nothing changed (already gone, unknown, refused)', async ({ registry, heard }) => {
  const user = await registry.createUser({ name: 'u' });
  const ground = await registry.createGround({ name: 'g', userId: user.entity.id });
  const created = await registry.createDevice({ groundId: ground.id, name: 'd', assets: [] });
  heard.length = 0;
  const missing = newId();
  assert.not.ok(await registry.revokeToken(newToken('device')), 'an unknown token');
  assert.not.ok(await registry.revokeToken('not a token'));
  assert.not.ok(await registry.deleteDevice(missing));
  assert.not.ok(await registry.deleteAsset(created.device.id, 'nope'));
  assert.not.ok(await registry.removeMember(ground.id, newId()));
  await registry.updateDevice(missing, { title: 'x' }).then(() => assert.unreachable('updated a missing device'), () => undefined);
  await registry.upsertAsset(missing, 'a', { is: 'sensor' }).then(() => assert.unreachable('asset on a missing device'), () => undefined);
  await registry.createDevice({ groundId: ground.id, name: 'd', assets: [] }).then(() => assert.unreachable('duplicate name'), () => undefined);
  await registry.getDevice(created.device.id);
  await registry.authenticate(created.token);
  assert.equal(heard, []);
  assert.ok(await registry.revokeToken(created.token));
  assert.not.ok(await registry.revokeToken(created.token), 'revoked twice');
  assert.is(heard.length, 1);
});

publish('an integration\'s creation, change, rotation and deletion are published with its ground; nothing when nothing changed', async ({ registry, heard }) => {
  const user = await registry.createUser({ name: 'u' });
  const ground = await registry.createGround({ name: 'g', userId: user.entity.id });
  const { integration } = await registry.createIntegration({ groundId: ground.id, name: 'app', kind: 'webhook', url: 'https://r.example/in', events: ['state'] });
  const change = { kind: 'integration-changed', integrationId: integration.id, groundId: ground.id } as const;
  assert.equal(heard, [change]);
  heard.length = 0;
  await registry.updateIntegration(integration.id, { name: 'renamed' });
  await registry.rotateIntegrationSecret(integration.id, { graceMs: 0 });
  assert.equal(heard, [change, change]);
  heard.length = 0;
  await registry.integrationSecrets(integration.id);
  await registry.updateIntegration(newId(), { name: 'x' }).then(() => assert.unreachable('updated a missing integration'), () => undefined);
  await registry.rotateIntegrationSecret(newId(), { graceMs: 0 }).then(() => assert.unreachable('rotated a missing integration'), () => undefined);
  await registry.createIntegration({ groundId: newId(), name: 'app', kind: 'webhook', url: 'https://r.example/in', events: ['state'] }).then(() => assert.unreachable('no ground'), () => undefined);
  assert.not.ok(await registry.deleteIntegration(newId()));
  assert.equal(heard, []);
  assert.ok(await registry.deleteIntegration(integration.id));
  assert.equal(heard, [{ kind: 'integration-deleted', integrationId: integration.id, groundId: ground.id }]);
});

publish('a rule\'s creation, change and deletion are published with its ground; nothing when nothing changed', async ({ registry, heard }) => {
  const user = await registry.createUser({ name: 'u' });
  const ground = await registry.createGround({ name: 'g', userId: user.entity.id });
  const device = await registry.createDevice({ groundId: ground.id, name: 'd', assets: [] });
  heard.length = 0;
  const rule = await registry.createRule({ groundId: ground.id, name: 'too hot', asset: 'temp', condition: { above: 30 }, severity: 'major' });
  const change = { kind: 'rule-changed', ruleId: rule.id, groundId: ground.id } as const;
  assert.equal(heard, [change]);
  heard.length = 0;
  await registry.updateRule(rule.id, { name: 'renamed' });
  await registry.updateRule(rule.id, { severity: 'critical' });
  assert.equal(heard, [change, change]);
  heard.length = 0;
  await registry.getRule(rule.id);
  await registry.listRules(ground.id);
  await registry.applyEvaluation({ ruleId: rule.id, groundId: ground.id, deviceId: device.device.id, asset: 'temp', severity: 'critical', at: 1, stateId: 's1', value: 31, holds: true, clears: false });
  await registry.updateRule(newId(), { name: 'x' }).then(() => assert.unreachable('updated a missing rule'), () => undefined);
  await registry.updateRule(rule.id, { severity: 'fatal' as never }).then(() => assert.unreachable('a refused change'), () => undefined);
  await registry.createRule({ groundId: newId(), name: 'r', asset: 'temp', condition: { above: 1 }, severity: 'info' }).then(() => assert.unreachable('no ground'), () => undefined);
  assert.not.ok(await registry.deleteRule(newId()));
  assert.equal(heard, []);
  assert.ok(await registry.deleteRule(rule.id));
  assert.equal(heard, [{ kind: 'rule-deleted', ruleId: rule.id, groundId: ground.id }]);
  heard.length = 0;
  assert.not.ok(await registry.deleteRule(rule.id), 'deleted twice');
  assert.equal(heard, []);
});

publish('the change is heard before the caller sees the answer; reads and close pass through', async ({ registry, changes }) => {
  const user = await registry.createUser({ name: 'u' });
  const ground = await registry.createGround({ name: 'g', userId: user.entity.id });
  const created = await registry.createDevice({ groundId: ground.id, name: 'd', assets: [] });
  let heardFirst = false;
  changes.subscribe((change) => { if (change.kind === 'device-deleted') heardFirst = true; });
  const deleted = registry.deleteDevice(created.device.id).then((value) => ({ value, heardFirst }));
  assert.equal(await deleted, { value: true, heardFirst: true });
  assert.is(await registry.getDevice(created.device.id), undefined);
});

/** A registry that counts lookups; everything else is unused by RegistryLookups. */
function countingRegistry() {
  const calls = { authenticate: 0, getDevice: 0, getAssetById: 0, isMember: 0 };
  const deviceId = 'D'.repeat(22);
  const device: DeviceWithAssets = {
    id: deviceId, groundId: 'G'.repeat(22), name: 'd', title: '', description: '', createdAt: 0,
    assets: [{ id: 'S'.repeat(22), deviceId, name: 't', is: 'sensor', title: '', description: '', profile: {}, createdAt: 0 }],
  } as unknown as DeviceWithAssets;
  const registry: Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'memberRole'> = {
    async authenticate(token) {
      calls.authenticate++;
      return { scope: token.startsWith('fsu_') ? 'user' : 'device', subjectId: token.startsWith('fsu_') ? 'U'.repeat(22) : deviceId } as Principal;
    },
    async getDevice(id) {
      calls.getDevice++;
      return id === deviceId ? device : undefined;
    },
    async getAssetById(id) {
      calls.getAssetById++;
      return device.assets.find((a) => a.id === id);
    },
    async memberRole() {
      calls.isMember++;
      return 'owner' as const;
    },
  };
  return { calls, registry, device };
}

const lookups = suite('cached lookups follow registry changes');

lookups('each change drops exactly what it touches; everything else stays cached', async () => {
  const { calls, registry, device } = countingRegistry();
  const access = new RegistryLookups({ registry, clock: new SimulatedClock(0), cacheTtlMs: 600_000 });
  const deviceToken = newToken('device');
  const otherToken = newToken('device');
  const userToken = newToken('user');
  const groundId = device.groundId;
  const warm = async () => {
    await access.principal(deviceToken);
    await access.principal(otherToken);
    await access.principal(userToken);
    await access.device(device.id);
    await access.deviceIdOfAsset(device.assets[0].id);
    await access.isMember(groundId, 'U'.repeat(22));
    await access.isMember(groundId, 'V'.repeat(22));
  };
  await warm();
  const loaded = { ...calls };
  await warm();
  assert.equal(calls, loaded, 'all cached');

  access.apply({ kind: 'token-revoked', tokenHash: hashToken(newToken('device')) });
  await warm();
  assert.equal(calls, loaded, 'another token\'s revocation drops nothing');

  access.apply({ kind: 'token-revoked', tokenHash: hashToken(deviceToken) });
  await warm();
  assert.equal(calls, { ...loaded, authenticate: loaded.authenticate + 1 }, 'only the revoked token is looked up again');

  access.apply({ kind: 'device-changed', deviceId: device.id });
  await warm();
  assert.equal(calls, { ...loaded, authenticate: loaded.authenticate + 1, getDevice: loaded.getDevice + 1 }, 'the device only');

  access.apply({ kind: 'membership-changed', groundId, userId: 'V'.repeat(22) });
  await warm();
  assert.equal(calls, { ...loaded, authenticate: loaded.authenticate + 1, getDevice: loaded.getDevice + 1, isMember: loaded.isMember + 1 }, 'that membership only');

  const before = { ...calls };
  access.apply({ kind: 'device-deleted', deviceId: device.id });
  await warm();
  assert.equal(calls, {
    authenticate: before.authenticate + 2, // both tokens of the device; the user's stays
    getDevice: before.getDevice + 1,
    getAssetById: before.getAssetById + 1,
    isMember: before.isMember,
  }, 'the device, its assets and its tokens');

  const beforeResync = { ...calls };
  access.apply({ kind: 'resync' });
  await warm();
  assert.equal(calls, {
    authenticate: beforeResync.authenticate + 3, getDevice: beforeResync.getDevice + 1,
    getAssetById: beforeResync.getAssetById + 1, isMember: beforeResync.isMember + 2,
  }, 'resync drops everything');
});

lookups('a lookup in flight when its change arrives is not kept', async () => {
  const { calls, registry, device } = countingRegistry();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => { release = resolve; });
  const slow = { ...registry, async getDevice(id: string) { await gate; return registry.getDevice(id); } };
  const access = new RegistryLookups({ registry: slow, clock: new SimulatedClock(0), cacheTtlMs: 600_000 });
  const pending = access.device(device.id);
  access.apply({ kind: 'device-changed', deviceId: device.id });
  release();
  await pending;
  await access.device(device.id);
  assert.is(calls.getDevice, 2, 'the answer that predates the change was not cached');
});

publish.run();
lookups.run();
