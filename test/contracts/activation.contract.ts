/**
 * Contract of the registry's activation operations (device types, activations, redeeming codes;
 * spec §2.5–2.8, §4.5–4.6). Runs on the same harness as registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { DeviceTypeDefinition, NewActivation, Registry } from '../../engine/ports/registry.ts';
import { ACTIVATION_CODE_PATTERN } from '../../schemas/registry.ts';
import { any, ID_RE, registrySuite, rejects, type RegistryFactory } from './registry.contract.ts';

const CODE_RE = new RegExp(ACTIVATION_CODE_PATTERN);
/** spec §2.8: a LoRaWAN network's data answers these keys, null when not supplied. */
const LORA = { activationMethod: 'abp', appEui: null, devAddr: null, gatewayEui: null, appSKey: null, nwkSKey: null };

const tracker: DeviceTypeDefinition = {
  description: 'GPS tracker',
  assets: [
    { name: 'location', is: 'sensor', profile: { type: 'object', properties: { latitude: { type: 'number' }, longitude: { type: 'number' } } } },
    { name: 'buzzer', is: 'actuator', profile: { type: 'boolean' } },
  ],
  payload: { format: 'cbor' },
};

export function activationContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<Registry>(`activation contract: ${name}`, factory);

  async function world(r: Registry) {
    const partner = (await r.createPartner({ name: 'Acme' })).entity;
    const user = (await r.createUser({ name: 'installer' })).entity;
    const ground = await r.createGround({ name: 'site', userId: user.id });
    // The type most tests name: published, without assets.
    await r.publishDeviceType(partner.id, 't', { assets: [] });
    return { partner, user, ground };
  }

  function lora(devEui: string, type: string, extra: Partial<NewActivation> = {}): NewActivation {
    return {
      description: 'tracker #1',
      hardware: { id: devEui },
      options: [{ description: 'TTN', device: { type }, network: { networkId: 'thethingsnetwork', data: { devEui, applicationId: 'fleet' } } }],
      ...extra,
    };
  }

  test('publishDeviceType: versions 1, 2, … resolved by number, :latest or no suffix', async ({ r, clock }) => {
    const { partner } = await world(r);
    clock.advance(1);
    const v1 = await r.publishDeviceType(partner.id, 'tracker', tracker);
    assert.equal(v1, { partnerId: partner.id, name: 'tracker', version: 1, ref: `${partner.id}/tracker:1`, definition: tracker, publishedAt: clock.now() });
    const v2 = await r.publishDeviceType(partner.id, 'tracker', { assets: [] });
    assert.is(v2.version, 2);
    assert.equal(await r.resolveDeviceType(`${partner.id}/tracker:1`), v1);
    assert.equal(await r.resolveDeviceType(`${partner.id}/tracker:latest`), v2);
    assert.equal(await r.resolveDeviceType(`${partner.id}/tracker`), v2);
    assert.is(await r.resolveDeviceType(`${partner.id}/tracker:3`), undefined);
    assert.is(await r.resolveDeviceType(`${partner.id}/other`), undefined);
    for (const bad of ['', 'tracker', `${partner.id}/tracker:v1`, 'acme/tracker', `${partner.id}/../x`, 5, null]) assert.is(await r.resolveDeviceType(any(bad)), undefined);
    const other = (await r.createPartner({ name: 'other' })).entity;
    assert.is((await r.publishDeviceType(other.id, 'tracker', { assets: [] })).version, 1, 'versions count per partner');
  });

  test('publishDeviceType: bad input is refused', async ({ r }) => {
    const { partner } = await world(r);
    await rejects(r.publishDeviceType('A'.repeat(22), 'x', { assets: [] }), 'NOT_FOUND', 'partnerId');
    await rejects(r.publishDeviceType('nope', 'x', { assets: [] }), 'VALIDATION_FAILED', 'partnerId');
    for (const bad of ['', 'a/b', 'a:1', ' x', 'x'.repeat(65)]) await rejects(r.publishDeviceType(partner.id, bad, { assets: [] }), 'VALIDATION_FAILED', 'name');
    await rejects(r.publishDeviceType(partner.id, 'x', {} as never), 'VALIDATION_FAILED', 'definition.assets');
    await rejects(r.publishDeviceType(partner.id, 'x', { assets: [{ name: 'a/b', is: 'sensor' }] }), 'VALIDATION_FAILED', 'definition.assets.0.name');
    await rejects(r.publishDeviceType(partner.id, 'x', { assets: [{ name: 'a', is: 'sensor' }, { name: 'a', is: 'sensor' }] }), 'VALIDATION_FAILED', 'definition.assets');
    await rejects(r.publishDeviceType(partner.id, 'x', { assets: [], payload: { format: 'xml' as never } }), 'VALIDATION_FAILED', 'definition.payload.format');
    await rejects(r.publishDeviceType(partner.id, 'x', { assets: [{ name: 'a', is: 'sensor', profile: { type: 'float' } }] }), 'VALIDATION_FAILED', 'definition.assets.0.profile');
    await rejects(r.publishDeviceType(partner.id, 'x', { assets: [], payload: { format: 'binary' } }), 'VALIDATION_FAILED', 'definition.payload.conversion');
    await rejects(r.publishDeviceType(partner.id, 'x', { assets: [], payload: { format: 'cbor', conversion: { sense: [] } } }), 'VALIDATION_FAILED', 'definition.payload.conversion');
    await rejects(r.publishDeviceType(partner.id, 'x', { assets: [], payload: { format: 'binary', conversion: { sense: [{ asset: 't', value: { byte: 'zero' } }] } } }), 'VALIDATION_FAILED');
    assert.is(await r.resolveDeviceType(`${partner.id}/x`), undefined);
  });

  test('concurrent publications get distinct consecutive versions', async ({ r }) => {
    const { partner } = await world(r);
    const versions = await Promise.all(Array.from({ length: 5 }, () => r.publishDeviceType(partner.id, 'busy', { assets: [] })));
    assert.equal(versions.map((v) => v.version).sort(), [1, 2, 3, 4, 5]);
  });

  test('createActivation: spec-shaped, unused, :latest appended, readable by its partner only', async ({ r, clock }) => {
    const { partner } = await world(r);
    await r.publishDeviceType(partner.id, 'tracker', tracker);
    clock.advance(7);
    const input = lora('0004a30b001c0530', `${partner.id}/tracker`);
    input.options.push({ description: '', device: { type: `${partner.id}/tracker:1` }, network: { networkId: 'orangebe', data: {} } });
    const a = await r.createActivation(partner.id, input);
    assert.match(a.code, CODE_RE);
    assert.is(a.partnerId, partner.id);
    assert.is(a.status, 'unused');
    assert.is(a.activatedDeviceId, null);
    assert.is(a.activatedOptionId, null);
    assert.equal(a.hardware, { id: '0004a30b001c0530' });
    assert.is(a.description, 'tracker #1');
    assert.is(a.createdAt, clock.now());
    assert.is(a.options.length, 2);
    for (const o of a.options) assert.ok(ID_RE.test(o.id));
    assert.is(a.options[0].device.type, `${partner.id}/tracker:latest`, 'spec §2.7: :latest when no version was given');
    assert.equal(a.options[0].network, { networkId: 'thethingsnetwork', data: { devEui: '0004A30B001C0530', applicationId: 'fleet', ...LORA } });
    assert.equal(a.options[1], { id: a.options[1].id, description: '', device: { type: `${partner.id}/tracker:1` }, network: { networkId: 'orangebe', data: {} } });
    assert.equal(await r.getActivation(partner.id, a.code), a);
    const typed = a.code.toLowerCase().replace(/(.{4})(?!$)/g, '$1-');
    assert.equal(await r.getActivation(partner.id, typed), a, 'lower case with dashes');
    assert.equal(await r.findActivationByHardware(partner.id, '0004a30b001c0530'), a);
    const other = (await r.createPartner({ name: 'other' })).entity;
    assert.is(await r.getActivation(other.id, a.code), undefined);
    assert.is(await r.findActivationByHardware(other.id, '0004a30b001c0530'), undefined);
    for (const bad of ['', 'x', 'U'.repeat(16), "'; --", 7, null]) assert.is(await r.getActivation(partner.id, any(bad)), undefined);
    assert.is(await r.getActivation('bad', a.code), undefined);
  });

  test('createActivation: a type with only a draft gets the draft published as version 1 first; unknown names are refused', async ({ r, h }) => {
    const { partner } = await world(r);
    await rejects(r.createActivation(partner.id, lora('00000000000000A1', `${partner.id}/fresh`)), 'VALIDATION_FAILED', 'options.0.device.type');
    assert.is(await r.getDeviceType(partner.id, 'fresh'), undefined, 'no empty type is made up for an unknown name');
    await r.saveDeviceTypeDraft(partner.id, 'fresh', tracker);
    await rejects(r.createActivation(partner.id, lora('00000000000000A1', `${partner.id}/fresh:1`)), 'VALIDATION_FAILED', 'options.0.device.type');
    const a = await r.createActivation(partner.id, lora('00000000000000A1', `${partner.id}/fresh`));
    assert.is(a.options[0].device.type, `${partner.id}/fresh:latest`);
    const v = await r.resolveDeviceType(`${partner.id}/fresh`);
    assert.is(v?.version, 1);
    assert.equal(v?.definition, tracker);
    // Two options naming the same draft-only type, and a second activation: still one version.
    await r.saveDeviceTypeDraft(partner.id, 'twice', { assets: [] });
    const twice = lora('00000000000000A2', `${partner.id}/twice`);
    twice.options.push({ device: { type: `${partner.id}/twice:latest` }, network: { networkId: 'orangebe', data: {} } });
    await Promise.all([r.createActivation(partner.id, twice), r.createActivation(partner.id, lora('00000000000000A3', `${partner.id}/twice`))]);
    assert.equal((await r.getDeviceType(partner.id, 'twice'))?.versions.map((x) => x.version), [1]);
    assert.equal(await h.sql(`SELECT count(*)::int AS n FROM device_type_versions v JOIN device_types t ON t.id = v.device_type_id WHERE t.name = 'twice'`), [{ n: 1 }]);
  });

  test('createActivation: networks by alias are stored by id with their keys checked', async ({ r }) => {
    const { partner } = await world(r);
    const a = await r.createActivation(partner.id, {
      hardware: { id: 'multi' },
      options: [
        { device: { type: `${partner.id}/t` }, network: { networkId: 'net1', data: { devEui: '00-04-a3-0b-00-1c-05-31', applicationId: 'fleet', devAddr: '26011bda' } } },
        { device: { type: `${partner.id}/t` }, network: { networkId: 'net2', data: { devEui: '0004a30b001c0531' } } },
        { device: { type: `${partner.id}/t` }, network: { networkId: 'net7', data: { imei: '356938035643809', imsi: '204080123456789' } } },
        { device: { type: `${partner.id}/t` }, network: { networkId: 'net8', data: {} } },
      ],
    });
    assert.equal(a.options.map((o) => o.network), [
      { networkId: 'thethingsnetwork', data: { devEui: '0004A30B001C0531', applicationId: 'fleet', ...LORA, devAddr: '26011BDA' } },
      { networkId: 'loriot', data: { devEui: '0004A30B001C0531', ...LORA } },
      { networkId: 'tmobilenl', data: { imei: '356938035643809', imsi: '204080123456789' } },
      { networkId: 'orangebe', data: {} },
    ]);
    const bad: Array<[string, unknown]> = [
      ['options.0.network.networkId', { networkId: 'net9', data: {} }],
      ['options.0.network.data.applicationId', { networkId: 'net1', data: { devEui: '0004A30B001C0532' } }],
      ['options.0.network.data.imsi', { networkId: 'net7', data: { imei: '356938035643809' } }],
      ['options.0.network.data.devEui', { networkId: 'net8', data: { devEui: '0004A30B001C0532' } }],
    ];
    for (const [field, network] of bad) {
      await rejects(r.createActivation(partner.id, { hardware: { id: 'bad-net' }, options: [{ device: { type: `${partner.id}/t` }, network } as never] }), 'VALIDATION_FAILED', field);
    }
    assert.is(await r.findActivationByHardware(partner.id, 'bad-net'), undefined);
  });

  test('createActivation: foreign types, missing versions, duplicate hardware and bad input are refused whole', async ({ r, h }) => {
    const { partner } = await world(r);
    const other = (await r.createPartner({ name: 'rival' })).entity;
    await r.publishDeviceType(other.id, 'theirs', { assets: [] });
    await rejects(r.createActivation(partner.id, lora('00000000000000B1', `${other.id}/theirs`)), 'FORBIDDEN', 'options.0.device.type');
    await rejects(r.createActivation(partner.id, lora('00000000000000B1', `${partner.id}/ghost:4`)), 'VALIDATION_FAILED', 'options.0.device.type');
    await rejects(r.createActivation(partner.id, lora('00000000000000B1', `${partner.id}/t:2`)), 'VALIDATION_FAILED', 'options.0.device.type');
    // The first option would publish the draft of `halfway`; the second fails: nothing of it may remain.
    await r.saveDeviceTypeDraft(partner.id, 'halfway', { assets: [] });
    const mixed = lora('00000000000000B2', `${partner.id}/halfway`);
    mixed.options.push({ description: '', device: { type: `${partner.id}/ghost:2` }, network: { networkId: 'orangebe', data: {} } });
    await rejects(r.createActivation(partner.id, mixed), 'VALIDATION_FAILED', 'options.1.device.type');
    assert.is(await r.resolveDeviceType(`${partner.id}/halfway`), undefined);
    assert.is(await r.findActivationByHardware(partner.id, '00000000000000B2'), undefined);
    await r.createActivation(partner.id, lora('00000000000000B3', `${partner.id}/t`));
    await rejects(r.createActivation(partner.id, lora('00000000000000B3', `${partner.id}/t`)), 'CONFLICT', 'hardware.id');
    await r.createActivation(other.id, lora('00000000000000B3', `${other.id}/theirs`));
    const before = await h.sql('SELECT count(*)::int AS n FROM activations');
    const bad: Array<[string, unknown]> = [
      ['options', { hardware: { id: 'h1' }, options: [] }],
      ['options', { hardware: { id: 'h1' } }],
      ['hardware.id', { hardware: { id: '' }, options: lora('x', `${partner.id}/t`).options }],
      ['hardware.id', { hardware: {}, options: lora('x', `${partner.id}/t`).options }],
      ['options.0.device.type', { hardware: { id: 'h1' }, options: [{ device: { type: 'nope' }, network: { networkId: 'orangebe', data: {} } }] }],
      ['options.0.network.networkId', { hardware: { id: 'h1' }, options: [{ device: { type: `${partner.id}/t` }, network: { networkId: 'NET 1', data: {} } }] }],
      ['options.0.network.data.devEui', { hardware: { id: 'h1' }, options: [{ device: { type: `${partner.id}/t` }, network: { networkId: 'loriot', data: { devEui: 'xyz' } } }] }],
    ];
    for (const [field, input] of bad) await rejects(r.createActivation(partner.id, input as NewActivation), 'VALIDATION_FAILED', field);
    await rejects(r.createActivation('bad', lora('00000000000000B4', `${partner.id}/t`)), 'VALIDATION_FAILED', 'partnerId');
    const ghost = 'A'.repeat(22);
    await rejects(r.createActivation(ghost, lora('00000000000000B4', `${ghost}/t`)), 'NOT_FOUND', 'partnerId');
    assert.equal(await h.sql('SELECT count(*)::int AS n FROM activations'), before);
  });

  test('activate: the device appears in the ground from the latest version, the code becomes used', async ({ r, clock }) => {
    const { partner, user, ground } = await world(r);
    await r.publishDeviceType(partner.id, 'tracker', { assets: [] });
    const a = await r.createActivation(partner.id, lora('0004A30B001C0999', `${partner.id}/tracker`));
    const v2 = await r.publishDeviceType(partner.id, 'tracker', tracker);
    clock.advance(11);
    const typed = a.code.toLowerCase().replace(/(.{4})(?!$)/g, '$1 ');
    assert.equal(await r.findUnusedActivation(typed), a, 'the code as a user types it, any partner');
    for (const bad of ['', 'x', 'U'.repeat(16), "'; --", 7, null]) assert.is(await r.findUnusedActivation(any(bad)), undefined);
    const { activation, device } = await r.activate({ code: a.code.toLowerCase(), option: a.options[0].id, groundId: ground.id, userId: user.id });
    assert.is(await r.findUnusedActivation(a.code), undefined, 'a used code is no longer offered');
    const d = device.device;
    assert.is(d.groundId, ground.id);
    assert.is(d.name, '0004A30B001C0999', 'spec §2.6: the hardware id names the device');
    assert.is(d.description, 'tracker #1');
    assert.is(d.deviceType, v2.ref, ':latest resolved when redeemed');
    assert.equal(d.network, { networkId: 'thethingsnetwork', data: { devEui: '0004A30B001C0999', applicationId: 'fleet', ...LORA } });
    assert.equal(d.payload, { format: 'cbor' });
    assert.equal(d.assets.map((x) => [x.name, x.is, x.profile]), [['buzzer', 'actuator', { type: 'boolean' }], ['location', 'sensor', tracker.assets[0].profile]]);
    assert.is(d.createdAt, clock.now());
    assert.equal(await r.authenticate(device.token), { scope: 'device', subjectId: d.id });
    assert.equal(await r.getDevice(d.id), d);
    assert.is((await r.findDeviceByNetwork('thethingsnetwork', '0004a30b001c0999'))?.id, d.id);
    assert.equal(activation, { ...a, status: 'used', activatedDeviceId: d.id, activatedOptionId: a.options[0].id });
    assert.equal(await r.getActivation(partner.id, a.code), activation);
    await rejects(r.activate({ code: a.code, option: a.options[0].id, groundId: ground.id, userId: user.id }), 'CONFLICT', 'code');
  });

  test('activate: membership, unknown codes and options, taken names; a failed attempt leaves the code unused', async ({ r, h }) => {
    const { partner, user, ground } = await world(r);
    const stranger = (await r.createUser({ name: 'stranger' })).entity;
    const a = await r.createActivation(partner.id, lora('00000000000000C1', `${partner.id}/t`));
    const b = await r.createActivation(partner.id, lora('00000000000000C2', `${partner.id}/t`));
    const req = { code: a.code, option: a.options[0].id, groundId: ground.id, userId: user.id };
    await rejects(r.activate({ ...req, userId: stranger.id }), 'FORBIDDEN', 'groundId');
    await rejects(r.activate({ ...req, groundId: 'A'.repeat(22) }), 'FORBIDDEN', 'groundId');
    await rejects(r.activate({ ...req, code: 'ZZZZZZZZZZZZZZZZ' }), 'NOT_FOUND', 'code');
    await rejects(r.activate({ ...req, code: 'not a code at all' }), 'NOT_FOUND', 'code');
    await rejects(r.activate({ ...req, option: b.options[0].id }), 'VALIDATION_FAILED', 'option');
    for (const field of ['option', 'groundId', 'userId'] as const) {
      for (const bad of ['', 'short', "' OR 1=1 --", null]) await rejects(r.activate({ ...req, [field]: bad } as never), 'VALIDATION_FAILED', field);
    }
    await rejects(r.activate({ ...req, code: 5 } as never), 'VALIDATION_FAILED', 'code');
    // A member or one of the ground's keys redeems it: exactly one of them; a key unknown there is refused.
    const { userId: _member, ...byNoOne } = req;
    await rejects(r.activate(byNoOne), 'VALIDATION_FAILED', 'userId');
    await rejects(r.activate({ ...req, keyId: 'A'.repeat(22) }), 'VALIDATION_FAILED', 'userId');
    await rejects(r.activate({ ...byNoOne, keyId: 'A'.repeat(22) }), 'FORBIDDEN', 'groundId');
    await rejects(r.activate(undefined as never), 'VALIDATION_FAILED');
    // A device named like the hardware id already exists in the ground: CONFLICT, code stays unused.
    await r.createDevice({ groundId: ground.id, name: '00000000000000C1' });
    await rejects(r.activate(req), 'CONFLICT', 'name');
    assert.is((await r.getActivation(partner.id, a.code))?.status, 'unused');
    assert.equal(await h.sql('SELECT count(*)::int AS n FROM devices WHERE ground_id = $1', [ground.id]), [{ n: 1 }]);
    const elsewhere = await r.createGround({ name: 'elsewhere', userId: user.id });
    const done = await r.activate({ ...req, groundId: elsewhere.id });
    assert.is(done.activation.status, 'used');
  });

  test('concurrent redemptions of one code: one device, the others CONFLICT', async ({ r, h }) => {
    const { partner, user, ground } = await world(r);
    // No devEui: only the code's row lock can keep two grounds from each getting the device.
    const a = await r.createActivation(partner.id, { hardware: { id: 'imei-356938035643809' }, options: [{ device: { type: `${partner.id}/t` }, network: { networkId: 'orangebe', data: {} } }] });
    const grounds = [ground, ...(await Promise.all([1, 2, 3].map((i) => r.createGround({ name: `g${i}`, userId: user.id }))))];
    const settled = await Promise.allSettled(grounds.map((g) => r.activate({ code: a.code, option: a.options[0].id, groundId: g.id, userId: user.id })));
    const won = settled.filter((s) => s.status === 'fulfilled');
    assert.is(won.length, 1);
    for (const s of settled) if (s.status === 'rejected') assert.is((s.reason as FleetError).code, 'CONFLICT');
    assert.equal(await h.sql(`SELECT count(*)::int AS n FROM devices WHERE name = 'imei-356938035643809'`), [{ n: 1 }]);
  });

  return test;
}
