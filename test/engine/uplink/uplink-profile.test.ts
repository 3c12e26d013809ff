import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkProfile, compileProfile, profileCacheSize } from '../../../engine/uplink/admission/profile.ts';
import { compileDevice } from '../../../engine/uplink/admission/compileDevice.ts';
import type { AssetProfile } from '../../../engine/ports/directory.ts';

const show = (v: unknown) => (typeof v === 'bigint' ? `${v}n` : JSON.stringify(v));

function accepts(profile: AssetProfile, values: unknown[]): void {
  const check = compileProfile(profile);
  for (const v of values) assert.is(check(v), undefined, `${JSON.stringify(profile)} should accept ${show(v)}`);
}

function refuses(profile: AssetProfile, values: unknown[], reason?: RegExp): void {
  const check = compileProfile(profile);
  for (const v of values) {
    const why = check(v);
    assert.type(why, 'string', `${JSON.stringify(profile)} should refuse ${show(v)}`);
    if (reason) assert.match(why!, reason);
  }
}

// ---- each keyword of the subset ----

test('type: each of the seven types', () => {
  accepts({ type: 'string' }, ['', 'x']);
  refuses({ type: 'string' }, [1, null, true, [], {}], /^value: must be string/);
  accepts({ type: 'number' }, [0, -1.5, 1e300]);
  refuses({ type: 'number' }, ['1', null, NaN, Infinity, -Infinity, 1n], /^value: must be number/);
  accepts({ type: 'integer' }, [0, -3, 2 ** 53]);
  refuses({ type: 'integer' }, [1.5, '1', Infinity], /^value: must be integer/);
  accepts({ type: 'boolean' }, [true, false]);
  refuses({ type: 'boolean' }, [0, 'true', null]);
  accepts({ type: 'object' }, [{}, { a: 1 }]);
  refuses({ type: 'object' }, [[], null, 'x']);
  accepts({ type: 'array' }, [[], [1, 'a']]);
  refuses({ type: 'array' }, [{}, 'abc']);
  accepts({ type: 'null' }, [null]);
  refuses({ type: 'null' }, [0, '', false]);
});

test('type: a list of types', () => {
  accepts({ type: ['string', 'null'] }, ['x', null]);
  refuses({ type: ['string', 'null'] }, [1, false], /string or null/);
});

test('enum: deep equality, reason lists the allowed values', () => {
  accepts({ enum: ['on', 'off', 1, null, { a: [1] }] }, ['on', 1, null, { a: [1] }]);
  refuses({ enum: ['on', 'off'] }, ['dim', 'ON', 0], /one of the allowed values \["on","off"\]/);
  refuses({ enum: [{ a: [1] }] }, [{ a: [1], b: 2 }, { a: [2] }]);
});

test('minimum and maximum are inclusive', () => {
  accepts({ type: 'number', minimum: -40, maximum: 85 }, [-40, 0, 85]);
  refuses({ type: 'number', minimum: -40, maximum: 85 }, [-40.01], /must be >= -40/);
  refuses({ type: 'number', minimum: -40, maximum: 85 }, [85.5], /must be <= 85/);
});

test('properties and required, with the path in the reason', () => {
  const p = {
    type: 'object',
    required: ['latitude', 'longitude'],
    properties: { latitude: { type: 'number', minimum: -90, maximum: 90 }, longitude: { type: 'number', minimum: -180, maximum: 180 } },
  };
  accepts(p, [{ latitude: 51, longitude: 3 }, { latitude: 0, longitude: 0, altitude: 12 }]);
  refuses(p, [{ latitude: 51 }], /^value: must have required properties longitude/);
  refuses(p, [{ latitude: 91, longitude: 0 }], /^value\/latitude: must be <= 90/);
  refuses(p, [{ latitude: 1, longitude: 'x' }], /^value\/longitude: must be number/);
});

test('items applies to every element, deeply', () => {
  const p = { type: 'array', items: { type: 'object', properties: { x: { enum: [1, 2] } } } };
  accepts(p, [[], [{ x: 1 }, { x: 2 }, {}]]);
  refuses(p, [[{ x: 1 }, { x: 3 }]], /^value\/1\/x: must be equal to one of the allowed values/);
});

test('keywords apply only to their JSON type, as in JSON Schema', () => {
  accepts({ properties: { a: { type: 'number' } }, required: ['a'] }, [5, 'x', null]);
  accepts({ items: { type: 'number' } }, ['x', 1]);
  accepts({ minimum: 3 }, ['x', true]);
  refuses({ minimum: 3 }, [2]);
  accepts({}, [null, 1, 'x', [], {}]);
});

test('location profile: types checked, no implicit latitude/longitude range', () => {
  const location = { type: 'object', properties: { latitude: { type: 'number' }, longitude: { type: 'number' } } };
  accepts(location, [{ latitude: 51.05, longitude: 3.72 }, { latitude: 200, longitude: -500 }, {}]);
  refuses(location, [{ latitude: '51', longitude: 3 }, [51, 3], 'here']);
});

test('property names that look like JavaScript internals are plain data', () => {
  const p = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"number"},"constructor":{"type":"string"},"a\\"b":{"type":"boolean"}}}');
  assert.is(checkProfile(p), undefined);
  accepts(p, [JSON.parse('{"__proto__": 1, "constructor": "c", "a\\"b": true}'), {}]);
  refuses(p, [JSON.parse('{"__proto__": "x"}')], /^value\/__proto__: must be number/);
  refuses(p, [{ constructor: 5 }], /must be string/);
  refuses(p, [JSON.parse('{"a\\"b": 1}')], /must be boolean/);
});

// ---- labels ----

test('unit and other labels are stripped and never cause errors', () => {
  const p = {
    type: 'number', unit: '°C', title: 'Temperature', description: 'air', format: 'float', default: 20,
    examples: [21], $schema: 'https://json-schema.org/draft/2020-12/schema', 'x-vendor': { any: ['thing'] }, decimals: 2,
  };
  assert.is(checkProfile(p), undefined);
  accepts(p, [21.5]);
  refuses(p, ['21.5']);
  assert.is(checkProfile({ type: 'object', properties: { t: { type: 'number', unit: 'K' } }, unit: 5 }), undefined);
});

// ---- cache ----

test('equal profiles share one checker; labels and key order do not matter', () => {
  const a = compileProfile({ type: 'number', unit: '°C', minimum: 0, maximum: 100 });
  const b = compileProfile({ maximum: 100, minimum: 0, type: 'number', unit: 'K', title: 'other label' });
  const c = compileProfile(JSON.parse('{"type":"number","minimum":0,"maximum":100}'));
  assert.is(a, b);
  assert.is(a, c);
  assert.is.not(a, compileProfile({ type: 'number', minimum: 0, maximum: 99 }));
  const nestedA = compileProfile({ type: 'object', properties: { x: { type: 'number', unit: 'm' }, y: { type: 'string' } } });
  const nestedB = compileProfile({ properties: { y: { type: 'string' }, x: { type: 'number' } }, type: 'object' });
  assert.is(nestedA, nestedB);
});

test('many devices of one type share the checkers of their assets', () => {
  const before = profileCacheSize();
  const assets = [
    { id: 'a', name: 'temperature', is: 'sensor' as const, profile: { type: 'number', unit: '°C', minimum: -41, maximum: 86 } },
    { id: 'b', name: 'mode', is: 'actuator' as const, profile: { type: 'string', enum: ['eco-x', 'boost-x'] } },
  ];
  const devices = Array.from({ length: 1000 }, (_, i) => compileDevice({ id: `d${i}`, assets: structuredClone(assets) }));
  assert.is(profileCacheSize(), before + 2);
  for (const d of devices) {
    assert.is(d.assets.get('temperature')!.check, devices[0].assets.get('temperature')!.check);
    assert.is(d.assets.get('mode')!.check, devices[0].assets.get('mode')!.check);
  }
  assert.is(devices[0].assets.get('temperature')!.info, devices[0].info.assets[0]);
});

// ---- invalid profiles ----

test('checkProfile names the problem and its path', () => {
  const cases: Array<[unknown, RegExp]> = [
    [null, /^profile: a schema must be a JSON object/],
    [5, /^profile: a schema must be a JSON object/],
    [[{ type: 'string' }], /^profile: a schema must be a JSON object/],
    [true, /^profile: a schema must be a JSON object/],
    [{ type: 'float' }, /^profile\/type: "float" is not one of string, number, integer, boolean, object, array, null/],
    [{ type: 5 }, /^profile\/type: 5 is not one of/],
    [{ type: [] }, /^profile\/type: must name at least one type/],
    [{ type: ['string', 'string'] }, /^profile\/type: repeats a type/],
    [{ enum: 'on' }, /^profile\/enum: must be a non-empty array/],
    [{ enum: [] }, /^profile\/enum: must be a non-empty array/],
    [{ enum: [1, Infinity] }, /^profile\/enum\/1: Infinity is not a finite number/],
    [{ enum: [new Date()] }, /^profile\/enum\/0: not a JSON value/],
    [{ minimum: '0' }, /^profile\/minimum: must be a finite number/],
    [{ maximum: NaN }, /^profile\/maximum: must be a finite number/],
    [{ minimum: 10, maximum: 1 }, /^profile: minimum 10 is greater than maximum 1/],
    [{ properties: [] }, /^profile\/properties: must be an object of property schemas/],
    [{ properties: { a: 'number' } }, /^profile\/properties\/a: a schema must be a JSON object/],
    [{ properties: { a: { properties: { b: { type: 'int' } } } } }, /^profile\/properties\/a\/properties\/b\/type: "int" is not one of/],
    [{ required: 'a' }, /^profile\/required: must be an array of property names/],
    [{ required: [1] }, /^profile\/required: 1 is not a property name/],
    [{ required: ['a', 'a'] }, /^profile\/required: repeats a property name/],
    [{ required: ['toString'] }, /^profile\/required: "toString" names a built-in object member/],
    [{ items: [{ type: 'number' }] }, /^profile\/items: tuple form/],
    [{ items: 5 }, /^profile\/items: a schema must be a JSON object/],
    [{ type: 'string', pattern: '^a' }, /^profile\/pattern: keyword "pattern" is not supported \(supported: type, enum, minimum, maximum, properties, required, items\)/],
    [{ anyOf: [{ type: 'string' }] }, /keyword "anyOf" is not supported/],
    [{ type: 'object', additionalProperties: false }, /keyword "additionalProperties" is not supported/],
    [{ items: { $ref: '#' } }, /^profile\/items\/\$ref: keyword "\$ref" is not supported/],
    [{ type: 'number', exclusiveMinimum: 0 }, /keyword "exclusiveMinimum" is not supported/],
  ];
  for (const [profile, reason] of cases) {
    const why = checkProfile(profile as AssetProfile);
    assert.type(why, 'string', JSON.stringify(profile));
    assert.match(why!, reason);
  }
});

test('valid profiles pass checkProfile', () => {
  for (const p of [
    {}, { type: 'number' }, { type: ['integer', 'null'], minimum: 0 }, { enum: [1, 'a', null, [1], { a: 1 }] },
    { type: 'array', items: { type: 'array', items: { type: 'string' } } },
    { type: 'object', required: ['a'], properties: { a: { type: 'object', properties: { b: { enum: [true] } } } } },
  ]) assert.is(checkProfile(p), undefined, JSON.stringify(p));
});

test('hostile profiles: deep nesting and cycles are refused, not a crash', () => {
  let deep: Record<string, unknown> = { type: 'number' };
  for (let i = 0; i < 10_000; i++) deep = { type: 'array', items: deep };
  assert.match(checkProfile(deep)!, /nested too deeply/);
  const cyclic: Record<string, unknown> = { type: 'object', properties: {} };
  (cyclic.properties as Record<string, unknown>).self = cyclic;
  assert.match(checkProfile(cyclic)!, /nested too deeply/);
  const enumCycle: unknown[] = [];
  enumCycle.push(enumCycle);
  assert.match(checkProfile({ enum: enumCycle })!, /nested too deeply/);
});

test('compileProfile of an invalid profile refuses every value with the reason', () => {
  const check = compileProfile({ type: 'float', unit: 'm' });
  for (const v of [1, 'x', null]) assert.match(check(v)!, /^asset profile is invalid: profile\/type: "float"/);
});

test.run();
