import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { invertCalculation, parseCalculation, CalculationError } from '../../../engine/conversion/calculation.ts';
import { compileCalculation } from '../../support/reference/closureReaders.ts';
import { checkScript, type ScriptIssue } from '../../../engine/conversion/checkScript.ts';

const sel = (extra: Record<string, unknown>) => ({ sense: [{ asset: 'a', value: { byte: 0, ...extra } }] });

function only(issues: ScriptIssue[], path: string, message: RegExp): void {
  assert.ok(issues.length >= 1, 'expected an issue');
  const hit = issues.find((i) => i.path === path);
  assert.ok(hit, `no issue at ${path}: ${JSON.stringify(issues)}`);
  assert.match(hit!.message, message);
}

test('calculations: arithmetic over val, precedence, unary minus, exponents', () => {
  const cases: Array<[string, number, number]> = [
    ['val / 100', 2345, 23.45],
    ['val * 0.036 - 40', 1000, -4],
    ['val*0.5-20', 28, -6],
    ['-val', 5, -5],
    ['- -val', 5, 5],
    ['(val + 2) * 3', 1, 9],
    ['val + 2 * 3', 1, 7],
    ['val % 256', 513, 1],
    ['10 - val - 2', 3, 5],
    ['val / 2 / 5', 100, 10],
    ['1.5e2 + val', 1, 151],
    ['.5 * val', 4, 2],
    ['val * -1', 3, -3],
    ['((((val))))', 7, 7],
    ['  val\t/\n10 ', 15, 1.5],
  ];
  for (const [text, input, output] of cases) {
    assert.is(compileCalculation(parseCalculation(text))(input), output, text);
  }
});

test('calculations: anything but numbers, val, + - * / %, parentheses and unary minus is rejected', () => {
  const rejected = [
    'Math.max(val, 1)', 'val ** 2', 'val ^ 2', 'val >> 1', 'val & 1', 'val && 1', 'val || 1', 'val; process.exit(1)',
    'val.toString()', 'val[0]', "'a' + val", '"a"', 'x * 2', 'value / 10', 'eval("1")', 'val +', '(val', 'val)',
    'val val', '', '   ', '+val', 'val ? 1 : 2', 'val == 1', 'val = 1', '1e400 * val', 'val / 1e', 'val,1', '`${val}`',
    'new Function()', 'constructor', '__proto__', 'val\u00a0', '١ + val', '0x10 * val', 'val / 10 // comment',
  ];
  for (const text of rejected) {
    let threw = false;
    try { parseCalculation(text); } catch (error) { threw = error instanceof CalculationError; }
    assert.ok(threw, `accepted ${JSON.stringify(text)}`);
  }
  assert.throws(() => parseCalculation('('.repeat(40) + 'val' + ')'.repeat(40)), /nested deeper/);
  assert.throws(() => parseCalculation('val + '.repeat(60) + 'val'), /longer than 256/);
});

test('calculations: only single-val expressions without % invert', () => {
  const inverts: Array<[string, number]> = [['val / 10', 215], ['val * 0.036 - 40', 1234], ['-val + 3', 9], ['100 / val', 4], ['(val - 32) * 5 / 9', 212], ['val', 5]];
  for (const [text, raw] of inverts) {
    const tree = parseCalculation(text);
    const inverse = invertCalculation(tree)!;
    assert.ok(inverse, text);
    assert.ok(Math.abs(inverse(compileCalculation(tree)(raw)) - raw) < 1e-9, text);
  }
  for (const text of ['val * val', 'val % 10', 'val - val', 'val * 0', '5']) assert.is(invertCalculation(parseCalculation(text)), undefined, text);
});

test('calculation issues name the selector path', () => {
  only(checkScript(sel({ calculation: 'Math.round(val)' })), 'sense[0].value.calculation', /unknown name 'Math'/);
  only(checkScript(sel({ calculation: 'val / 0' })), 'sense[0].value.calculation', /divides by zero/);
  only(checkScript(sel({ calculation: '42' })), 'sense[0].value.calculation', /must use val/);
  only(checkScript(sel({ calculation: 10 })), 'sense[0].value.calculation', /must be a string/);
  only(checkScript(sel({ type: 'string', bytelength: 4, calculation: 'val / 2' })), 'sense[0].value.calculation', /numeric type/);
  only(checkScript({ actuate: [{ asset: 'a', field: { byte: 0, calculation: 'val % 10' } }] }), 'actuate[0].field.calculation', /cannot be inverted/);
});

test('selector issues name the statement path', () => {
  const script = {
    sense: [
      { asset: 'ok', value: { byte: 0 } },
      { asset: 'ok2', value: { byte: 1, type: 'integer' } },
      { asset: 'bad', value: { byte: -1, type: 'integer' } },
    ],
  };
  assert.equal(checkScript(script), [{ path: 'sense[2].value.byte', message: 'must be an integer from 0 to 65535' }]);
  only(checkScript(sel({ bytelength: 0 })), 'sense[0].value.bytelength', /integer from 1/);
  only(checkScript(sel({ bytelenght: 2 })), 'sense[0].value.bytelenght', /unknown selector field/);
  only(checkScript(sel({ byteorder: 'middle' })), 'sense[0].value.byteorder', /big' or 'little/);
  only(checkScript(sel({ type: 'double' })), 'sense[0].value.type', /must be one of/);
  only(checkScript(sel({ signed: 'yes' })), 'sense[0].value.signed', /true or false/);
  only(checkScript(sel({ type: 'uint', signed: true })), 'sense[0].value.signed', /unsigned/);
  only(checkScript(sel({ type: 'float', bytelength: 3 })), 'sense[0].value.bytelength', /2, 4 or 8/);
  // Published scripts put signed on hexstrings; where it means nothing it is ignored.
  assert.equal(checkScript(sel({ type: 'hexstring', bytelength: 6, signed: 'false' })), []);
  assert.equal(checkScript(sel({ type: 'number', bytelength: 4, signed: false })), []);
  only(checkScript(sel({ bit: 8 })), 'sense[0].value.bit', /0 to 7/);
  only(checkScript(sel({ bit: 6, bitlength: 3 })), 'sense[0].value.bitlength', /1 to 2/);
  only(checkScript(sel({ bitlength: 3 })), 'sense[0].value.bitlength', /needs bit/);
  only(checkScript(sel({ bit: 0, type: 'string' })), 'sense[0].value.bit', /integers or booleans/);
  only(checkScript(sel({ bit: 0, bytelength: 8 })), 'sense[0].value.bit', /at most 6 bytes/);
  only(checkScript({ sense: [{ asset: 'a', value: { endbyte: 0 } }] }), 'sense[0].value.endbyte', /must be negative/);
  only(checkScript({ sense: [{ asset: 'a', value: { endbyte: -2, bytelength: 4 } }] }), 'sense[0].value.bytelength', /past the end/);
  only(checkScript({ sense: [{ asset: 'a', value: { byte: 0, endbyte: 0, bytelength: 2, type: 'hex' } }] }), 'sense[0].value.bytelength', /range sets the length/);
  only(checkScript({ sense: [{ asset: 'a', value: { byte: 0, endbyte: 0, type: 'number' } }] }), 'sense[0].value.type', /fixed bytelength/);
  only(checkScript({ sense: [{ asset: 'a', value: { type: 'integer', bytelength: 2 } }] }), 'sense[0].value', /needs byte/);
  only(checkScript({ sense: [{ asset: 'a', value: { json: 'Lat' } }] }), 'sense[0].value', /needs byte/);
  only(checkScript({ sense: [{ asset: 'a', value: { json: 'Lat' } }] }), 'sense[0].value.json', /JSON payloads/);
  only(checkScript(sel({ byte: 65535, bytelength: 10 })), 'sense[0].value', /beyond 65536/);
});

test('issues inside objects of values, switches, cases and nested blocks', () => {
  only(checkScript({ sense: [{ asset: 'location', value: { latitude: { byte: 0, bytelength: 4, type: 'float' }, longitude: { byte: 4, bytelength: 5, type: 'float' } } }] }),
    'sense[0].value.longitude.bytelength', /2, 4 or 8/);
  const nested = {
    sense: [
      { comment: 'header' },
      {
        switch: '$payloadLength',
        on: [
          { case: 2, do: [{ switch: { byte: 0 }, on: [{ case: 1, do: [{ asset: 'x', value: { byte: 1, type: 'bool' } }] }] }] },
          { case: '$default', do: [] },
        ],
      },
    ],
  };
  assert.equal(checkScript(nested), [{ path: 'sense[1].on[0].do[0].on[0].do[0].value.type', message: 'must be one of integer, number, boolean, string, hexstring (or int, uint, float, hex)' }]);
  only(checkScript({ sense: [[{ asset: 'a', value: { byte: 'x' } }]] }), 'sense[0][0].value.byte', /integer/);
  only(checkScript({ sense: [{ switch: '$length', on: [] }] }), 'sense[0].switch', /payloadLength/);
  only(checkScript({ sense: [{ switch: '$payloadLength', on: {} }] }), 'sense[0].on', /list of cases/);
  only(checkScript({ sense: [{ switch: '$payloadLength', on: [{ case: 2, do: [] }, { case: 2, do: [] }] }] }), 'sense[0].on[1].case', /duplicate case 2/);
  only(checkScript({ sense: [{ switch: '$payloadLength', on: [{ case: 'two', do: [] }] }] }), 'sense[0].on[0].case', /never matches/);
  only(checkScript({ sense: [{ switch: { byte: 0, type: 'boolean' }, on: [{ case: 1, do: [] }] }] }), 'sense[0].on[0].case', /boolean/);
  only(checkScript({ sense: [{ switch: '$payloadLength', on: [{ case: '$default', do: [] }, { default: true, do: [] }] }] }), 'sense[0].on[1]', /more than one default/);
  only(checkScript({ sense: [{ switch: '$payloadLength', on: [{ do: [] }] }] }), 'sense[0].on[0].case', /required/);
  only(checkScript({ sense: [{ switch: '$payloadLength', on: [{ case: 1 }] }] }), 'sense[0].on[0].do', /list of statements/);
  only(checkScript({ sense: [{ asset: 'a' }] }), 'sense[0].value', /required/);
  only(checkScript({ sense: [{ asset: '', value: 1 }] }), 'sense[0].asset', /non-empty/);
  only(checkScript({ sense: [{ asset: 'a..b', value: 1 }] }), 'sense[0].asset', /empty segment/);
  only(checkScript({ sense: [{ asset: '__proto__.x', value: 1 }] }), 'sense[0].asset', /__proto__/);
  only(checkScript({ sense: [{ asset: 'a', value: 1, extra: 1 }] }), 'sense[0].extra', /unknown statement field/);
  only(checkScript({ sense: [{ value: 1 }] }), 'sense[0].asset', /non-empty string/);
  only(checkScript({ sense: [42] }), 'sense[0]', /must be an object/);
  only(checkScript({ sense: [{ foo: 1 }] }), 'sense[0]', /asset and value/);
});

test('actuate issues: position, const and default values, overlaps', () => {
  only(checkScript({ actuate: [{ asset: 'a', field: { endbyte: -1 } }] }), 'actuate[0].field.endbyte', /fixed position/);
  only(checkScript({ actuate: [{ asset: 'a', const: 1, field: { byte: 0 } }] }), 'actuate[0]', /either asset or const/);
  only(checkScript({ actuate: [{ field: { byte: 0 } }] }), 'actuate[0]', /either asset or const/);
  only(checkScript({ actuate: [{ asset: 'a' }] }), 'actuate[0].field', /required/);
  only(checkScript({ actuate: [{ const: 300, field: { byte: 0 } }] }), 'actuate[0].const', /out of range/);
  only(checkScript({ actuate: [{ const: 'zz', field: { byte: 0, type: 'hexstring' } }] }), 'actuate[0].const', /hex digits/);
  only(checkScript({ actuate: [{ const: {}, field: { byte: 0 } }] }), 'actuate[0].const', /number, a string or a boolean/);
  only(checkScript({ actuate: [{ asset: 'a', field: { byte: 0, type: 'boolean' }, default: 'on' }] }), 'actuate[0].default', /boolean/);
  only(checkScript({ actuate: [{ const: 1, field: { byte: 0 }, default: 1 }] }), 'actuate[0].default', /only an asset field/);
  only(checkScript({ actuate: [{ asset: 'a', field: { byte: 0, bytelength: 2 } }, { asset: 'b', field: { byte: 1 } }] }), 'actuate[1].field', /overlaps actuate\[0\]\.field at byte 1/);
  only(checkScript({ actuate: [{ asset: 'a', field: { byte: 0, bit: 0, bitlength: 4 } }, { asset: 'b', field: { byte: 0, bit: 3 } }] }), 'actuate[1].field', /overlaps/);
  // Disjoint bits of one byte are fine, in either byte order.
  assert.equal(checkScript({ actuate: [{ asset: 'a', field: { byte: 0, bit: 0, bitlength: 4 } }, { asset: 'b', field: { byte: 0, bit: 4, bitlength: 4 } }] }), []);
  assert.equal(checkScript({ actuate: [{ asset: 'a', field: { byte: 0, bytelength: 2, byteorder: 'little', bit: 8 } }, { asset: 'b', field: { byte: 0 } }] }), []);
  only(checkScript({ actuate: [{ asset: 'a', field: { byte: 0, bytelength: 2, bit: 8 } }, { asset: 'b', field: { byte: 0 } }] }), 'actuate[1].field', /overlaps/);
  only(checkScript({ actuate: {} }), 'actuate', /list/);
});

test('the script as a whole', () => {
  for (const bad of [null, 42, 'script', [], true]) only(checkScript(bad), '', /JSON object/);
  only(checkScript({}), '', /sense or an actuate block/);
  only(checkScript({ sense: [], decode: [] }), 'decode', /unknown top-level field/);
  only(checkScript({ sense: [], name: 3 }), 'name', /string/);
  only(checkScript({ sense: {} }), 'sense', /list of statements/);
  assert.equal(checkScript({ sense: [] }), []);
  assert.equal(checkScript({ name: 'x', version: '1.0.0', comment: 'c', sense: [{ comment: 'nothing yet' }] }), []);
  const big = { sense: Array.from({ length: 2500 }, (_, i) => ({ asset: `a${i}`, value: 1 })) };
  only(checkScript(big), 'sense[2000]', /more than 2000 statements/);
  let deep: unknown = [];
  for (let i = 0; i < 40; i++) deep = [{ switch: '$payloadLength', on: [{ case: 1, do: deep }] }];
  assert.ok(checkScript({ sense: deep }).some((i) => /nest deeper/.test(i.message)));
  const many = { sense: Array.from({ length: 500 }, () => ({ asset: 'a', value: { byte: -1 } })) };
  assert.is(checkScript(many).length, 100);
});

test('checkScript never throws, even on hostile objects', () => {
  const hostile = { get sense() { throw new Error('boom'); } };
  const issues = checkScript(hostile);
  assert.is(issues.length, 1);
  assert.match(issues[0].message, /boom/);
  const cyclic: Record<string, unknown> = { asset: 'a' };
  cyclic.value = cyclic;
  assert.ok(checkScript({ sense: [cyclic] }).length > 0);
});

test.run();
