/**
 * Contract of managing activations (spec §4.7): list with filters and pages, change and delete
 * while unused, CONFLICT once used (engine/activation/activationMachine.ts). Runs on the harness of
 * registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { NewActivation, Registry } from '../../engine/ports/registry.ts';
import { any, registrySuite, rejects, type RegistryFactory } from './registry.contract.ts';

export function activationLifecycleContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<Registry>(`activation lifecycle contract: ${name}`, factory);

  async function world(r: Registry) {
    const partner = (await r.createPartner({ name: 'Acme' })).entity;
    const user = (await r.createUser({ name: 'installer' })).entity;
    const ground = await r.createGround({ name: 'site', userId: user.id });
    await r.publishDeviceType(partner.id, 't', { assets: [] });
    const input = (hardware: string): NewActivation => ({
      description: `unit ${hardware}`,
      hardware: { id: hardware },
      options: [{ description: 'mobile', device: { type: `${partner.id}/t` }, network: { networkId: 'orangebe', data: {} } }],
    });
    return { partner, user, ground, input };
  }

  test('list: oldest first, filtered by status and hardware id, paged with `after`', async ({ r, clock }) => {
    const { partner, user, ground, input } = await world(r);
    const created = [];
    for (let i = 0; i < 7; i++) {
      clock.advance(i % 3 === 0 ? 1 : 0); // equal created times: the code breaks the tie
      created.push(await r.createActivation(partner.id, input(`hw-${i}`)));
    }
    const other = (await r.createPartner({ name: 'Other' })).entity;
    await r.publishDeviceType(other.id, 't', { assets: [] });
    await r.createActivation(other.id, { hardware: { id: 'hw-0' }, options: [{ device: { type: `${other.id}/t` }, network: { networkId: 'orangebe', data: {} } }] });
    const order = [...created].sort((a, b) => a.createdAt - b.createdAt || (a.code < b.code ? -1 : 1));
    const all = await r.listActivations(partner.id, {});
    assert.equal(all.map((a) => a.code), order.map((a) => a.code));
    assert.equal(all[0], order[0]);
    const pages: string[] = [];
    let after: { createdAt: number; code: string } | undefined;
    for (;;) {
      const page = await r.listActivations(partner.id, { limit: 3, ...(after ? { after } : {}) });
      pages.push(...page.map((a) => a.code));
      if (page.length < 3) break;
      after = { createdAt: page[2].createdAt, code: page[2].code };
    }
    assert.equal(pages, order.map((a) => a.code));
    await r.activate({ code: created[2].code, option: created[2].options[0].id, groundId: ground.id, userId: user.id });
    assert.equal((await r.listActivations(partner.id, { status: 'used' })).map((a) => a.code), [created[2].code]);
    assert.is((await r.listActivations(partner.id, { status: 'unused' })).length, 6);
    assert.equal((await r.listActivations(partner.id, { hardwareId: 'hw-4' })).map((a) => a.code), [created[4].code]);
    assert.equal(await r.listActivations(partner.id, { hardwareId: 'hw-4', status: 'used' }), []);
    assert.equal((await r.listActivations(other.id, {})).map((a) => a.hardware.id), ['hw-0']);
    for (const [field, query] of [['status', { status: 'lost' }], ['limit', { limit: 0 }], ['limit', { limit: 1.5 }], ['hardwareId', { hardwareId: '' }], ['after.code', { after: { createdAt: 1, code: 'x' } }]] as const) {
      await rejects(r.listActivations(partner.id, query as never), 'VALIDATION_FAILED', field);
    }
    await rejects(r.listActivations('nope', {}), 'VALIDATION_FAILED', 'partnerId');
  });

  test('change while unused: description, options replaced with new ids and the same checks', async ({ r }) => {
    const { partner, input } = await world(r);
    const a = await r.createActivation(partner.id, input('chg-1'));
    const described = await r.updateActivation(partner.id, a.code.toLowerCase(), { description: 'relabelled' });
    assert.equal(described, { ...a, description: 'relabelled' });
    await r.saveDeviceTypeDraft(partner.id, 'drafty', { assets: [{ name: 'x', is: 'sensor' }] });
    const changed = await r.updateActivation(partner.id, a.code, {
      options: [
        { description: 'lora', device: { type: `${partner.id}/drafty` }, network: { networkId: 'net2', data: { devEui: '0004A30B001C0777' } } },
        { device: { type: `${partner.id}/t:1` }, network: { networkId: 'net8', data: {} } },
      ],
    });
    assert.is(changed.description, 'relabelled');
    assert.is(changed.options.length, 2);
    assert.not.ok(changed.options.some((o) => o.id === a.options[0].id), 'new option ids');
    assert.equal(changed.options.map((o) => [o.description, o.device.type, o.network.networkId]), [
      ['lora', `${partner.id}/drafty:latest`, 'loriot'], ['', `${partner.id}/t:1`, 'orangebe'],
    ]);
    assert.is((await r.resolveDeviceType(`${partner.id}/drafty`))?.version, 1, 'the draft was published for :latest');
    assert.equal(await r.getActivation(partner.id, a.code), changed);
    const before = await r.getActivation(partner.id, a.code);
    await rejects(r.updateActivation(partner.id, a.code, { options: [] }), 'VALIDATION_FAILED', 'options');
    await rejects(r.updateActivation(partner.id, a.code, { options: [{ device: { type: `${partner.id}/ghost` }, network: { networkId: 'net8', data: {} } }] }), 'VALIDATION_FAILED', 'options.0.device.type');
    await rejects(r.updateActivation(partner.id, a.code, { options: [{ device: { type: `${partner.id}/t` }, network: { networkId: 'net2', data: {} } }] }), 'VALIDATION_FAILED', 'options.0.network.data.devEui');
    await rejects(r.updateActivation(partner.id, a.code, { description: 'x'.repeat(4097) }), 'VALIDATION_FAILED', 'description');
    assert.equal(await r.getActivation(partner.id, a.code), before, 'a refused change changes nothing');
    const other = (await r.createPartner({ name: 'Other' })).entity;
    await rejects(r.updateActivation(other.id, a.code, { description: 'mine' }), 'NOT_FOUND', 'code');
    await rejects(r.updateActivation(partner.id, 'ZZZZZZZZZZZZZZZZ', { description: 'x' }), 'NOT_FOUND', 'code');
    await rejects(r.updateActivation(partner.id, 'not a code', { description: 'x' }), 'NOT_FOUND', 'code');
    await rejects(r.updateActivation('nope', a.code, { description: 'x' }), 'VALIDATION_FAILED', 'partnerId');
  });

  test('used activations cannot be changed or deleted; unused ones are deleted whole', async ({ r, h }) => {
    const { partner, user, ground, input } = await world(r);
    const a = await r.createActivation(partner.id, input('del-1'));
    const b = await r.createActivation(partner.id, input('del-2'));
    await r.activate({ code: a.code, option: a.options[0].id, groundId: ground.id, userId: user.id });
    await rejects(r.updateActivation(partner.id, a.code, { description: 'late' }), 'CONFLICT', 'code');
    await rejects(r.deleteActivation(partner.id, a.code), 'CONFLICT', 'code');
    assert.is((await r.getActivation(partner.id, a.code))?.status, 'used');
    const other = (await r.createPartner({ name: 'Other' })).entity;
    assert.is(await r.deleteActivation(other.id, b.code), false, "another partner's code reads as absent");
    assert.is(await r.deleteActivation(partner.id, b.code.toLowerCase()), true);
    assert.is(await r.deleteActivation(partner.id, b.code), false);
    assert.is(await r.getActivation(partner.id, b.code), undefined);
    assert.equal(await h.sql('SELECT count(*)::int AS n FROM activation_options WHERE activation_code = $1', [b.code]), [{ n: 0 }]);
    for (const bad of ['', 'x', null, 5]) assert.is(await r.deleteActivation(partner.id, any(bad)), false);
    // The hardware id is free again: a new code can be made for it.
    const again = await r.createActivation(partner.id, input('del-2'));
    assert.is.not(again.code, b.code);
  });

  test('a change racing a redemption: the redemption sees the new options or the change sees CONFLICT', async ({ r }) => {
    const { partner, user, ground, input } = await world(r);
    const a = await r.createActivation(partner.id, input('race-1'));
    const [redeemed, changed] = await Promise.allSettled([
      r.activate({ code: a.code, option: a.options[0].id, groundId: ground.id, userId: user.id }),
      r.updateActivation(partner.id, a.code, { options: input('race-1').options }),
    ]);
    if (redeemed.status === 'fulfilled') {
      assert.is(changed.status, 'rejected');
      assert.is((changed as PromiseRejectedResult).reason.code, 'CONFLICT');
    } else {
      // The change won and replaced the option ids: the old option is no longer one of the activation's.
      assert.is(changed.status, 'fulfilled');
      assert.is(redeemed.reason.code, 'VALIDATION_FAILED');
    }
  });

  return test;
}
