/**
 * Contract of the fleet port (engine/ports/fleetRegistry.ts): grounds and their members, devices
 * (network bindings, cascades, tokens revoked with them) and their assets, under concurrency. Runs
 * on the harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import { FleetError } from '../../engine/kernel/errors.ts';
import { registryDirectory, type FleetRegistry, type PrincipalRegistry } from '../../engine/ports/registry.ts';
import { any, ID_RE, MALFORMED_IDS, ownedGround, registrySuite, rejects, type RegistryFactory } from './registry.contract.ts';

export function fleetContract(name: string, factory: RegistryFactory) {
  // Principals for the users that are members and the device tokens the suite checks.
  const test = registrySuite<FleetRegistry & PrincipalRegistry>(`fleet contract: ${name}`, factory);

  test('grounds: the creating user is a member; membership is checked and idempotent', async ({ r, clock }) => {
    const ann = await r.createUser({ name: 'ann' });
    const bob = await r.createUser({ name: 'bob' });
    clock.advance(1);
    const g = await r.createGround({ name: 'Home', userId: ann.entity.id });
    assert.equal(g, { id: g.id, name: 'Home', createdAt: clock.now() });
    assert.equal(await r.getGround(g.id), g);
    assert.is(await r.isMember(g.id, ann.entity.id), true);
    assert.is(await r.isMember(g.id, bob.entity.id), false);
    await r.addMember(g.id, bob.entity.id);
    await r.addMember(g.id, bob.entity.id);
    assert.is(await r.isMember(g.id, bob.entity.id), true);
    clock.advance(1);
    const g2 = await r.createGround({ name: 'Office' });
    assert.is(await r.isMember(g2.id, ann.entity.id), false);
    await r.addMember(g2.id, ann.entity.id);
    assert.equal((await r.listGrounds(ann.entity.id)).map((x) => x.id), [g.id, g2.id]);
    assert.equal((await r.listGrounds(bob.entity.id)).map((x) => x.id), [g.id]);
    assert.is(await r.removeMember(g.id, bob.entity.id), true);
    assert.is(await r.removeMember(g.id, bob.entity.id), false);
    assert.is(await r.isMember(g.id, bob.entity.id), false);
    assert.equal(await r.listGrounds(bob.entity.id), []);
  });

  test('grounds: unknown users and grounds are NOT_FOUND, malformed ids VALIDATION_FAILED, nothing half made', async ({ r, h }) => {
    const ann = await r.createUser({ name: 'ann' });
    const g = await r.createGround({ name: 'g' });
    const ghost = 'A'.repeat(22);
    await rejects(r.createGround({ name: 'orphan-ground', userId: ghost }), 'NOT_FOUND', 'userId');
    assert.equal(await h.sql(`SELECT id FROM grounds WHERE name = 'orphan-ground'`), []);
    await rejects(r.addMember(g.id, ghost), 'NOT_FOUND', 'userId');
    await rejects(r.addMember(ghost, ann.entity.id), 'NOT_FOUND', 'groundId');
    for (const bad of MALFORMED_IDS) {
      await rejects(r.addMember(any(bad), ann.entity.id), 'VALIDATION_FAILED', 'groundId');
      await rejects(r.addMember(g.id, any(bad)), 'VALIDATION_FAILED', 'userId');
      if (bad !== undefined) await rejects(r.createGround({ name: 'x', userId: any(bad) }), 'VALIDATION_FAILED', 'userId');
      assert.is(await r.isMember(any(bad), ann.entity.id), false);
      assert.is(await r.isMember(g.id, any(bad)), false);
      assert.is(await r.removeMember(g.id, any(bad)), false);
      assert.equal(await r.listGrounds(any(bad)), []);
      assert.is(await r.getGround(any(bad)), undefined);
      assert.is(await r.getUser(any(bad)), undefined);
      assert.is(await r.getPartner(any(bad)), undefined);
    }
  });

  test('createDevice: device, assets and token in one go, with defaults', async ({ r, clock }) => {
    const { ground: g } = await ownedGround(r);
    clock.advance(10);
    const created = await r.createDevice({
      groundId: g.id,
      name: '00:1A:2B:3C:4D:5E',
      description: 'on the roof',
      deviceType: 'acme/tracker:3',
      payload: { format: 'binary', conversion: { sense: [{ asset: 'temp', byte: 0, type: 'integer' }] } },
      assets: [
        { name: 'temp', is: 'sensor', title: 'Temperature', profile: { type: 'number', unit: '°C' } },
        { name: 'led', is: 'actuator', description: 'status light', profile: { type: 'boolean' } },
        { name: 'Z_9.x-y', is: 'virtual' },
      ],
    });
    const d = created.device;
    assert.ok(ID_RE.test(d.id));
    assert.is(d.groundId, g.id);
    assert.is(d.name, '00:1A:2B:3C:4D:5E');
    assert.is(d.title, '00:1A:2B:3C:4D:5E', 'title defaults to the name');
    assert.is(d.description, 'on the roof');
    assert.is(d.deviceType, 'acme/tracker:3');
    assert.equal(d.payload, { format: 'binary', conversion: { sense: [{ asset: 'temp', byte: 0, type: 'integer' }] } });
    assert.is(d.network, undefined);
    assert.is(d.createdAt, clock.now());
    assert.equal(d.assets.map((a) => a.name), ['Z_9.x-y', 'led', 'temp'], 'assets by name, byte order');
    const led = d.assets.find((a) => a.name === 'led')!;
    assert.equal(led, { id: led.id, deviceId: d.id, name: 'led', title: 'led', description: 'status light', is: 'actuator', profile: { type: 'boolean' }, createdAt: clock.now() });
    assert.equal(d.assets.find((a) => a.name === 'Z_9.x-y')!.profile, {});
    for (const a of d.assets) assert.ok(ID_RE.test(a.id));
    assert.match(created.token, /^fsd_[0-9A-Za-z]{43}$/);
    assert.equal(await r.authenticate(created.token), { scope: 'device', subjectId: d.id });
    assert.equal(await r.getDevice(d.id), d);
    const bare = await r.createDevice({ groundId: g.id, name: 'bare' });
    assert.equal(bare.device.assets, []);
    assert.is(bare.device.deviceType, undefined);
    assert.is(bare.device.payload, undefined);
    assert.equal(Object.keys(bare.device).sort(), ['assets', 'createdAt', 'description', 'groundId', 'id', 'name', 'title']);
  });

  test('createDevice: duplicate name in a ground is a CONFLICT, other grounds are independent', async ({ r }) => {
    const { ground: g1 } = await ownedGround(r, 'one');
    const { ground: g2 } = await ownedGround(r, 'two');
    await r.createDevice({ groundId: g1.id, name: 'meter' });
    await rejects(r.createDevice({ groundId: g1.id, name: 'meter' }), 'CONFLICT', 'name');
    await r.createDevice({ groundId: g2.id, name: 'meter' });
    await rejects(r.createDevice({ groundId: 'A'.repeat(22), name: 'meter' }), 'NOT_FOUND', 'groundId');
    assert.equal((await r.listDevices(g1.id)).map((d) => d.name), ['meter']);
  });

  test('createDevice: bad input is VALIDATION_FAILED and stores nothing', async ({ r, h }) => {
    const { ground: g } = await ownedGround(r);
    const bad: Array<[string, Record<string, unknown>]> = [
      ['groundId', { groundId: 'nope', name: 'x' }],
      ['name', { name: '' }],
      ['name', { name: 'nul\u0000' }],
      ['title', { name: 'x', title: 'x'.repeat(257) }],
      ['deviceType', { name: 'x', deviceType: 'no-slash' }],
      ['deviceType', { name: 'x', deviceType: 'acme/tracker:v2' }],
      ['payload.format', { name: 'x', payload: { format: 'xml' } }],
      ['network.networkId', { name: 'x', network: { networkId: 'Bad Net', data: {} } }],
      ['network.data', { name: 'x', network: { networkId: 'loriot', data: [] } }],
      ['network.data.devEui', { name: 'x', network: { networkId: 'loriot', data: { devEui: 'not-hex' } } }],
      ['network.data.devEui', { name: 'x', network: { networkId: 'loriot', data: { devEui: '0004A30B001C05' } } }],
      ['network.data.devEui', { name: 'x', network: { networkId: 'loriot', data: { devEui: 4 } } }],
      ['network.data', { name: 'x', network: { networkId: 'loriot', data: { blob: 'x'.repeat(5000) } } }],
      ['assets', { name: 'x', assets: {} }],
      ['assets', { name: 'x', assets: [{ name: 'a', is: 'sensor' }, { name: 'a', is: 'actuator' }] }],
      ['assets.0.name', { name: 'x', assets: [{ name: 'a/b', is: 'sensor' }] }],
      ['assets.0.name', { name: 'x', assets: [{ name: '+', is: 'sensor' }] }],
      ['assets.0.name', { name: 'x', assets: [{ name: 'has space', is: 'sensor' }] }],
      ['assets.0.name', { name: 'x', assets: [{ name: '.hidden', is: 'sensor' }] }],
      ['assets.0.name', { name: 'x', assets: [{ name: 'x'.repeat(65), is: 'sensor' }] }],
      ['assets.0.is', { name: 'x', assets: [{ name: 'a', is: 'switch' }] }],
      ['assets.0.is', { name: 'x', assets: [{ name: 'a' }] }],
      ['assets.0.profile', { name: 'x', assets: [{ name: 'a', is: 'sensor', profile: 'number' }] }],
      ['assets.0.profile', { name: 'x', assets: [{ name: 'a', is: 'sensor', profile: { enum: ['x'.repeat(70_000)] } }] }],
    ];
    const before = await h.sql('SELECT (SELECT count(*) FROM devices)::int AS d, (SELECT count(*) FROM assets)::int AS a, (SELECT count(*) FROM tokens)::int AS t');
    for (const [field, input] of bad) {
      await rejects(r.createDevice({ groundId: g.id, ...input } as never), 'VALIDATION_FAILED', field);
    }
    await rejects(r.createDevice(undefined as never), 'VALIDATION_FAILED');
    // Passes the schema, refused by the database (jsonb has no \u0000): the whole transaction rolls back.
    await rejects(r.createDevice({ groundId: g.id, name: 'late', assets: [{ name: 'ok', is: 'sensor' }, { name: 'bad', is: 'sensor', profile: { title: 'a\u0000b' } }] }), 'VALIDATION_FAILED');
    assert.equal(await h.sql('SELECT (SELECT count(*) FROM devices)::int AS d, (SELECT count(*) FROM assets)::int AS a, (SELECT count(*) FROM tokens)::int AS t'), before);
  });

  test('network binding: devEui normalised, looked up in any spelling, unique per network', async ({ r }) => {
    const { ground: g } = await ownedGround(r);
    const d = await r.createDevice({ groundId: g.id, name: 'lora', network: { networkId: 'thethingsnetwork', data: { devEui: '00-04-a3-0b-00-1c-05-30', applicationId: 'app1' } } });
    assert.equal(d.device.network, { networkId: 'thethingsnetwork', data: { devEui: '0004A30B001C0530', applicationId: 'app1' } });
    for (const spelling of ['0004A30B001C0530', '0004a30b001c0530', '00:04:A3:0B:00:1C:05:30']) {
      assert.is((await r.findDeviceByNetwork('thethingsnetwork', spelling))?.id, d.device.id, spelling);
    }
    assert.is(await r.findDeviceByNetwork('loriot', '0004A30B001C0530'), undefined);
    assert.is(await r.findDeviceByNetwork('thethingsnetwork', '0004A30B001C0531'), undefined);
    for (const bad of ['', 'zz', '0004A30B001C0530FF', "' OR 1=1", undefined]) assert.is(await r.findDeviceByNetwork('thethingsnetwork', any(bad)), undefined);
    assert.is(await r.findDeviceByNetwork(any('Bad Net'), '0004A30B001C0530'), undefined);
    await rejects(r.createDevice({ groundId: g.id, name: 'copy', network: { networkId: 'thethingsnetwork', data: { devEui: '0004a30b001c0530' } } }), 'CONFLICT', 'network');
    const other = await r.createDevice({ groundId: g.id, name: 'copy', network: { networkId: 'loriot', data: { devEui: '0004a30b001c0530' } } });
    assert.is((await r.findDeviceByNetwork('loriot', '0004A30B001C0530'))?.id, other.device.id);
    const mobile = await r.createDevice({ groundId: g.id, name: 'nbiot', network: { networkId: 'tmobilenl', data: { imei: '356938035643809', imsi: '204080000000001' } } });
    assert.equal(mobile.device.network, { networkId: 'tmobilenl', data: { imei: '356938035643809', imsi: '204080000000001' } });
    const orange = await r.createDevice({ groundId: g.id, name: 'orange', network: { networkId: 'orangebe', data: {} } });
    assert.equal((await r.getDevice(orange.device.id))?.network, { networkId: 'orangebe', data: {} });
  });

  test('listDevices and updateDevice', async ({ r, clock }) => {
    const { ground: g } = await ownedGround(r);
    const a = await r.createDevice({ groundId: g.id, name: 'a' });
    clock.advance(1);
    const b = await r.createDevice({ groundId: g.id, name: 'b', assets: [{ name: 'x', is: 'sensor' }] });
    const listed = await r.listDevices(g.id);
    assert.equal(listed.map((d) => d.id), [a.device.id, b.device.id], 'oldest first');
    assert.is((listed[1] as { assets?: unknown }).assets, undefined, 'listed without assets');
    const updated = await r.updateDevice(a.device.id, { title: 'Kitchen', description: 'by the fridge' });
    const { assets: _assets, ...plain } = a.device;
    assert.equal(updated, { ...plain, title: 'Kitchen', description: 'by the fridge' });
    assert.is((await r.updateDevice(a.device.id, { name: 'a2' })).name, 'a2');
    assert.is((await r.getDevice(a.device.id))?.title, 'Kitchen', 'omitted fields kept');
    assert.equal(await r.updateDevice(a.device.id, {}), await r.updateDevice(a.device.id, {}));
    await rejects(r.updateDevice(a.device.id, { name: 'b' }), 'CONFLICT', 'name');
    await rejects(r.updateDevice('A'.repeat(22), { title: 't' }), 'NOT_FOUND', 'deviceId');
    for (const bad of MALFORMED_IDS) {
      await rejects(r.updateDevice(any(bad), { title: 't' }), 'VALIDATION_FAILED', 'deviceId');
      assert.is(await r.getDevice(any(bad)), undefined);
      assert.equal(await r.listDevices(any(bad)), []);
    }
    await rejects(r.updateDevice(a.device.id, { name: '' }), 'VALIDATION_FAILED', 'name');
    await rejects(r.updateDevice(a.device.id, { title: 'a\u0000' }), 'VALIDATION_FAILED', 'title');
    await rejects(r.updateDevice(a.device.id, null as never), 'VALIDATION_FAILED');
    assert.equal(await r.listDevices('A'.repeat(22)), []);
  });

  test('deleteDevice: cascades to assets and revokes the device tokens', async ({ r, h, clock }) => {
    const { ground: g } = await ownedGround(r);
    const keep = await r.createDevice({ groundId: g.id, name: 'keep', assets: [{ name: 'x', is: 'sensor' }] });
    const gone = await r.createDevice({ groundId: g.id, name: 'gone', assets: [{ name: 'x', is: 'sensor' }, { name: 'y', is: 'actuator' }] });
    const extra = await r.issueToken('device', gone.device.id);
    clock.advance(50);
    assert.is(await r.deleteDevice(gone.device.id), true);
    assert.is(await r.deleteDevice(gone.device.id), false);
    assert.is(await r.getDevice(gone.device.id), undefined);
    for (const a of gone.device.assets) assert.is(await r.getAssetById(a.id), undefined);
    assert.equal(await h.sql('SELECT id FROM assets WHERE device_id = $1', [gone.device.id]), []);
    assert.is(await r.authenticate(gone.token), undefined);
    assert.is(await r.authenticate(extra), undefined);
    const rows = await h.sql('SELECT revoked_at FROM tokens WHERE subject_id = $1', [gone.device.id]);
    assert.is(rows.length, 2);
    for (const row of rows) assert.is(Number(row.revoked_at), clock.now());
    assert.equal(await r.authenticate(keep.token), { scope: 'device', subjectId: keep.device.id });
    assert.is((await r.getDevice(keep.device.id))?.assets.length, 1);
    await rejects(r.issueToken('device', gone.device.id), 'NOT_FOUND');
    for (const bad of MALFORMED_IDS) assert.is(await r.deleteDevice(any(bad)), false);
    // The name is free again.
    await r.createDevice({ groundId: g.id, name: 'gone' });
  });

  test('assets: read by name and by global id, listed by name', async ({ r }) => {
    const { ground: g } = await ownedGround(r);
    const { device: d } = await r.createDevice({ groundId: g.id, name: 'd', assets: [{ name: 'b', is: 'sensor' }, { name: 'B', is: 'sensor' }, { name: '1', is: 'virtual' }, { name: 'a', is: 'actuator' }] });
    assert.equal((await r.listAssets(d.id)).map((a) => a.name), ['1', 'B', 'a', 'b']);
    const a = await r.getAsset(d.id, 'a');
    assert.is(a?.is, 'actuator');
    assert.equal(await r.getAssetById(a!.id), a);
    assert.is(await r.getAsset(d.id, 'A'), undefined, 'names are case sensitive');
    assert.is(await r.getAsset(d.id, 'missing'), undefined);
    for (const bad of MALFORMED_IDS) {
      assert.is(await r.getAsset(any(bad), 'a'), undefined);
      assert.is(await r.getAssetById(any(bad)), undefined);
      assert.equal(await r.listAssets(any(bad)), []);
      assert.is(await r.deleteAsset(any(bad), 'a'), false);
    }
    for (const bad of ['', 'a/b', '#', '../a', 'x'.repeat(65), 3, null]) {
      assert.is(await r.getAsset(d.id, any(bad)), undefined);
      assert.is(await r.deleteAsset(d.id, any(bad)), false);
    }
  });

  test('upsertAsset: creates, updates given fields, keeps name and id, may change `is`', async ({ r, clock }) => {
    const { ground: g } = await ownedGround(r);
    const { device: d } = await r.createDevice({ groundId: g.id, name: 'd' });
    clock.advance(3);
    const made = await r.upsertAsset(d.id, 'temp', { is: 'sensor', profile: { type: 'number' } });
    assert.is(made.created, true);
    assert.equal(made.asset, { id: made.asset.id, deviceId: d.id, name: 'temp', title: 'temp', description: '', is: 'sensor', profile: { type: 'number' }, createdAt: clock.now() });
    clock.advance(3);
    const titled = await r.upsertAsset(d.id, 'temp', { title: 'Temperature' });
    assert.is(titled.created, false);
    assert.equal(titled.asset, { ...made.asset, title: 'Temperature' });
    const flipped = await r.upsertAsset(d.id, 'temp', { is: 'actuator', description: 'now settable' });
    assert.is(flipped.created, false);
    assert.equal(flipped.asset, { ...made.asset, title: 'Temperature', is: 'actuator', description: 'now settable' });
    const reprofiled = await r.upsertAsset(d.id, 'temp', { profile: { type: 'integer', minimum: 0 } });
    assert.equal(reprofiled.asset.profile, { type: 'integer', minimum: 0 });
    assert.is(reprofiled.asset.createdAt, made.asset.createdAt);
    assert.equal(await r.getAssetById(made.asset.id), reprofiled.asset);
    assert.equal((await r.getDevice(d.id))?.assets, [reprofiled.asset]);

    await rejects(r.upsertAsset(d.id, 'other', { title: 'no kind' }), 'VALIDATION_FAILED', 'is');
    assert.is(await r.getAsset(d.id, 'other'), undefined);
    const ghost = 'A'.repeat(22);
    await rejects(r.upsertAsset(ghost, 'x', { is: 'sensor' }), 'NOT_FOUND', 'deviceId');
    await rejects(r.upsertAsset(ghost, 'x', { title: 't' }), 'NOT_FOUND', 'deviceId');
    for (const bad of MALFORMED_IDS) await rejects(r.upsertAsset(any(bad), 'x', { is: 'sensor' }), 'VALIDATION_FAILED', 'deviceId');
    for (const bad of ['', 'a/b', 'a+b', 'a#', ' a', 'x'.repeat(65), 5]) await rejects(r.upsertAsset(d.id, any(bad), { is: 'sensor' }), 'VALIDATION_FAILED', 'name');
    await rejects(r.upsertAsset(d.id, 'x', { is: 'gauge' as never }), 'VALIDATION_FAILED', 'is');
    await rejects(r.upsertAsset(d.id, 'x', { is: 'sensor', profile: [] as never }), 'VALIDATION_FAILED', 'profile');
    await rejects(r.upsertAsset(d.id, 'x', { is: 'sensor', title: 'x'.repeat(300) }), 'VALIDATION_FAILED', 'title');
    await rejects(r.upsertAsset(d.id, 'x', { is: 'sensor', profile: { description: 'nul \u0000 inside' } }), 'VALIDATION_FAILED');
    await rejects(r.upsertAsset(d.id, 'x', null as never), 'VALIDATION_FAILED');
    assert.equal((await r.listAssets(d.id)).map((a) => a.name), ['temp']);

    assert.is(await r.deleteAsset(d.id, 'temp'), true);
    assert.is(await r.deleteAsset(d.id, 'temp'), false);
    assert.is(await r.getAssetById(made.asset.id), undefined);
    const again = await r.upsertAsset(d.id, 'temp', { is: 'sensor' });
    assert.is(again.created, true);
    assert.is.not(again.asset.id, made.asset.id, 'a recreated asset gets a new global id');
  });

  test('concurrent upserts of one asset name: exactly one creates, all see the same asset', async ({ r, h }) => {
    const { ground: g } = await ownedGround(r);
    const { device: d } = await r.createDevice({ groundId: g.id, name: 'race' });
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => r.upsertAsset(d.id, 'contested', { is: 'sensor', title: `t${i}` })));
    assert.is(results.filter((x) => x.created).length, 1);
    assert.is(new Set(results.map((x) => x.asset.id)).size, 1);
    assert.equal(await h.sql('SELECT count(*)::int AS n FROM assets WHERE device_id = $1', [d.id]), [{ n: 1 }]);
  });

  test('concurrent creates of one device name in a ground: one wins, the rest CONFLICT', async ({ r, h }) => {
    const { ground: g } = await ownedGround(r);
    const settled = await Promise.allSettled(Array.from({ length: 6 }, () => r.createDevice({ groundId: g.id, name: 'twin', assets: [{ name: 'a', is: 'sensor' }] })));
    const won = settled.filter((s) => s.status === 'fulfilled');
    const lost = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    assert.is(won.length, 1);
    for (const l of lost) {
      assert.instance(l.reason, FleetError);
      assert.is((l.reason as FleetError).code, 'CONFLICT');
    }
    assert.equal(await h.sql('SELECT count(*)::int AS n FROM devices WHERE ground_id = $1', [g.id]), [{ n: 1 }]);
    assert.equal(await h.sql(`SELECT count(*)::int AS n FROM tokens WHERE scope = 'device' AND subject_id IN (SELECT id FROM devices WHERE ground_id = $1)`, [g.id]), [{ n: 1 }]);
  });

  test('registryDirectory: the registry serves device actors as a DeviceDirectory', async ({ r }) => {
    const { ground: g } = await ownedGround(r);
    const { device: d } = await r.createDevice({ groundId: g.id, name: 'dir', payload: { format: 'cbor' }, assets: [{ name: 't', is: 'sensor', profile: { type: 'number' } }] });
    const directory = registryDirectory(r);
    const info = await directory.getDevice(d.id);
    assert.is(info?.id, d.id);
    assert.equal(info?.payload, { format: 'cbor' });
    assert.equal(info?.assets.map((a) => [a.id, a.name, a.is, a.profile]), [[d.assets[0].id, 't', 'sensor', { type: 'number' }]]);
    assert.is(await directory.getDevice('A'.repeat(22)), undefined);
    assert.is(await directory.getDevice('../etc/passwd'), undefined);
  });

  return test;
}
