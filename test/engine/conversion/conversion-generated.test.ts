/**
 * Differential tests of the generated codecs (generateCodec.ts) against the reference closure
 * compiler (support/reference/compileScript.ts): the same values (-0 ≠ 0), the same errors with the same codes and
 * messages, on every golden fixture and ≥ 100,000 generated cases (counted at the end). Random
 * bytes into any generated decoder throw nothing but DECODE_FAILED.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { cayenneCodec, cayenneTypes } from '../../../engine/conversion/cayenne.ts';
import { cayenneReference } from '../../support/reference/cayenneReference.ts';
import { checkScript } from '../../../engine/conversion/checkScript.ts';
import { compileScript } from '../../support/reference/compileScript.ts';
import { generateCodec } from '../../../engine/conversion/generateCodec.ts';
import { decodeOrReject, layoutArbitrary } from '../../support/conversionArbitraries.ts';
import { fromHex, loadConversionFixtures } from '../../support/conversionFixtures.ts';
import { commandArbitrary, mutate, sameDecode, sameEncode, scriptArbitrary } from '../../support/conversionScripts.ts';

let cases = 0;
const counted = (n: number, run: () => void) => { cases += n; run(); };
const fixtures = loadConversionFixtures();
const payload = fc.oneof(
  { weight: 3, arbitrary: fc.uint8Array({ maxLength: 24 }) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 96 }) },
);
const meta = fc.option(fc.record({ fPort: fc.integer({ min: 0, max: 255 }) }), { nil: undefined });

for (const fixture of fixtures) {
  const generated = generateCodec(fixture.script);
  const reference = compileScript(fixture.script);

  test(`${fixture.file}: recorded uplinks, and every prefix of them, decode as the reference decodes them`, () => {
    for (const uplink of fixture.uplinks) {
      const bytes = fromHex(uplink.hex);
      const m = uplink.fPort === undefined ? undefined : { fPort: uplink.fPort };
      for (let end = 0; end <= bytes.length; end++) sameDecode(generated, reference, bytes.subarray(0, end), m);
      sameDecode(generated, reference, bytes, undefined);
    }
  });

  if (fixture.downlinks) {
    test(`${fixture.file}: recorded commands encode as the reference encodes them`, () => {
      for (const downlink of fixture.downlinks!) sameEncode(generated, reference, downlink.command);
    });
  }

  test(`${fixture.file}: random bytes decode as the reference decodes them, and fail only with DECODE_FAILED`, () => {
    counted(9_000, () => fc.assert(fc.property(payload, meta, (bytes, m) => {
      sameDecode(generated, reference, bytes, m);
      decodeOrReject(generated, bytes, m);
    }), { numRuns: 9_000 }));
  });
}

test('generated layouts: decode and encode as the reference does, decode(encode(x)) == x', () => {
  counted(4_000, () => fc.assert(fc.property(layoutArbitrary, fc.array(fc.uint8Array({ maxLength: 64 }), { minLength: 4, maxLength: 4 }), (layout, payloads) => {
    const generated = generateCodec(layout.script);
    const reference = compileScript(layout.script);
    for (const raw of payloads) {
      const bytes = raw.length >= layout.length ? raw.subarray(0, layout.length) : raw;
      const got = sameDecode(generated, reference, bytes);
      if (!('value' in got)) continue;
      const x = got.value as Record<string, unknown>;
      const encoded = sameEncode(generated, reference, x);
      if ('value' in encoded) assert.equal(generated.decode(generated.encode!(x)), x);
    }
  }), { numRuns: 4_000 }));
});

test('generated scripts: whatever checks decodes and encodes as the reference, on any bytes and commands', () => {
  let compiled = 0;
  counted(12_000, () => fc.assert(fc.property(scriptArbitrary, fc.array(fc.tuple(payload, meta), { minLength: 6, maxLength: 6 }), fc.array(commandArbitrary, { maxLength: 3 }), (script, inputs, commands) => {
    if (checkScript(script).length > 0) return;
    compiled++;
    const generated = generateCodec(script as never);
    const reference = compileScript(script as never);
    for (const [bytes, m] of inputs) {
      sameDecode(generated, reference, bytes, m);
      decodeOrReject(generated, bytes, m);
    }
    assert.is(typeof generated.encode, typeof reference.encode);
    if (generated.encode) for (const command of commands) sameEncode(generated, reference, command);
  }), { numRuns: 12_000 }));
  assert.ok(compiled > 3_000, `only ${compiled} of 12000 generated scripts checked clean`);
});

test('mutated golden scripts: whatever checks decodes as the reference', () => {
  const mutation = fc.tuple(fc.constantFrom(...fixtures.map((f) => f.script)), fc.array(fc.tuple(fc.nat(), fc.jsonValue({ maxDepth: 2 })), { minLength: 1, maxLength: 3 }));
  counted(4_000, () => fc.assert(fc.property(mutation, fc.array(payload, { minLength: 4, maxLength: 4 }), ([base, edits], payloads) => {
    const script = structuredClone(base) as unknown as Record<string, unknown>;
    for (const [at, value] of edits) mutate(script, at, value);
    if (checkScript(script).length > 0) return;
    const generated = generateCodec(script as never);
    const reference = compileScript(script as never);
    for (const bytes of payloads) sameDecode(generated, reference, bytes, { fPort: bytes.length });
  }), { numRuns: 4_000 }));
});

test('Cayenne LPP: the generated decoder decodes random bytes and frames of real items as the table loop does', () => {
  const item = fc.tuple(fc.integer({ min: 0, max: 255 }), fc.constantFrom(...cayenneTypes.keys()), fc.uint8Array({ maxLength: 10 }))
    .map(([channel, type, value]) => [channel, type, ...value]);
  const frame = fc.oneof(payload, fc.array(item, { maxLength: 6 }).map((items) => Uint8Array.from(items.flat())));
  counted(6_000, () => fc.assert(fc.property(frame, (bytes) => {
    sameDecode(cayenneCodec, cayenneReference, bytes);
    decodeOrReject(cayenneCodec, bytes);
  }), { numRuns: 6_000 }));
});

test('at least 100,000 generated cases ran', () => {
  assert.ok(cases >= 100_000, `${cases} cases`);
});

test.run();
