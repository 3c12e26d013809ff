/**
 * Property tests of the conversion language and the built-in formats. Runs ≥ 100,000 generated
 * cases in total (counted and asserted at the end); bench/conversion.bench.ts runs a longer fuzz.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { Encoder } from 'cbor-x';
import { cayenneCodec, cayenneTypes } from '../../../engine/conversion/cayenne.ts';
import { cborCodec } from '../../../engine/conversion/cborCodec.ts';
import { checkScript } from '../../../engine/conversion/checkScript.ts';
import { compileScript } from '../../support/reference/compileScript.ts';
import { loadConversionFixtures } from '../../support/conversionFixtures.ts';
import { decodeOrReject, layoutArbitrary } from '../../support/conversionArbitraries.ts';
import { mutate } from '../../support/conversionScripts.ts';

let cases = 0;
const counted = <T>(n: number, run: () => T): T => { cases += n; return run(); };
const fixtures = loadConversionFixtures();
const payload = fc.oneof(
  { weight: 3, arbitrary: fc.uint8Array({ maxLength: 24 }) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 96 }) },
);
const meta = fc.option(fc.record({ fPort: fc.integer({ min: 0, max: 255 }) }), { nil: undefined });

test('generated layouts that sense and actuate the same fields: decode(encode(x)) == x', () => {
  counted(3_000, () => fc.assert(fc.property(layoutArbitrary, fc.infiniteStream(fc.integer({ min: 0, max: 255 })), (layout, stream) => {
    assert.equal(checkScript(layout.script), [], JSON.stringify(layout.script));
    const codec = compileScript(layout.script);
    for (let round = 0; round < 4; round++) {
      const bytes = Uint8Array.from({ length: layout.length }, () => stream.next().value as number);
      const x = decodeOrReject(codec, bytes);
      if (!x) continue; // e.g. a string field that is not UTF-8: not a value a command can carry
      const encoded = codec.encode!(x);
      assert.is(encoded.length, layout.length);
      assert.equal(codec.decode(encoded), x);
    }
  }), { numRuns: 3_000 }));
});

test('valve controller: any command in the asset domain encodes and decodes back exactly', () => {
  const valve = fixtures.find((f) => f.file === 'valve-controller.json')!;
  const codec = compileScript(valve.script);
  const command = fc.record({
    valve_open: fc.boolean(),
    setpoint: fc.integer({ min: -32768, max: 32767 }).map((k) => k / 10),
    mode: fc.integer({ min: 0, max: 255 }),
    interval: fc.integer({ min: 0, max: 65535 }).map((k) => k / 60),
    child_lock: fc.boolean(),
    fan_speed: fc.integer({ min: 0, max: 7 }),
  });
  counted(5_000, () => fc.assert(fc.property(command, (x) => {
    const state = codec.decode(codec.encode!(x));
    const { header, ...rest } = state;
    assert.is(header, 165);
    assert.equal(rest, { ...x }); // fast-check builds records without a prototype
  }), { numRuns: 5_000 }));
});

for (const fixture of fixtures) {
  test(`${fixture.file}: random bytes never throw anything but DECODE_FAILED`, () => {
    const codec = compileScript(fixture.script);
    counted(8_000, () => fc.assert(fc.property(payload, meta, (bytes, m) => { decodeOrReject(codec, bytes, m); }), { numRuns: 8_000 }));
  });
}

const lppItem = fc.tuple(fc.integer({ min: 0, max: 255 }), fc.constantFrom(...cayenneTypes.keys()));

test('Cayenne LPP: random bytes never throw anything but DECODE_FAILED', () => {
  counted(15_000, () => fc.assert(fc.property(payload, (bytes) => { decodeOrReject(cayenneCodec, bytes); }), { numRuns: 15_000 }));
});

test('Cayenne LPP: valid frames decode, and encode back to the same bytes', () => {
  // Frames built from real headers (channel, known type) and random values: the decoder's deep path.
  const frame = fc.uniqueArray(lppItem, { maxLength: 6, selector: ([c, t]) => `${c}/${t}` }).chain((items) =>
    fc.tuple(...items.map(([c, t]) => fc.uint8Array({ minLength: 12, maxLength: 12 }).map((v) => [c, t, v] as const))));
  const size = (t: number) => LPP_SIZES[t];
  counted(10_000, () => fc.assert(fc.property(frame, (items) => {
    const bytes = Uint8Array.from(items.flatMap(([c, t, v]) => [c, t, ...v.subarray(0, size(t))]));
    const x = decodeOrReject(cayenneCodec, bytes)!;
    assert.ok(x, 'a well-formed frame decodes');
    assert.equal([...cayenneCodec.encode!(x)], [...bytes]);
    assert.equal(cayenneCodec.decode(cayenneCodec.encode!(x)), x);
  }), { numRuns: 10_000 }));
});

/** Data sizes from the LPP type tables, independent of the codec under test. */
const LPP_SIZES: Record<number, number> = {
  0: 1, 1: 1, 2: 2, 3: 2, 100: 4, 101: 2, 102: 1, 103: 2, 104: 1, 113: 6, 115: 2, 116: 2, 117: 2, 118: 4, 120: 1,
  121: 2, 125: 2, 128: 2, 130: 4, 131: 4, 132: 2, 133: 4, 134: 6, 135: 3, 136: 9, 142: 1,
};

test('CBOR: random bytes never throw anything but DECODE_FAILED', () => {
  counted(15_000, () => fc.assert(fc.property(payload, (bytes) => { decodeOrReject(cborCodec, bytes); }), { numRuns: 15_000 }));
});

test('CBOR: mutated encodings of real maps never throw anything but DECODE_FAILED', () => {
  const raw = new Encoder({ useRecords: false } as ConstructorParameters<typeof Encoder>[0]);
  const mutated = fc.tuple(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }), fc.nat())
    .map(([value, flips, cut]) => {
      const bytes = new Uint8Array(raw.encode(value));
      for (const [at, byte] of flips) if (bytes.length) bytes[at % bytes.length] = byte;
      return bytes.subarray(0, bytes.length - (cut % 3));
    });
  counted(10_000, () => fc.assert(fc.property(mutated, (bytes) => { decodeOrReject(cborCodec, bytes); }), { numRuns: 10_000 }));
});

test('CBOR: maps of JSON values round-trip both ways', () => {
  const command = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 6 });
  counted(5_000, () => fc.assert(fc.property(command, (x) => {
    const clean = JSON.parse(JSON.stringify(x)); // JSON has no -0
    assert.equal(cborCodec.decode(cborCodec.encode!(clean)), clean);
  }), { numRuns: 5_000 }));
});

test('random and mutated scripts: checkScript never throws; what it accepts compiles and keeps the decode contract', () => {
  const mutation = fc.tuple(fc.constantFrom(...fixtures.map((f) => f.script)), fc.array(fc.tuple(fc.nat(), fc.jsonValue({ maxDepth: 2 })), { minLength: 1, maxLength: 3 }));
  counted(5_000, () => fc.assert(fc.property(mutation, payload, ([base, edits], bytes) => {
    const script = structuredClone(base) as unknown as Record<string, unknown>;
    for (const [at, value] of edits) mutate(script, at, value);
    const issues = checkScript(script);
    assert.ok(Array.isArray(issues));
    if (issues.length > 0) return;
    decodeOrReject(compileScript(script as never), bytes, { fPort: bytes.length });
  }), { numRuns: 5_000 }));
  counted(5_000, () => fc.assert(fc.property(fc.jsonValue({ maxDepth: 5 }), (script) => {
    const issues = checkScript(script);
    assert.ok(Array.isArray(issues));
    for (const issue of issues) assert.type(issue.path, 'string');
  }), { numRuns: 5_000 }));
});

test('at least 100,000 generated cases ran', () => {
  assert.ok(cases >= 100_000, `${cases} cases`);
});

test.run();
