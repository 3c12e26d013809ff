/**
 * Contract of the registry's device type drafts and versions (spec §2.7, §9): save a draft, publish
 * it as immutable versions 1, 2, …, read and list with versions. Runs on the harness of
 * registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { DeviceTypeDefinition, DeviceTypeRegistry, PrincipalRegistry } from '../../engine/ports/registry.ts';
import { any, registrySuite, rejects, START, type RegistryFactory } from './registry.contract.ts';

const sensor: DeviceTypeDefinition = {
  title: 'Room sensor',
  description: 'temperature and humidity',
  assets: [
    { name: 'temperature', title: 'Temperature', is: 'sensor', profile: { type: 'number', unit: '°C' } },
    { name: 'humidity', is: 'sensor', profile: { type: 'integer', minimum: 0, maximum: 100 } },
  ],
  payload: { format: 'binary', conversion: { sense: [{ asset: 'temperature', value: { byte: 0, bytelength: 2, signed: true, calculation: 'val / 100' } }, { asset: 'humidity', value: { byte: 2 } }] } },
};

export function deviceTypesContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<DeviceTypeRegistry & Pick<PrincipalRegistry, 'createPartner'>>(`device types contract: ${name}`, factory);

  test('a draft is saved, replaced, and published as versions 1, 2, … that never change', async ({ r, clock }) => {
    const partner = (await r.createPartner({ name: 'Acme' })).entity;
    clock.advance(1);
    const saved = await r.saveDeviceTypeDraft(partner.id, 'room', sensor);
    assert.is(saved.created, true);
    assert.equal(saved.deviceType, {
      partnerId: partner.id, name: 'room', ref: `${partner.id}/room`, draft: sensor, versions: [], latest: null,
      createdAt: clock.now(), updatedAt: clock.now(),
    });
    assert.is(await r.resolveDeviceType(`${partner.id}/room`), undefined, 'a draft is not a published version');
    clock.advance(1);
    const v1 = await r.publishDeviceTypeDraft(partner.id, 'room');
    assert.equal(v1, { partnerId: partner.id, name: 'room', version: 1, ref: `${partner.id}/room:1`, definition: sensor, publishedAt: clock.now() });
    clock.advance(1);
    const edited: DeviceTypeDefinition = { ...sensor, title: 'Room sensor v2', payload: { format: 'cayenne' } };
    const again = await r.saveDeviceTypeDraft(partner.id, 'room', edited);
    assert.is(again.created, false);
    assert.equal(again.deviceType.draft, edited);
    assert.is(again.deviceType.createdAt, START + 1);
    assert.is(again.deviceType.updatedAt, clock.now());
    assert.equal(await r.resolveDeviceType(`${partner.id}/room:1`), v1, 'publishing froze version 1');
    const v2 = await r.publishDeviceTypeDraft(partner.id, 'room');
    assert.is(v2.version, 2);
    assert.equal(v2.definition, edited);
    assert.equal(await r.resolveDeviceType(`${partner.id}/room:latest`), v2);
    const read = await r.getDeviceType(partner.id, 'room');
    assert.equal(read?.versions, [
      { version: 1, ref: `${partner.id}/room:1`, publishedAt: START + 2 },
      { version: 2, ref: `${partner.id}/room:2`, publishedAt: clock.now() },
    ]);
    assert.is(read?.latest, 2);
    // publishDeviceType (definition given) also becomes the draft.
    const v3 = await r.publishDeviceType(partner.id, 'room', { assets: [] });
    assert.is(v3.version, 3);
    assert.equal((await r.getDeviceType(partner.id, 'room'))?.draft, { assets: [] });
  });

  test('list by name with versions; another partner sees none of it', async ({ r }) => {
    const partner = (await r.createPartner({ name: 'Lister' })).entity;
    const other = (await r.createPartner({ name: 'Other' })).entity;
    await r.saveDeviceTypeDraft(partner.id, 'zeta', { assets: [] });
    await r.saveDeviceTypeDraft(partner.id, 'Alpha', { assets: [] });
    await r.saveDeviceTypeDraft(partner.id, 'beta', { assets: [] });
    await r.publishDeviceTypeDraft(partner.id, 'beta');
    await r.saveDeviceTypeDraft(other.id, 'beta', { assets: [] });
    const list = await r.listDeviceTypes(partner.id);
    assert.equal(list.map((t) => [t.name, t.latest]), [['Alpha', null], ['beta', 1], ['zeta', null]]);
    assert.equal((await r.listDeviceTypes(other.id)).map((t) => [t.name, t.latest]), [['beta', null]]);
    assert.is(await r.getDeviceType(other.id, 'zeta'), undefined);
    await rejects(r.publishDeviceTypeDraft(other.id, 'zeta'), 'NOT_FOUND', 'name');
    assert.equal(await r.listDeviceTypes('A'.repeat(22)), []);
    for (const bad of ['', 'nope', null, 5]) assert.equal(await r.listDeviceTypes(any(bad)), []);
    for (const bad of ['', 'a/b', 'x'.repeat(65), null]) assert.is(await r.getDeviceType(partner.id, any(bad)), undefined);
  });

  test('concurrent publications of one draft get consecutive versions', async ({ r }) => {
    const partner = (await r.createPartner({ name: 'Busy' })).entity;
    await r.saveDeviceTypeDraft(partner.id, 'busy', { assets: [] });
    const versions = await Promise.all(Array.from({ length: 6 }, () => r.publishDeviceTypeDraft(partner.id, 'busy')));
    assert.equal(versions.map((v) => v.version).sort(), [1, 2, 3, 4, 5, 6]);
  });

  test('bad drafts are refused naming the field, and change nothing', async ({ r }) => {
    const partner = (await r.createPartner({ name: 'Strict' })).entity;
    await r.saveDeviceTypeDraft(partner.id, 'kept', sensor);
    const bad: Array<[string, unknown]> = [
      ['assets', {}],
      ['assets.0.name', { assets: [{ name: 'a/b', is: 'sensor' }] }],
      ['assets.0.is', { assets: [{ name: 'a', is: 'gauge' }] }],
      ['assets', { assets: [{ name: 'a', is: 'sensor' }, { name: 'a', is: 'sensor' }] }],
      ['assets.1.profile', { assets: [{ name: 'a', is: 'sensor' }, { name: 'b', is: 'sensor', profile: { type: 'float' } }] }],
      ['payload.format', { assets: [], payload: { format: 'xml' } }],
      ['payload.conversion', { assets: [], payload: { format: 'binary' } }],
      ['payload.conversion', { assets: [], payload: { format: 'json', conversion: { sense: [] } } }],
      ['payload.conversion', { assets: [], payload: { format: 'binary', conversion: 'sense' } }],
      ['payload.conversion.sense[0].value.byte', { assets: [], payload: { format: 'binary', conversion: { sense: [{ asset: 't', value: { byte: 'zero' } }] } } }],
      ['title', { assets: [], title: 'x'.repeat(257) }],
      ['title', { assets: [], title: 'line\nbreak' }],
      ['description', { assets: [], description: 'x'.repeat(4097) }],
      ['assets', { assets: Array.from({ length: 257 }, (_, i) => ({ name: `a${i}`, is: 'sensor' })) }],
    ];
    for (const [field, draft] of bad) await rejects(r.saveDeviceTypeDraft(partner.id, 'kept', draft as DeviceTypeDefinition), 'VALIDATION_FAILED', field);
    for (const name of ['', 'a/b', 'a:1', ' x', 'x'.repeat(65)]) await rejects(r.saveDeviceTypeDraft(partner.id, name, { assets: [] }), 'VALIDATION_FAILED', 'name');
    await rejects(r.saveDeviceTypeDraft('nope', 'x', { assets: [] }), 'VALIDATION_FAILED', 'partnerId');
    await rejects(r.saveDeviceTypeDraft('A'.repeat(22), 'x', { assets: [] }), 'NOT_FOUND', 'partnerId');
    await rejects(r.publishDeviceTypeDraft('nope', 'kept'), 'VALIDATION_FAILED', 'partnerId');
    await rejects(r.publishDeviceTypeDraft(partner.id, 'a/b'), 'VALIDATION_FAILED', 'name');
    assert.equal((await r.getDeviceType(partner.id, 'kept'))?.draft, sensor);
  });

  return test;
}
