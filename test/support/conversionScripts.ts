/**
 * fast-check generators of whole conversion scripts for differential testing of the generated
 * codecs against the reference closure compiler: every anchor (byte, endbyte, byte+endbyte),
 * type and spelling, bit fields, calculations from the whole grammar, nested switches on
 * `$payloadLength`, `$fPort` and selectors, dotted assets, objects, arrays and literals. Scripts
 * need not be valid: what checkScript refuses is simply not compiled.
 */
import fc from 'fast-check';
import { Buffer } from 'node:buffer';
import type { Codec, DecodeMeta } from '../../engine/conversion/codec.ts';
import { isDeepStrictEqual } from 'node:util';

const number = fc.oneof(fc.integer({ min: -1000, max: 1000 }).map(String), fc.constantFrom('0.5', '.25', '1e3', '3.6e-2', '1e300', '0'));
const expression: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof({ depthSize: 'small', withCrossShrink: true },
    fc.constant('val'),
    number,
    tie('e').map((a) => `-${a}`),
    tie('e').map((a) => `(${a})`),
    fc.tuple(tie('e'), fc.constantFrom('+', '-', '*', '/', '%'), tie('e')).map(([a, op, b]) => `${a} ${op} ${b}`)),
})).e;
/** Calculations as real scripts write them, and any expression of the grammar. */
const calculation = fc.oneof(
  fc.constantFrom('val / 10', 'val * 0.5 - 40', 'val / 3 + 1', '100 - val', '-val', 'val * 1e305', '1000 / val', 'val % 7', '(val - 32) * 5 / 9', 'val'),
  expression.map((e) => (e.includes('val') ? e : `val * (${e})`)),
);

/** Mostly valid selectors (anchors, types and options that go together), sometimes any mix. */
const selector = fc.oneof(
  { weight: 12, arbitrary: fc.record({
    anchor: fc.constantFrom('start', 'end', 'range'),
    byte: fc.integer({ min: 0, max: 14 }),
    endbyte: fc.integer({ min: -8, max: 0 }),
    bytelength: fc.constantFrom(1, 2, 3, 4, 5, 6, 7, 8, 10),
    byteorder: fc.option(fc.constantFrom('big', 'little', 'small'), { nil: undefined }),
    type: fc.constantFrom('integer', 'number', 'boolean', 'string', 'hexstring', 'int', 'uint', 'float', 'hex', undefined),
    signed: fc.option(fc.constantFrom(true, false, 'true'), { nil: undefined }),
    bit: fc.option(fc.integer({ min: 0, max: 15 }), { nil: undefined, freq: 3 }),
    bitlength: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
    calculation: fc.option(calculation, { nil: undefined, freq: 2 }),
  }).map(({ anchor, byte, endbyte, bytelength, type: spelled, bit, bitlength, calculation: calc, signed, ...rest }) => {
    const type = anchor === 'range' && spelled === 'number' ? 'integer' : spelled;
    const numeric = type === undefined || ['integer', 'number', 'int', 'uint', 'float'].includes(type);
    const length = type === 'float' ? [2, 4, 8][bytelength % 3] : bytelength;
    const fixed = anchor === 'start' ? { byte, bytelength: length } : anchor === 'end' ? { endbyte: Math.min(-length, endbyte), bytelength: length } : { byte, endbyte };
    const bits = bit !== undefined && anchor !== 'range' && (numeric || type === 'boolean') && type !== 'float' && length <= 6
      ? { bit: bit % (length * 8), ...(bitlength === undefined ? {} : { bitlength: Math.min(bitlength, length * 8 - (bit % (length * 8))) }) } : {};
    const selector = { ...fixed, type, ...rest, ...(type === 'uint' ? {} : { signed }), ...bits, ...(numeric && calc !== undefined ? { calculation: calc } : {}) };
    return Object.fromEntries(Object.entries(selector).filter(([, v]) => v !== undefined));
  }) },
  { weight: 1, arbitrary: fc.record({
    byte: fc.option(fc.integer({ min: 0, max: 14 }), { nil: undefined }),
    endbyte: fc.option(fc.integer({ min: -6, max: 0 }), { nil: undefined }),
    bytelength: fc.option(fc.constantFrom(1, 2, 3, 4, 5, 6, 7, 8, 10), { nil: undefined }),
    type: fc.option(fc.constantFrom('integer', 'number', 'boolean', 'string', 'hexstring', 'int', 'uint', 'float', 'hex'), { nil: undefined }),
    bit: fc.option(fc.integer({ min: 0, max: 15 }), { nil: undefined }),
    calculation: fc.option(calculation, { nil: undefined }),
  }, { requiredKeys: [] }).map((s) => Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined))) },
);

const assetName = fc.oneof(
  fc.constantFrom('temperature', 'gps.lat', 'gps.lng', 'a.b.c', 'constructor', 'toString', '0', 'x y', 'naïve', '"quoted"', '`tick`', '${x}'),
  fc.string({ minLength: 1, maxLength: 6 }).filter((a) => !a.split('.').includes('')),
);
const literal = fc.oneof(fc.constantFrom(null, true, false, 0, -1, 2.5, 'motion', '', '\u2028'), fc.string({ maxLength: 4 }));

const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof({ depthSize: 'small' },
    { weight: 6, arbitrary: selector },
    { weight: 1, arbitrary: literal },
    { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('latitude', 'longitude', 'x', 'y'), tie('v'), { minKeys: 1, maxKeys: 3 }) },
    { weight: 1, arbitrary: fc.array(tie('v'), { maxLength: 3 }) }),
})).v;

const caseValue = fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 20 }) }, fc.boolean(), fc.constantFrom('ab', 'AB', '0102', 'x'), fc.double({ noNaN: false }));

const statements: fc.Arbitrary<unknown[]> = fc.letrec<{ list: unknown[]; statement: unknown }>((tie) => ({
  list: fc.array(tie('statement'), { maxLength: 5 }),
  statement: fc.oneof({ depthSize: 'small' },
    { weight: 5, arbitrary: fc.record({ asset: assetName, value }) },
    { weight: 1, arbitrary: fc.record({
      switch: fc.oneof(fc.constantFrom('$payloadLength', '$fPort'), selector),
      on: fc.array(fc.oneof(
        fc.record({ case: caseValue, do: tie('list') }),
        fc.record({ case: fc.constant('$default'), do: tie('list') }),
        fc.record({ default: fc.constant(true), do: tie('list') })), { maxLength: 4 })
        // One default at most, or the script is refused.
        .map((cases) => cases.filter((c, i) => !('default' in c || c.case === '$default') || cases.findIndex((d) => 'default' in d || d.case === '$default') === i)),
    }) },
    { weight: 1, arbitrary: fc.constant({ comment: 'a note' }) }),
})).list as fc.Arbitrary<unknown[]>;

/** Actuate fields: a fixed position; a bit field or an invertible calculation where the type allows. */
const field = fc.record({
  byte: fc.integer({ min: 0, max: 10 }),
  length: fc.constantFrom(1, 2, 3, 4, 6, 8),
  byteorder: fc.option(fc.constantFrom('big', 'little'), { nil: undefined }),
  type: fc.constantFrom('integer', 'number', 'boolean', 'string', 'hexstring', 'int', 'float'),
  signed: fc.option(fc.boolean(), { nil: undefined }),
  bit: fc.option(fc.integer({ min: 0, max: 7 }), { nil: undefined }),
  bitlength: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  calculation: fc.option(fc.constantFrom('val / 10', 'val * 0.5 - 40', '-val + 3', '100 / val', 'val / 4'), { nil: undefined }),
}).map(({ length, type, bit, bitlength, calculation: calc, ...rest }) => {
  const bytelength = type === 'float' ? [2, 4, 8][length % 3] : length;
  const bits = bit !== undefined && ['integer', 'int', 'boolean'].includes(type) && bytelength <= 6 ? { bit, bitlength: Math.min(bitlength ?? 1, bytelength * 8 - bit) } : {};
  const numeric = ['integer', 'number', 'int', 'float'].includes(type);
  const f = { ...rest, bytelength, type, ...bits, ...(numeric && calc !== undefined ? { calculation: calc } : {}) };
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
});

const actuate = fc.array(fc.oneof(
  { weight: 6, arbitrary: fc.record({ asset: assetName, field }) },
  fc.record({ asset: assetName, field, default: fc.oneof(fc.integer({ min: -5, max: 300 }), fc.boolean(), fc.constant('00ff')) }),
  fc.record({ const: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.boolean(), fc.constant('a5')), field }),
), { maxLength: 4 });

/** A script with a sense block, an actuate block, or both. */
export const scriptArbitrary: fc.Arbitrary<Record<string, unknown>> = fc.record({ sense: statements, actuate }, { requiredKeys: [] })
  .filter((s) => s.sense !== undefined || s.actuate !== undefined);

/** A command for the assets a script may name. */
export const commandArbitrary = fc.dictionary(assetName, fc.oneof(
  fc.integer({ min: -70000, max: 70000 }), fc.double(), fc.boolean(), fc.constantFrom('00ff', 'hi', '', null, 'ABCDEF012345'),
), { maxKeys: 4 });

export type Outcome = { value: unknown } | { code: unknown; message: string; kind: string };

/** What a call gives: its value, or the error's class, code and message. */
export function outcome(run: () => unknown): Outcome {
  try {
    const value = run();
    return { value: value instanceof Uint8Array ? Buffer.from(value).toString('hex') : value };
  } catch (error) {
    return { kind: (error as Error)?.constructor?.name, code: (error as { code?: unknown }).code, message: (error as Error).message };
  }
}

/** Throws unless the two codecs decode `bytes` to the same value (-0 ≠ 0), or fail alike. */
export function sameDecode(generated: Codec, reference: Codec, bytes: Uint8Array, meta?: DecodeMeta): Outcome {
  const got = outcome(() => generated.decode(bytes, meta));
  const want = outcome(() => reference.decode(bytes, meta));
  if (!isDeepStrictEqual(got, want)) {
    throw new Error(`decode differs on ${Buffer.from(bytes).toString('hex')} (${JSON.stringify(meta)}): generated ${show(got)}, reference ${show(want)}`);
  }
  return got;
}

export function sameEncode(generated: Codec, reference: Codec, command: Record<string, unknown>): Outcome {
  const got = outcome(() => generated.encode!(command));
  const want = outcome(() => reference.encode!(command));
  if (!isDeepStrictEqual(got, want)) throw new Error(`encode differs on ${show(command)}: generated ${show(got)}, reference ${show(want)}`);
  return got;
}

function show(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (Object.is(v, -0) ? '-0' : typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));
}

/** Replaces the `at`-th (mod count) object property or array element, depth first, with `value`. */
export function mutate(root: unknown, at: number, value: unknown): void {
  const slots: Array<[Record<string, unknown> | unknown[], string | number]> = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach((v, i) => { slots.push([node, i]); walk(v); });
    else if (typeof node === 'object' && node !== null) for (const [k, v] of Object.entries(node)) { slots.push([node as Record<string, unknown>, k]); walk(v); }
  };
  walk(root);
  if (slots.length === 0) return;
  const [parent, key] = slots[at % slots.length];
  (parent as Record<string | number, unknown>)[key] = value;
}
