/**
 * The activation networks table (spec §2.8, DESIGN.md §6): ids and aliases, required keys, the
 * LoRaWAN answer shape, normalisation, and refusals that name the field.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { NetworkCatalog, networks } from '../../../engine/activation/networks.ts';
import table from '../../../schemas/networks.json' with { type: 'json' };

const LORA_NULLS = { activationMethod: 'abp', appEui: null, devAddr: null, gatewayEui: null, appSKey: null, nwkSKey: null };

function refused(binding: unknown, field: string): FleetError {
  try {
    networks.normalise(binding, 'network');
  } catch (error) {
    assert.instance(error, FleetError);
    const e = error as FleetError;
    assert.is(e.code, 'VALIDATION_FAILED');
    assert.is(e.detail?.field, field, e.message);
    assert.ok(e.message.startsWith(`${field}: `), e.message);
    return e;
  }
  assert.unreachable(`accepted ${JSON.stringify(binding)}`);
  throw new Error('unreachable');
}

test('the eight networks of DESIGN.md §6, by id and by the spec alias', () => {
  assert.equal(networks.list().map((n) => [n.alias, n.id, n.kind]), [
    ['net1', 'thethingsnetwork', 'lorawan'], ['net2', 'loriot', 'lorawan'], ['net3', 'thingpark', 'lorawan'],
    ['net4', 'mythings', 'lorawan'], ['net5', 'lattelecom', 'lorawan'], ['net6', 'tc', 'lorawan'],
    ['net7', 'tmobilenl', 'mobile'], ['net8', 'orangebe', 'mobile'],
  ]);
  for (const n of networks.list()) {
    assert.is(networks.get(n.alias), n);
    assert.is(networks.get(n.id), n);
  }
  assert.equal(networks.list().filter((n) => n.downlink).map((n) => n.id), ['thethingsnetwork'], 'spec §4.4: one downlink network');
  assert.equal(networks.get('net1')?.required, ['devEui', 'applicationId']);
  assert.equal(networks.get('net2')?.required, ['devEui']);
  assert.equal(networks.get('net7')?.required, ['imei', 'imsi']);
  assert.equal(networks.get('net8')?.required, []);
  for (const name of ['NET1', 'net9', 'ttn', '', 'constructor', '__proto__']) assert.is(networks.get(name), undefined, name);
});

test('net1: devEui and applicationId; the answer carries every LoRaWAN key, null when not supplied', () => {
  const out = networks.normalise({ networkId: 'net1', data: { devEui: '00-04-a3-0b-00-1c-05-30', applicationId: 'my-app' } }, 'network');
  assert.equal(out, { networkId: 'thethingsnetwork', data: { devEui: '0004A30B001C0530', applicationId: 'my-app', ...LORA_NULLS } });
  const full = networks.normalise({
    networkId: 'thethingsnetwork',
    data: { devEui: '0004A30B001C0530', applicationId: 'app_1', appEui: '70b3d57ed0000001', devAddr: '26011bda', gatewayEui: 'b8:27:eb:ff:fe:00:00:01', appSKey: 'a'.repeat(32), nwkSKey: 'B'.repeat(32), activationMethod: 'abp' },
  }, 'network');
  assert.equal(full.data, {
    devEui: '0004A30B001C0530', applicationId: 'app_1', activationMethod: 'abp', appEui: '70B3D57ED0000001', devAddr: '26011BDA',
    gatewayEui: 'B827EBFFFE000001', appSKey: 'A'.repeat(32), nwkSKey: 'B'.repeat(32),
  });
  const nulls = networks.normalise({ networkId: 'net1', data: { devEui: '0004A30B001C0530', applicationId: 'ab', appEui: null, activationMethod: null } }, 'network');
  assert.equal(nulls.data, { devEui: '0004A30B001C0530', applicationId: 'ab', ...LORA_NULLS }, 'explicit null = not supplied');
});

test('net2…net6: devEui; net7: imei and imsi; net8: {}', () => {
  for (const alias of ['net2', 'net3', 'net4', 'net5', 'net6']) {
    const out = networks.normalise({ networkId: alias, data: { devEui: '0004a30b001c0530' } }, 'network');
    assert.equal(out, { networkId: networks.get(alias)!.id, data: { devEui: '0004A30B001C0530', ...LORA_NULLS } });
  }
  assert.equal(networks.normalise({ networkId: 'net7', data: { imei: '356938035643809', imsi: '204080123456789' } }, 'network'),
    { networkId: 'tmobilenl', data: { imei: '356938035643809', imsi: '204080123456789' } });
  assert.equal(networks.normalise({ networkId: 'net8', data: {} }, 'network'), { networkId: 'orangebe', data: {} });
  assert.equal(networks.normalise({ networkId: 'orangebe' }, 'network'), { networkId: 'orangebe', data: {} }, 'data may be left out when there are no keys');
});

test('missing keys, unknown keys, bad values and unknown networks are refused naming the field', () => {
  refused({ networkId: 'net1', data: { devEui: '0004A30B001C0530' } }, 'network.data.applicationId');
  refused({ networkId: 'net1', data: { applicationId: 'app' } }, 'network.data.devEui');
  refused({ networkId: 'net2', data: {} }, 'network.data.devEui');
  refused({ networkId: 'net2' }, 'network.data.devEui');
  refused({ networkId: 'net7', data: { imei: '356938035643809' } }, 'network.data.imsi');
  refused({ networkId: 'net7', data: { imsi: '204080123456789' } }, 'network.data.imei');
  refused({ networkId: 'net8', data: { devEui: '0004A30B001C0530' } }, 'network.data.devEui');
  refused({ networkId: 'net2', data: { devEui: '0004A30B001C0530', deveui: 'x' } }, 'network.data.deveui');
  refused({ networkId: 'net7', data: { imei: '356938035643809', imsi: '204080123456789', devEui: '0004A30B001C0530' } }, 'network.data.devEui');
  for (const bad of ['0004A30B001C053', '0004A30B001C05300', 'G004A30B001C0530', '00:04-A3', 12, null, ['0004A30B001C0530'], { x: 1 }]) {
    refused({ networkId: 'net2', data: { devEui: bad } }, 'network.data.devEui');
  }
  refused({ networkId: 'net2', data: { devEui: '0004A30B001C0530', activationMethod: 'otaa' } }, 'network.data.activationMethod');
  refused({ networkId: 'net2', data: { devEui: '0004A30B001C0530', devAddr: '26011BD' } }, 'network.data.devAddr');
  refused({ networkId: 'net2', data: { devEui: '0004A30B001C0530', appSKey: 'A'.repeat(31) } }, 'network.data.appSKey');
  refused({ networkId: 'net1', data: { devEui: '0004A30B001C0530', applicationId: 'Has Spaces' } }, 'network.data.applicationId');
  refused({ networkId: 'net1', data: { devEui: '0004A30B001C0530', applicationId: 'a'.repeat(37) } }, 'network.data.applicationId');
  refused({ networkId: 'net7', data: { imei: '35693803564380', imsi: '204080123456789' } }, 'network.data.imei');
  refused({ networkId: 'net7', data: { imei: '356938035643809', imsi: '20408' } }, 'network.data.imsi');
  refused({ networkId: 'net7', data: { imei: '356938035643809', imsi: '2040801234567890' } }, 'network.data.imsi');
  const unknown = refused({ networkId: 'net9', data: {} }, 'network.networkId');
  assert.match(unknown.message, /thethingsnetwork \(net1\)/, 'the message lists the known networks');
  refused({ networkId: 'NET1', data: {} }, 'network.networkId');
  refused({ networkId: 7, data: {} }, 'network.networkId');
  refused({ data: {} }, 'network.networkId');
  refused({ networkId: 'net8', data: [] }, 'network.data');
  refused({ networkId: 'net8', data: 'x' }, 'network.data');
  refused(null, 'network');
  refused('net8', 'network');
  const proto = JSON.parse('{"networkId":"net8","data":{"__proto__":{"x":1}}}');
  refused(proto, 'network.data.__proto__');
  const long = refused({ networkId: 'net8', data: { ['k'.repeat(500)]: 'v' } }, `network.data.${'k'.repeat(40)}…`);
  assert.ok(long.message.length < 300, 'a long key is shortened in the message');
});

test('the table file is checked when it loads', () => {
  const copy = () => JSON.parse(JSON.stringify(table));
  assert.not.throws(() => new NetworkCatalog(copy()));
  const dupAlias = copy();
  dupAlias.networks[1].alias = 'net1';
  assert.throws(() => new NetworkCatalog(dupAlias), /net1 appears twice/);
  const badKind = copy();
  badKind.networks[0].kind = 'satellite';
  assert.throws(() => new NetworkCatalog(badKind), /unknown kind/);
  const badKey = copy();
  badKey.networks[0].required.push('iccid');
  assert.throws(() => new NetworkCatalog(badKey), /undefined key iccid/);
  const extra = copy();
  extra.networks[0].secret = true;
  assert.throws(() => new NetworkCatalog(extra), /network table/);
  assert.throws(() => new NetworkCatalog(null), /network table/);
});

test.run();
