/**
 * Scripts that try to become code (engine/conversion/generateCodec.ts, security review): strings
 * full of quotes, backticks, `${}`, unicode escapes and line separators; `__proto__` and
 * `constructor`; huge, negative-zero and non-finite numbers. Each is either refused when checked,
 * or decodes its data exactly as the reference closure compiler does — and never runs as code.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { checkedProgram } from '../../../engine/conversion/analyzeScript.ts';
import { checkScript } from '../../../engine/conversion/checkScript.ts';
import { compileScript } from '../../support/reference/compileScript.ts';
import { checkSource, emitProgram, generateCodec } from '../../../engine/conversion/generateCodec.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { sameDecode, sameEncode } from '../../support/conversionScripts.ts';

const probe = globalThis as { pwned?: unknown };
const HOSTILE = [
  "'); globalThis.pwned = 1; ('",
  '"); globalThis.pwned = 1; ("',
  '`; globalThis.pwned = 1; `',
  '${globalThis.pwned = 1}',
  '`${globalThis.pwned = 1}`',
  '\\u0027); globalThis.pwned = 1; //',
  '\\',
  '\u2028globalThis.pwned = 1\u2029',
  '*/ globalThis.pwned = 1; /*',
  '</script><script>globalThis.pwned = 1</script>',
  'constructor',
  'prototype',
  'toString',
  '__defineGetter__',
  'hasOwnProperty',
  '\u0000',
  'd[0]',
  'h.readUint',
  'type',
];
const NUMBERS = [1e308, -1e308, 5e-324, -0, Number.MAX_SAFE_INTEGER + 2, NaN, Infinity, -Infinity, 1e400];

/** Refused when checked (generateCodec throws VALIDATION_FAILED, as compileScript does), or decoded alike. */
function refusedOrAlike(script: unknown, payloads: Uint8Array[], commands: Array<Record<string, unknown>> = []): 'refused' | 'compiled' {
  if (checkScript(script).length > 0) {
    for (const compile of [generateCodec, compileScript]) {
      try {
        compile(script as never);
        assert.unreachable('a refused script compiled');
      } catch (error) {
        assert.instance(error, FleetError);
        assert.is((error as FleetError).code, 'VALIDATION_FAILED');
      }
    }
    return 'refused';
  }
  const { source, data } = emitProgram(checkedProgram(script));
  checkSource(source);
  // checkSource keeps out every character a string would need to break out of the vocabulary.
  for (const item of data) {
    if (typeof item === 'string' && /['"`\\\u0080-\uffff]/.test(item)) assert.not.ok(source.includes(item), `data ${JSON.stringify(item)} is in the source`);
  }
  const generated = generateCodec(script as never);
  const reference = compileScript(script as never);
  for (const bytes of payloads) sameDecode(generated, reference, bytes, { fPort: bytes.length });
  if (generated.encode) for (const command of commands) sameEncode(generated, reference, command);
  assert.is(probe.pwned, undefined);
  return 'compiled';
}

const payloads = [new Uint8Array(0), Uint8Array.from([1, 2, 3, 4]), Uint8Array.from({ length: 16 }, (_, i) => i * 17), new Uint8Array(16).fill(255)];

test('hostile asset names and object keys are data: refused (__proto__) or decoded alike', () => {
  const outcomes = new Set<string>();
  for (const name of [...HOSTILE, '__proto__', `a.${HOSTILE[0]}`, 'a.__proto__.b']) {
    outcomes.add(refusedOrAlike({ sense: [{ asset: name, value: { byte: 0 } }] }, payloads));
    outcomes.add(refusedOrAlike({ sense: [{ asset: 'o', value: { [name]: { byte: 1 }, other: name } }] }, payloads));
    outcomes.add(refusedOrAlike({ sense: [{ asset: `${name}.inner`, value: [name, { byte: 2 }] }] }, payloads));
    const state = generateCodec({ sense: [{ asset: 'x', value: name }] } as never).decode(payloads[1]);
    assert.equal(state, { x: name });
  }
  assert.equal([...outcomes].sort(), ['compiled', 'refused']);
  const { decode } = generateCodec({ sense: [{ asset: 'constructor', value: { byte: 0 } }, { asset: 'toString', value: HOSTILE[0] }] } as never);
  const state = decode(payloads[1]);
  assert.is(Object.getPrototypeOf(state), Object.prototype);
  assert.ok(Object.hasOwn(state, 'constructor'));
  assert.equal({ ...state }, { constructor: 1, toString: HOSTILE[0] });
});

test('hostile strings as literals, case values, constants and defaults are data', () => {
  for (const text of HOSTILE) {
    refusedOrAlike({ sense: [{ switch: { byte: 0, endbyte: 0, type: 'string' }, on: [{ case: text, do: [{ asset: 'hit', value: text }] }, { default: true, do: [{ asset: 'miss', value: [text, null] }] }] }] },
      [...payloads, new TextEncoder().encode(text)]);
    refusedOrAlike({ sense: [{ switch: { byte: 0, bytelength: 2, type: 'hexstring' }, on: [{ case: text, do: [] }, { case: 'ABcd', do: [{ asset: 'hex', value: true }] }] }] },
      [...payloads, Uint8Array.from([0xab, 0xcd])]);
    refusedOrAlike({ actuate: [{ asset: text, field: { byte: 0, bytelength: 4, type: 'string' }, default: 'ok' }, { const: text, field: { byte: 4, bytelength: 64, type: 'string' } }] },
      [], [{}, { [text]: 'abc' }, { [text]: text }]);
    refusedOrAlike({ sense: [{ asset: 'a', value: { byte: 0, calculation: `val${text}` } }] }, payloads);
    refusedOrAlike({ sense: [{ asset: 'a', value: { byte: 0, type: text } }] }, payloads);
  }
});

test('huge, negative-zero and non-finite numbers: refused or decoded alike', () => {
  const outcomes = new Set<string>();
  for (const n of NUMBERS) {
    outcomes.add(refusedOrAlike({ sense: [{ asset: 'a', value: n }, { asset: 'b', value: { x: n, y: [n] } }] }, payloads));
    outcomes.add(refusedOrAlike({ sense: [{ asset: 'a', value: { byte: n } }] }, payloads));
    outcomes.add(refusedOrAlike({ sense: [{ asset: 'a', value: { byte: 0, bytelength: n } }] }, payloads));
    outcomes.add(refusedOrAlike({ sense: [{ asset: 'a', value: { byte: 0, bytelength: 2, calculation: `val * ${n}` } }] }, payloads));
    outcomes.add(refusedOrAlike({ sense: [{ asset: 'a', value: { byte: 0, bytelength: 2, calculation: `${n} / val - val` } }] }, payloads));
    outcomes.add(refusedOrAlike({ sense: [{ switch: { byte: 0, bytelength: 4, type: 'float' }, on: [{ case: n, do: [{ asset: 'hit', value: n }] }] }] },
      [...payloads, Uint8Array.from([0x7f, 0x80, 0, 0]), Uint8Array.from([0x7f, 0xc0, 0, 0]), Uint8Array.from([0x80, 0, 0, 0])]));
    outcomes.add(refusedOrAlike({ sense: [{ switch: '$fPort', on: [{ case: n, do: [{ asset: 'port', value: true }] }] }] }, payloads));
    outcomes.add(refusedOrAlike({ actuate: [{ asset: 'f', field: { byte: 0, bytelength: 8, type: 'float' }, default: n }, { const: n, field: { byte: 8, bytelength: 2 } }] }, [], [{}, { f: n }]));
  }
  assert.equal([...outcomes].sort(), ['compiled', 'refused']);
  // -0 keeps its sign through a generated literal.
  assert.ok(Object.is(generateCodec({ sense: [{ asset: 'z', value: -0 }] } as never).decode(payloads[0]).z, -0));
  assert.ok(Object.is(generateCodec({ sense: [{ asset: 'z', value: { byte: 0, calculation: 'val * -0' } }] } as never).decode(payloads[1]).z, -0));
});

test('any unicode in names, literals and case values stays data', () => {
  const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom(...HOSTILE));
  fc.assert(fc.property(text, text, text, fc.uint8Array({ maxLength: 8 }), (name, literal, label, bytes) => {
    refusedOrAlike({ sense: [
      { asset: name, value: literal },
      { switch: { byte: 0, endbyte: 0, type: 'string' }, on: [{ case: label, do: [{ asset: `${name}.${label}`, value: { [literal]: label } }] }] },
    ] }, [bytes, new TextEncoder().encode(label)]);
  }), { numRuns: 2_000 });
  assert.is(probe.pwned, undefined);
});

test('checkSource refuses anything outside the generated vocabulary', () => {
  checkSource('const c0 = d[0]; function f1(b) { return (b[0] << 8) / 1e+21; }');
  for (const bad of ["const a = 'x';", 'const a = "x";', 'const a = `x`;', 'globalThis.pwned = 1;', 'process.exit(1);', 'eval(c0);',
    'c0\\u0061', 'const é = 1;', 'import(c0);', 'Function(c0)();', 'this.x = 1;', 'o[c0] = require;']) {
    assert.throws(() => checkSource(bad), /code generator/, bad);
  }
});

test.run();
