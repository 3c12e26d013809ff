import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Compile } from 'typebox/compile';
import { ConversionScript } from '../../../schemas/conversion.ts';
import { checkScript } from '../../../engine/conversion/checkScript.ts';
import { codecFor } from '../../../engine/conversion/codecFor.ts';
import { compileScript } from '../../support/reference/compileScript.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { difference, fromHex, loadConversionFixtures, toHex } from '../../support/conversionFixtures.ts';

const fixtures = loadConversionFixtures();
const schema = Compile(ConversionScript);

test('the golden set covers the required shapes', () => {
  const names = fixtures.map((f) => f.file);
  for (const f of ['known-vectors.json', 'room-sensor.json', 'ble-tag.json', 'tracker.json', 'valve-controller.json']) assert.ok(names.includes(f), f);
  const text = JSON.stringify(fixtures.map((f) => f.script));
  for (const needle of ['"$payloadLength"', '"byteorder":"little","signed":true', '"bit":', '"latitude":', '"hexstring"', '"const":']) assert.ok(text.includes(needle), needle);
});

for (const fixture of fixtures) {
  test(`${fixture.file}: the script checks clean and matches the schema`, () => {
    assert.equal(checkScript(fixture.script), []);
    assert.ok(schema.Check(fixture.script), `schema rejects ${fixture.file}`);
  });

  test(`${fixture.file}: recorded uplinks decode to the recorded states`, () => {
    const codec = compileScript(fixture.script);
    const viaSettings = codecFor({ format: 'binary', conversion: fixture.script })!;
    for (const uplink of fixture.uplinks) {
      const bytes = fromHex(uplink.hex);
      const meta = uplink.fPort === undefined ? undefined : { fPort: uplink.fPort };
      if (uplink.error) {
        for (const decode of [codec.decode, viaSettings.decode]) {
          try {
            decode(bytes, meta);
            assert.unreachable(`${uplink.hex} should fail`);
          } catch (error) {
            assert.instance(error, FleetError);
            assert.is((error as FleetError).code, uplink.error, uplink.hex);
            if (uplink.reason) assert.is((error as FleetError).message, uplink.reason);
          }
        }
        continue;
      }
      const state = codec.decode(bytes, meta);
      const d = difference(state, uplink.expect, uplink.tolerance ?? 0);
      assert.is(d, undefined, `${uplink.hex}: ${d}`);
      assert.equal(viaSettings.decode(bytes, meta), state);
      // Decoded states are plain JSON: they survive a JSON round trip unchanged.
      assert.equal(JSON.parse(JSON.stringify(state)), state);
    }
  });

  if (fixture.downlinks) {
    test(`${fixture.file}: commands encode to the recorded downlinks`, () => {
      const codec = compileScript(fixture.script);
      assert.type(codec.encode, 'function');
      for (const downlink of fixture.downlinks!) {
        if (downlink.error) {
          try {
            codec.encode!(downlink.command);
            assert.unreachable(`${JSON.stringify(downlink.command)} should fail`);
          } catch (error) {
            assert.instance(error, FleetError);
            assert.is((error as FleetError).code, downlink.error);
            if (downlink.reason) assert.is((error as FleetError).message, downlink.reason);
          }
          continue;
        }
        const bytes = codec.encode!(downlink.command);
        assert.instance(bytes, Uint8Array);
        assert.is(toHex(bytes), downlink.hex, JSON.stringify(downlink.command));
      }
    });
  }

  if (fixture.roundTrip) {
    test(`${fixture.file}: recorded downlinks decode back to their commands`, () => {
      const codec = compileScript(fixture.script);
      for (const downlink of fixture.downlinks ?? []) {
        if (downlink.error) continue;
        const state = codec.decode(codec.encode!(downlink.command));
        for (const asset of Object.keys(downlink.command)) {
          assert.ok(fixture.roundTrip!.includes(asset), asset);
          assert.ok(Math.abs((state[asset] as number) - (downlink.command[asset] as number)) < 0.05 || state[asset] === downlink.command[asset], asset);
        }
      }
    });
  }
}

test('scripts without an actuate block have no encoder; decode is usable detached', () => {
  const fixture = fixtures.find((f) => f.file === 'known-vectors.json')!;
  const { decode, encode } = compileScript(fixture.script);
  assert.is(encode, undefined);
  assert.equal(decode(fromHex('08bd')), { big: 2237, little: 48392 });
});

test('an invalid script does not compile: VALIDATION_FAILED with the issues', () => {
  try {
    compileScript({ sense: [{ asset: 't', value: { byte: 0, bytelength: 2, calculation: 'val ** 2' } }] });
    assert.unreachable();
  } catch (error) {
    assert.instance(error, FleetError);
    assert.is((error as FleetError).code, 'VALIDATION_FAILED');
    const issues = (error as FleetError).detail?.issues as Array<{ path: string }>;
    assert.is(issues[0].path, 'sense[0].value.calculation');
  }
});

test('numbers that leave the finite range read as null; scale calculations keep their exact rounding', () => {
  const { decode } = compileScript({ sense: [
    { asset: 'huge', value: { byte: 0, bytelength: 2, calculation: 'val * 1e305' } },
    { asset: 'ratio', value: { byte: 0, bytelength: 2, calculation: '1000 / val' } },
    { asset: 'tenth', value: { byte: 2, calculation: 'val / 10' } },
    { asset: 'shifted', value: { byte: 2, calculation: 'val * 0.1 + 0' } },
  ] });
  assert.equal(decode(fromHex('ffff03')), { huge: null, ratio: 1000 / 65535, tenth: 0.3, shifted: 3 * 0.1 + 0 });
  assert.equal(decode(fromHex('000103')), { huge: 1e305, ratio: 1000, tenth: 0.3, shifted: 0.30000000000000004 });
  assert.equal(decode(fromHex('000003')).ratio, null);
});

test('integers too wide for a double read as null, not Infinity', () => {
  const { decode } = compileScript({ sense: [
    { asset: 'range', value: { byte: 0, endbyte: 0 } },
    { asset: 'scaled', value: { byte: 0, endbyte: 0, calculation: 'val / 10' } },
    { asset: 'wide', value: { byte: 0, bytelength: 200 } },
    { asset: 'fits', value: { byte: 0, bytelength: 127 } },
  ] });
  const state = decode(new Uint8Array(200).fill(255));
  assert.equal({ ...state, fits: undefined }, { range: null, scaled: null, wide: null, fits: undefined });
  assert.ok(Number.isFinite(state.fits));
});

test('non-byte input to decode is DECODE_FAILED', () => {
  const { decode } = compileScript(fixtures[0].script);
  for (const bad of [undefined, null, 'abc', [1, 2], { length: 2 }]) {
    try {
      decode(bad as unknown as Uint8Array);
      assert.unreachable();
    } catch (error) {
      assert.is((error as FleetError).code, 'DECODE_FAILED');
    }
  }
});

test.run();
