/**
 * Contract of the integrations port (engine/ports/integrationRegistry.ts): a ground's integrations,
 * their secrets (made by the registry, answered once, rotated with a grace period), pages, and
 * refusals of malformed input. Runs on the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { FleetRegistry, IntegrationRegistry, NewIntegration, PrincipalRegistry } from '../../engine/ports/registry.ts';
import { any, ID_RE, MALFORMED_IDS, ownedGround, registrySuite, rejects, type RegistryFactory } from './registry.contract.ts';

const SECRET_RE = /^whsec_[A-Za-z0-9+/]{43}=$/;
const HOUR = 3_600_000;

export function integrationsContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<IntegrationRegistry & FleetRegistry & PrincipalRegistry>(`integrations contract: ${name}`, factory);

  const webhook = (groundId: string, extra: Partial<NewIntegration> = {}): NewIntegration => ({
    groundId, name: 'app', kind: 'webhook', url: 'https://receiver.example/hook', events: ['state'], ...extra,
  });

  test('create: active, with a secret answered once and kept to sign; get answers it without the secret', async ({ r, h, clock }) => {
    const { ground } = await ownedGround(r);
    clock.advance(5);
    const created = await r.createIntegration(webhook(ground.id, { name: 'Dashboard', events: ['state', 'command'], headers: { 'X-Api-Key': 'k1' } }));
    assert.match(created.secret, SECRET_RE);
    assert.match(created.integration.id, ID_RE);
    assert.equal(created.integration, {
      id: created.integration.id, groundId: ground.id, name: 'Dashboard', kind: 'webhook', url: 'https://receiver.example/hook',
      events: ['state', 'command'], headers: { 'x-api-key': 'k1' }, status: 'active', createdAt: clock.now(), updatedAt: clock.now(),
    });
    assert.not.ok('secret' in created.integration);
    assert.equal(await r.getIntegration(created.integration.id), created.integration);
    assert.equal(await r.integrationSecrets(created.integration.id), [created.secret]);
    const other = await r.createIntegration(webhook(ground.id));
    assert.is.not(other.secret, created.secret, 'every integration its own secret');
    const stored = await h.sql('SELECT secret FROM integrations WHERE id = $1', [created.integration.id]);
    assert.is(stored[0].secret, created.secret);
  });

  test('filters: devices of the ground and asset names; a device of another ground or none at all is NOT_FOUND', async ({ r }) => {
    const { ground } = await ownedGround(r);
    const { ground: other } = await ownedGround(r, 'other');
    const mine = await r.createDevice({ groundId: ground.id, name: 'meter' });
    const theirs = await r.createDevice({ groundId: other.id, name: 'meter' });
    const created = await r.createIntegration(webhook(ground.id, { devices: [mine.device.id], assets: ['temp', 'hum'] }));
    assert.equal(created.integration.devices, [mine.device.id]);
    assert.equal(created.integration.assets, ['temp', 'hum']);
    await rejects(r.createIntegration(webhook(ground.id, { devices: [theirs.device.id] })), 'NOT_FOUND', 'devices');
    await rejects(r.createIntegration(webhook(ground.id, { devices: [mine.device.id, 'A'.repeat(22)] })), 'NOT_FOUND', 'devices');
    await rejects(r.createIntegration(webhook('A'.repeat(22))), 'NOT_FOUND', 'groundId');
  });

  test('malformed input is VALIDATION_FAILED naming the field, before anything is stored', async ({ r, h }) => {
    const { ground } = await ownedGround(r);
    const before = (await h.sql('SELECT count(*) AS n FROM integrations'))[0].n;
    const cases: Array<[Partial<NewIntegration> | Record<string, unknown>, string]> = [
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(129) }, 'name'],
      [{ name: 'ap\u200Bp' }, 'name'],
      [{ name: 'a\u202Eppa' }, 'name'],
      [{ name: 'bad\ud800' }, 'name'],
      [{ kind: any('mqtt') }, 'kind'],
      [{ url: 'ftp://x.example/' }, 'url'],
      [{ url: 'https://x.example/' + 'a'.repeat(2048) }, 'url'],
      [{ events: [] }, 'events'],
      [{ events: any(['state', 'state']) as never }, 'events'],
      [{ events: any(['everything']) as never }, 'events.0'],
      [{ devices: [] }, 'devices'],
      [{ devices: ['not-an-id'] }, 'devices.0'],
      [{ assets: ['a/b'] }, 'assets.0'],
      [{ headers: { 'webhook-id': 'x' } }, 'headers.webhook-id'],
      [{ headers: { 'x-a': 'a\r\nb' } }, 'headers.x-a'],
      [{ headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-${i}`, 'v'])) }, 'headers'],
      [{ secret: 'whsec_mine' }, 'secret'],
    ];
    for (const [extra, field] of cases) {
      await rejects(r.createIntegration(webhook(ground.id, extra as Partial<NewIntegration>)), 'VALIDATION_FAILED', field);
    }
    assert.equal((await h.sql('SELECT count(*) AS n FROM integrations'))[0].n, before);
  });

  test('names are canonical: a leading BOM dropped, NFC', async ({ r }) => {
    const { ground } = await ownedGround(r);
    const created = await r.createIntegration(webhook(ground.id, { name: '\uFEFFZu\u0308rich' }));
    assert.is(created.integration.name, 'Z\u00fcrich');
  });

  test('list: a ground\'s integrations oldest first, by pages; others\' never', async ({ r, clock }) => {
    const { ground } = await ownedGround(r);
    const { ground: other } = await ownedGround(r, 'other');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(i % 2);
      ids.push((await r.createIntegration(webhook(ground.id, { name: `i${i}` }))).integration.id);
    }
    await r.createIntegration(webhook(other.id));
    const all = await r.listIntegrations(ground.id);
    assert.equal(all.map((i) => i.id).sort(), [...ids].sort());
    assert.equal(all.map((i) => i.id), [...all].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)).map((i) => i.id));
    const first = await r.listIntegrations(ground.id, { limit: 2 });
    const last = first[first.length - 1];
    const rest = await r.listIntegrations(ground.id, { after: { createdAt: last.createdAt, id: last.id } });
    assert.equal([...first, ...rest].map((i) => i.id), all.map((i) => i.id));
    for (const bad of MALFORMED_IDS) assert.equal(await r.listIntegrations(any(bad)), []);
    await rejects(r.listIntegrations(ground.id, { limit: 0 }), 'VALIDATION_FAILED');
  });

  test('active integrations: every ground\'s, oldest first, never a disabled one', async ({ r, clock }) => {
    const { ground } = await ownedGround(r);
    const { ground: other } = await ownedGround(r, 'other');
    const a = (await r.createIntegration(webhook(ground.id, { name: 'a' }))).integration;
    clock.advance(1);
    const b = (await r.createIntegration(webhook(other.id, { name: 'b' }))).integration;
    clock.advance(1);
    const c = (await r.createIntegration(webhook(ground.id, { name: 'c' }))).integration;
    await r.updateIntegration(c.id, { status: 'disabled' });
    // The registry is shared by the suite's tests: only this test's integrations are looked at.
    const mine = async () => (await r.activeIntegrations()).map((i) => i.id).filter((id) => [a.id, b.id, c.id].includes(id));
    assert.equal(await mine(), [a.id, b.id]);
    await r.updateIntegration(c.id, { status: 'active' });
    await r.deleteIntegration(a.id);
    assert.equal(await mine(), [b.id, c.id]);
  });

  test('integration count: active and disabled ones of every ground; deleted ones leave it', async ({ r }) => {
    const { ground } = await ownedGround(r);
    const before = await r.integrationCount();
    const a = (await r.createIntegration(webhook(ground.id, { name: 'a' }))).integration;
    const b = (await r.createIntegration(webhook(ground.id, { name: 'b' }))).integration;
    await r.updateIntegration(b.id, { status: 'disabled' });
    assert.is(await r.integrationCount(), before + 2, 'a disabled one counts');
    await r.deleteIntegration(a.id);
    await r.deleteIntegration(b.id);
    assert.is(await r.integrationCount(), before);
  });

  test('update: given fields change, null widens the filters again, status disables and re-enables', async ({ r, clock }) => {
    const { ground } = await ownedGround(r);
    const device = await r.createDevice({ groundId: ground.id, name: 'meter' });
    const { integration } = await r.createIntegration(webhook(ground.id, { devices: [device.device.id], assets: ['temp'], headers: { 'x-a': '1' } }));
    clock.advance(10);
    const renamed = await r.updateIntegration(integration.id, { name: 'renamed', url: 'https://other.example/in', events: ['rejection', 'alarm'] });
    assert.equal(renamed, { ...integration, name: 'renamed', url: 'https://other.example/in', events: ['rejection', 'alarm'], updatedAt: clock.now() });
    const widened = await r.updateIntegration(integration.id, { devices: null, assets: null, headers: {} });
    assert.is(widened.devices, undefined);
    assert.is(widened.assets, undefined);
    assert.equal(widened.headers, {});
    const disabled = await r.updateIntegration(integration.id, { status: 'disabled' });
    assert.is(disabled.status, 'disabled');
    assert.is(disabled.disabledReason, 'manual');
    const again = await r.updateIntegration(integration.id, { status: 'active' });
    assert.is(again.status, 'active');
    assert.is(again.disabledReason, undefined);
    assert.equal(await r.getIntegration(integration.id), again);
    await rejects(r.updateIntegration('A'.repeat(22), { name: 'x' }), 'NOT_FOUND');
    await rejects(r.updateIntegration(any('bad'), { name: 'x' }), 'VALIDATION_FAILED', 'integrationId');
    await rejects(r.updateIntegration(integration.id, { events: any(['nope']) as never }), 'VALIDATION_FAILED', 'events.0');
    await rejects(r.updateIntegration(integration.id, any({ groundId: 'B'.repeat(22) }) as never), 'VALIDATION_FAILED');
    const { ground: other } = await ownedGround(r, 'other');
    const foreign = await r.createDevice({ groundId: other.id, name: 'x' });
    await rejects(r.updateIntegration(integration.id, { devices: [foreign.device.id] }), 'NOT_FOUND', 'devices');
    assert.equal(await r.getIntegration(integration.id), again, 'a refused change changes nothing');
  });

  test('rotate: a new secret; the previous one signs too for the grace period, then not; a grace of 0 ends it at once', async ({ r, clock }) => {
    const { ground } = await ownedGround(r);
    const { integration, secret: first } = await r.createIntegration(webhook(ground.id));
    const rotated = await r.rotateIntegrationSecret(integration.id, { graceMs: 24 * HOUR });
    assert.match(rotated.secret, SECRET_RE);
    assert.is.not(rotated.secret, first);
    assert.is(rotated.integration.previousSecretValidUntil, clock.now() + 24 * HOUR);
    assert.equal(await r.integrationSecrets(integration.id), [rotated.secret, first]);
    clock.advance(24 * HOUR);
    assert.equal(await r.integrationSecrets(integration.id), [rotated.secret]);
    assert.is((await r.getIntegration(integration.id))?.previousSecretValidUntil, undefined);
    const second = await r.rotateIntegrationSecret(integration.id, { graceMs: HOUR });
    const third = await r.rotateIntegrationSecret(integration.id, { graceMs: HOUR });
    assert.equal(await r.integrationSecrets(integration.id), [third.secret, second.secret], 'at most two sign: the older one dropped');
    const leaked = await r.rotateIntegrationSecret(integration.id, { graceMs: 0 });
    assert.equal(await r.integrationSecrets(integration.id), [leaked.secret]);
    assert.is(leaked.integration.previousSecretValidUntil, undefined);
    await rejects(r.rotateIntegrationSecret('A'.repeat(22), { graceMs: 0 }), 'NOT_FOUND');
    await rejects(r.rotateIntegrationSecret(integration.id, { graceMs: -1 }), 'VALIDATION_FAILED', 'graceMs');
    await rejects(r.rotateIntegrationSecret(integration.id, { graceMs: 1.5 }), 'VALIDATION_FAILED', 'graceMs');
  });

  test('delete: gone with its secrets; deleting again is false; malformed ids are answered without a query', async ({ r }) => {
    const { ground } = await ownedGround(r);
    const { integration } = await r.createIntegration(webhook(ground.id));
    assert.is(await r.deleteIntegration(integration.id), true);
    assert.is(await r.deleteIntegration(integration.id), false);
    assert.is(await r.getIntegration(integration.id), undefined);
    assert.is(await r.integrationSecrets(integration.id), undefined);
    for (const bad of MALFORMED_IDS) {
      assert.is(await r.getIntegration(any(bad)), undefined);
      assert.is(await r.deleteIntegration(any(bad)), false);
      assert.is(await r.integrationSecrets(any(bad)), undefined);
    }
  });

  return test;
}
