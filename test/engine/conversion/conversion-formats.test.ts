import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cayenneCodec, cayenneTypes } from '../../../engine/conversion/cayenne.ts';
import { cborCodec } from '../../../engine/conversion/cborCodec.ts';
import { codecFor } from '../../../engine/conversion/codecFor.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { DeviceInfo } from '../../../engine/ports/directory.ts';
import { fromHex, toHex } from '../../support/conversionFixtures.ts';

function fails(fn: () => unknown, code: string, message?: RegExp): void {
  try {
    fn();
  } catch (error) {
    assert.instance(error, FleetError);
    assert.is((error as FleetError).code, code);
    if (message) assert.match((error as FleetError).message, message);
    return;
  }
  assert.unreachable('expected a FleetError');
}

// Cayenne LPP ------------------------------------------------------------------------------------

test('Cayenne LPP: published vectors', () => {
  // The Things Stack documentation
  assert.equal(cayenneCodec.decode(fromHex('03670110056700ff')), { temperature_3: 27.2, temperature_5: 25.5 });
  assert.equal(cayenneCodec.decode(fromHex('007327bf006700de')), { barometric_pressure_0: 1017.5, temperature_0: 22.2 });
  // Cayenne LPP documentation: GPS and accelerometer examples
  assert.equal(cayenneCodec.decode(fromHex('018806765ff2960a0003e8')), { gps_1: { latitude: 42.3519, longitude: -87.9094, altitude: 10 } });
  assert.equal(cayenneCodec.decode(fromHex('067104d2fb2e0000')), { accelerometer_6: { x: 1.234, y: -1.234, z: 0 } });
  assert.equal(cayenneCodec.decode(new Uint8Array(0)), {});
});

const everyType: Array<[string, Record<string, unknown>]> = [
  ['0100ff', { digital_in_1: 255 }],
  ['020101', { digital_out_2: 1 }],
  ['0302ff38', { analog_in_3: -2 }],
  ['040304d2', { analog_out_4: 12.34 }],
  ['05640001e240', { generic_sensor_5: 123456 }],
  ['0665012c', { luminosity_6: 300 }],
  ['076601', { presence_7: 1 }],
  ['0867ff9c', { temperature_8: -10 }],
  ['096861', { relative_humidity_9: 48.5 }],
  ['0a7103e8fc180000', { accelerometer_10: { x: 1, y: -1, z: 0 } }],
  ['0b7327bf', { barometric_pressure_11: 1017.5 }],
  ['0c74015e', { voltage_12: 3.5 }],
  ['0d7503e8', { current_13: 1 }],
  ['0e760000c350', { frequency_14: 50000 }],
  ['0f7864', { percentage_15: 100 }],
  ['1079ff9c', { altitude_16: -100 }],
  ['117d0190', { concentration_17: 400 }],
  ['12800064', { power_18: 100 }],
  ['138200003039', { distance_19: 12.345 }],
  ['14830000000a', { energy_20: 0.01 }],
  ['158400b4', { direction_21: 180 }],
  ['16855f5e1000', { unixtime_22: 1600000000 }],
  ['178600640000ff9c', { gyrometer_23: { x: 1, y: 0, z: -1 } }],
  ['1887ff8000', { colour_24: { r: 255, g: 128, b: 0 } }],
  ['ff88f85ee0000000ffffff', { gps_255: { latitude: -50, longitude: 0, altitude: -0.01 } }],
  ['198e01', { switch_25: 1 }],
];

test('Cayenne LPP: every type decodes and encodes back to the same bytes', () => {
  const seen = new Set<string>();
  for (const [hex, state] of everyType) {
    assert.equal(cayenneCodec.decode(fromHex(hex)), state, hex);
    assert.is(toHex(cayenneCodec.encode!(state)), hex, hex);
    seen.add(Object.keys(state)[0].replace(/_\d+$/, ''));
  }
  assert.equal([...seen].sort(), [...cayenneTypes.values()].sort());
  const frame = everyType.map(([h]) => h).join('');
  const all = Object.assign({}, ...everyType.map(([, s]) => s));
  assert.equal(cayenneCodec.decode(fromHex(frame)), all);
  assert.is(toHex(cayenneCodec.encode!(all)), frame);
});

test('Cayenne LPP: encoding rounds to the resolution and accepts booleans for switches', () => {
  assert.is(toHex(cayenneCodec.encode!({ temperature_1: 21.56 })), '016700d8');
  assert.is(toHex(cayenneCodec.encode!({ digital_out_4: true, presence_2: false })), '040101026600');
  assert.is(toHex(cayenneCodec.encode!({})), '');
});

test('Cayenne LPP: bad frames are DECODE_FAILED', () => {
  fails(() => cayenneCodec.decode(fromHex('03')), 'DECODE_FAILED', /cut off/);
  fails(() => cayenneCodec.decode(fromHex('03ff00')), 'DECODE_FAILED', /unknown type 255/);
  fails(() => cayenneCodec.decode(fromHex('036701')), 'DECODE_FAILED', /temperature on channel 3 needs 2 bytes, 1 left/);
  fails(() => cayenneCodec.decode(fromHex('03670110 0588 00'.replace(/ /g, ''))), 'DECODE_FAILED', /gps/);
});

test('Cayenne LPP: bad commands are VALIDATION_FAILED', () => {
  fails(() => cayenneCodec.encode!({ humidity_1: 20 }), 'VALIDATION_FAILED', /known type/);
  fails(() => cayenneCodec.encode!({ temperature_256: 20 }), 'VALIDATION_FAILED', /channel 0..255/);
  fails(() => cayenneCodec.encode!({ temperature: 20 }), 'VALIDATION_FAILED');
  fails(() => cayenneCodec.encode!({ temperature_1: 5000 }), 'VALIDATION_FAILED', /out of range/);
  fails(() => cayenneCodec.encode!({ relative_humidity_1: -1 }), 'VALIDATION_FAILED', /out of range/);
  fails(() => cayenneCodec.encode!({ temperature_1: '20' }), 'VALIDATION_FAILED', /finite number/);
  fails(() => cayenneCodec.encode!({ temperature_1: NaN }), 'VALIDATION_FAILED', /finite number/);
  fails(() => cayenneCodec.encode!({ gps_1: { latitude: 1, longitude: 2 } }), 'VALIDATION_FAILED', /gps_1.altitude/);
  fails(() => cayenneCodec.encode!({ gps_1: 5 }), 'VALIDATION_FAILED', /latitude, longitude, altitude/);
  fails(() => cayenneCodec.encode!(null as unknown as Record<string, unknown>), 'VALIDATION_FAILED');
});

// CBOR -------------------------------------------------------------------------------------------

test('CBOR: the platform documentation vectors, both ways', () => {
  assert.equal(cborCodec.decode(fromHex('a2617418216264 6cf5'.replace(/ /g, ''))), { t: 33, dl: true });
  assert.is(toHex(cborCodec.encode!({ t: 33, dl: true })), 'a2617418216264 6cf5'.replace(/ /g, ''));
  assert.is(toHex(cborCodec.encode!({ LED: true })), 'a1634c4544f5');
  const out = cborCodec.encode!({ LED: true });
  assert.is(Object.getPrototypeOf(out), Uint8Array.prototype);
});

test('CBOR: full-form states, locations and nested values pass through as JSON', () => {
  const state = { temperature: { value: 21.5, at: '2024-05-01T10:00:00Z' }, location: { latitude: 50.85, longitude: 4.35 }, tags: ['a', 1, null, false], n: -7 };
  assert.equal(cborCodec.decode(cborCodec.encode!(state)), state);
  // tag 1 (epoch seconds) becomes an ISO string; an integer beyond 32 bits within 2^53 stays a number
  assert.equal(cborCodec.decode(fromHex('a16261 74c11a514b67b0'.replace(/ /g, ''))), { at: '2013-03-21T20:04:00.000Z' });
  assert.equal(cborCodec.decode(fromHex('a161781b001fffffffffffff')), { x: 2 ** 53 - 1 });
  const proto = cborCodec.decode(fromHex('a1695f5f70726f746f5f5f01'));
  assert.equal(Object.keys(proto), ['__proto__']);
  assert.is(Object.getPrototypeOf(proto), Object.prototype);
});

test('CBOR: anything but a JSON map is DECODE_FAILED', () => {
  const bad: Array<[string, RegExp]> = [
    ['', /empty/],
    ['01', /must be a map/],
    ['820102', /must be a map/],
    ['a10102', /number key/],
    ['a1a0a0', /object key/],
    ['a1614142 0102'.replace(/ /g, ''), /byte string/],
    ['a16161f7', /undefined/],
    ['a16161f97e00', /finite/],
    ['a16161fa7f800000', /finite/],
    ['a161611bffffffffffffffff', /beyond/],
    ['a16161d8780a', /tag 120/],
    ['a1616101ff', /end of buffer/],
    ['a161', /.+/],
    ['ff', /.+/],
    ['5f41014102ff', /.+/],
  ];
  for (const [hex, message] of bad) fails(() => cborCodec.decode(fromHex(hex)), 'DECODE_FAILED', message);
  let deep = 'a1616100';
  for (let i = 0; i < 40; i++) deep = 'a16161' + deep;
  fails(() => cborCodec.decode(fromHex(deep)), 'DECODE_FAILED', /deeper/);
});

test('CBOR: commands that are not JSON are VALIDATION_FAILED', () => {
  for (const command of [{ a: NaN }, { a: undefined }, { a: () => 1 }, { a: 1n }, { a: new Date() }, { a: new Map() }, { a: [Infinity] }]) {
    fails(() => cborCodec.encode!(command as Record<string, unknown>), 'VALIDATION_FAILED');
  }
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  fails(() => cborCodec.encode!(cyclic), 'VALIDATION_FAILED', /deeper/);
  fails(() => cborCodec.encode!([1] as unknown as Record<string, unknown>), 'VALIDATION_FAILED');
});

// codecFor ---------------------------------------------------------------------------------------

const script = { sense: [{ asset: 'count', value: { byte: 0, bytelength: 2 } }], actuate: [{ asset: 'count', field: { byte: 0, bytelength: 2 } }] };

test('codecFor: formats', () => {
  assert.is(codecFor(undefined), undefined);
  assert.is(codecFor({ format: 'json' }), undefined);
  assert.is(codecFor({ format: 'cayenne' }), cayenneCodec);
  assert.is(codecFor({ format: 'cbor' }), cborCodec);
  const codec = codecFor({ format: 'binary', conversion: script })!;
  assert.equal(codec.decode(fromHex('0102')), { count: 258 });
  assert.is(toHex(codec.encode!({ count: 258 })), '0102');
});

test('codecFor: compiles once per script, by identity and by content', () => {
  const a = codecFor({ format: 'binary', conversion: script });
  assert.is(codecFor({ format: 'binary', conversion: script }), a);
  assert.is(codecFor({ format: 'binary', conversion: structuredClone(script) }), a);
  assert.is.not(codecFor({ format: 'binary', conversion: { sense: [{ asset: 'count', value: { byte: 1 } }] } }), a);
});

test('codecFor: a stored script that does not check rejects every payload with the reason', () => {
  const codec = codecFor({ format: 'binary', conversion: { sense: [{ asset: 'x', value: { byte: 0, calculation: 'val ** 2' } }] } })!;
  fails(() => codec.decode(fromHex('01')), 'DECODE_FAILED', /sense\[0\]\.value\.calculation/);
  fails(() => codec.encode!({ x: 1 }), 'VALIDATION_FAILED', /conversion script is invalid/);
  for (const conversion of [undefined, null, 'text', 42]) {
    fails(() => codecFor({ format: 'binary', conversion })!.decode(fromHex('01')), 'DECODE_FAILED', /JSON object/);
  }
});

test('codecFor: a device actor can plug the detached decode function', () => {
  const device: DeviceInfo = { id: 'd1', assets: [], payload: { format: 'binary', conversion: script } };
  const decoderFor = (info: DeviceInfo) => codecFor(info.payload)?.decode;
  const decode = decoderFor(device)!;
  assert.equal(decode(fromHex('00ff')), { count: 255 });
  fails(() => decode(fromHex('00')), 'DECODE_FAILED', /needs 2 bytes/);
});

test.run();
