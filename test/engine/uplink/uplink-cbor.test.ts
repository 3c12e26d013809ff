import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Encoder } from 'cbor-x';
import { CborDecodeError, CborMap, CborSimple, CborTag, decodeCbor } from '../../../engine/uplink/admission/decodeCbor.ts';
import { MAX_JSON_DEPTH } from '../../../engine/kernel/checkJsonValue.ts';
import { RECEIVED_AT, codes, envelope, hexBytes, run } from '../../support/uplink.ts';

interface StateCase {
  name: string;
  hex: string;
  asset?: string;
  rows: Array<{ asset: string; ts: number | null; value: unknown }>;
  rejections: Array<{ code: string; asset?: string }>;
}

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8'));
const stateCases: StateCase[] = fixture('cbor-device-states.json').cases;
const appendixA: Array<{ hex: string; json: unknown }> = fixture('rfc8949-appendix-a.json').cases;

function decodeError(hex: string | Uint8Array, depth = MAX_JSON_DEPTH): CborDecodeError {
  try {
    decodeCbor(typeof hex === 'string' ? hexBytes(hex) : hex, depth);
  } catch (error) {
    assert.instance(error, CborDecodeError);
    return error as CborDecodeError;
  }
  assert.unreachable(`expected ${typeof hex === 'string' ? hex : 'bytes'} to fail`);
  throw new Error('unreachable');
}

// ---- golden device-state bodies ----

for (const c of stateCases) {
  test(`golden: ${c.name}`, () => {
    const out = run(envelope(hexBytes(c.hex), 'cbor', c.asset === undefined ? {} : { asset: c.asset }));
    assert.equal(out.rows.map((r) => ({ asset: r.asset, ts: r.ts, value: r.value })), c.rows.map((r) => ({ ...r, ts: r.ts ?? RECEIVED_AT })));
    assert.equal(out.rejections.map((r) => (r.asset === undefined ? { code: r.code } : { code: r.code, asset: r.asset })), c.rejections);
    for (const r of out.rejections) assert.ok(r.reason.length > 10, `reason for ${r.code}: ${r.reason}`);
  });
}

test('cbor at: time tags and their limits', () => {
  const door = (at: string) => run(envelope(hexBytes(`a1 64646f6f72 a2 6576616c7565 f5 626174 ${at}`), 'cbor'));
  const base = 1363896240000;
  const good: Array<[string, number]> = [
    ['d903e9 a2 01 1a514b67b0 25 1a0007a120', base + 500], // 1001({1: s, -6: 500000 µs})
    ['d903e9 a2 01 1a514b67b0 28 1a1dcd64ff', base + 499], // 1001({1: s, -9: 499999999 ns})
    ['d903e9 a1 01 1a514b67b0', base],
    ['d903e9 a1 01 fb41d452d9ec200000', base + 500], // float seconds
    ['c1 1a514b67b0', base],
    ['f6', RECEIVED_AT],
  ];
  for (const [at, ts] of good) {
    const out = door(at);
    assert.equal(out.rejections, [], at);
    assert.is(out.rows[0].ts, ts, at);
  }
  const bad: Array<[string, RegExp]> = [
    ['d903e9 a2 01 1a514b67b0 22 1903e8', /tag 1001/], // fraction of a whole second
    ['d903e9 a3 01 1a514b67b0 22 01 25 01', /tag 1001/], // two fractions
    ['d903e9 a2 01 fb41d452d9ec200000 22 01', /tag 1001/], // fraction with float seconds
    ['d903e9 a2 01 1a514b67b0 04 01', /tag 1001/], // key outside the subset
    ['d903e9 a1 22 05', /tag 1001/], // no base time
    ['d903e9 01', /tag 1001/],
    ['c1 fb7e37e43c8800759c', /tag 1/], // 1e300 s
    ['c1 6161', /tag 1/],
    ['c1 1bffffffffffffffff', /tag 1/],
    ['c0 01', /tag 0/],
    ['c0 63616263', /^at \(tag 0\) "abc" is not an ISO 8601 timestamp/],
    ['d9 03e8 01', /tag 1000/],
    ['1a6553f100', /not a number; CBOR senders may tag epoch seconds with tag 1/],
    ['f5', /must be an ISO 8601 timestamp string/],
    // Tag 1 reads negative seconds too, but a time before 1970 is outside admission's window.
    ['c1 3903e7', /before 1970-01-01T00:00:00.000Z/], // tag 1, -1000 s
  ];
  for (const [at, reason] of bad) {
    const out = door(at);
    assert.equal(codes(out), [['INVALID_AT', 'door']], at);
    assert.match(out.rejections[0].reason, reason);
  }
});

// ---- the decoder on RFC 8949 Appendix A ----

test('decodeCbor reads the RFC 8949 Appendix A examples', () => {
  for (const { hex, json } of appendixA) assert.equal(decodeCbor(hexBytes(hex), MAX_JSON_DEPTH), json, hex);
});

test('decodeCbor: values JSON cannot hold come back as markers', () => {
  const d = (hex: string) => decodeCbor(hexBytes(hex), MAX_JSON_DEPTH);
  assert.is(d('1bffffffffffffffff'), 18446744073709551615n);
  assert.is(d('3bffffffffffffffff'), -18446744073709551616n);
  assert.is(d('1b0020000000000000'), 2n ** 53n);
  assert.is(d('1b001fffffffffffff'), 2 ** 53 - 1);
  assert.is(d('3b001ffffffffffffe'), -(2 ** 53) + 1);
  assert.is(d('3b001fffffffffffff'), -(2n ** 53n));
  assert.is(d('f7'), undefined);
  assert.ok(Number.isNaN(d('f97e00') as number));
  assert.is(d('f97c00'), Infinity);
  assert.is(d('f9fc00'), -Infinity);
  assert.is(d('fa7f800000'), Infinity);
  assert.equal(d('4401020304'), Uint8Array.of(1, 2, 3, 4));
  assert.equal(d('5f42010243030405ff'), Uint8Array.of(1, 2, 3, 4, 5));
  const tag = d('c11a514b67b0') as CborTag;
  assert.instance(tag, CborTag);
  assert.equal([tag.tag, tag.value], [1, 1363896240]);
  assert.equal((d('f0') as CborSimple).value, 16);
  assert.equal((d('f8ff') as CborSimple).value, 255);
  const map = d('a201020304') as CborMap;
  assert.instance(map, CborMap);
  assert.equal(map.entries, [[1, 2], [3, 4]]);
  const mixed = d('a2616101 0203') as CborMap;
  assert.equal(mixed.entries, [['a', 1], [2, 3]]);
});

test('decodeCbor: a "__proto__" key is an own data property', () => {
  const v = decodeCbor(hexBytes('a1 695f5f70726f746f5f5f a1 6178 01'), MAX_JSON_DEPTH) as Record<string, unknown>;
  assert.is(Object.getPrototypeOf(v), Object.prototype);
  assert.ok(Object.hasOwn(v, '__proto__'));
  assert.equal(Object.getOwnPropertyDescriptor(v, '__proto__')?.value, { x: 1 });
  assert.is((v as { x?: unknown }).x, undefined);
});

test('decodeCbor: long and non-ASCII text strings', () => {
  const long = 'é'.repeat(40) + 'x'.repeat(100);
  const bytes = new TextEncoder().encode(long);
  const hex = '78' + bytes.length.toString(16).padStart(2, '0') + Buffer.from(bytes).toString('hex');
  assert.is(decodeCbor(hexBytes(hex), 1), long);
  assert.is(decodeCbor(hexBytes('6c' + Buffer.from('abcdefghijkl').toString('hex')), 1), 'abcdefghijkl');
});

// ---- malformed input ----

test('decodeCbor: every truncation of a valid body is MALFORMED_CBOR', () => {
  const full = hexBytes('a3 6b74656d7065726174757265 fb4035800000000000 64646f6f72 d878 82 f5 c1 1a59682f00 656c6162656c 7f 6161 6162 ff');
  assert.equal(Object.keys(decodeCbor(full, MAX_JSON_DEPTH) as object), ['temperature', 'door', 'label']);
  for (let n = 0; n < full.length; n++) {
    const e = decodeError(full.subarray(0, n));
    assert.is(e.code, 'MALFORMED_CBOR', `prefix of ${n} bytes`);
    assert.match(e.message, /truncated|empty/);
  }
});

test('decodeCbor: not well-formed encodings (RFC 8949 Appendix F) are MALFORMED_CBOR', () => {
  const bad = [
    '1c', '1d', '1e', '3c', '5c', '7c', '9c', 'bc', 'dc', 'fc', 'fd', 'fe', // reserved additional information
    '1f', '3f', 'df', // indefinite length on major types 0, 1, 6
    'ff', '81ff', '8200ff', 'a1ff', 'a1ff00', // stray break
    'f800', 'f81f', // two-byte simple values < 32
    '5f4100', '5f6100ff', '7f4100ff', '5f5f4100ffff', '7f7f6100ffff', // bad indefinite string chunks
    '0000', 'a100', 'a20102', // trailing bytes / odd map
    '62c328', '63e28228', '64f0288cbc', '7f61c361a9ff', // invalid UTF-8 (also split across chunks)
    'a2616101616102', // duplicate text key
    'a2 0102 0104', // duplicate integer key
    '5bffffffffffffffff00', '7b0000000100000000', '9b0010000000000000', // lengths beyond the input
  ];
  for (const hex of bad) assert.is(decodeError(hex).code, 'MALFORMED_CBOR', hex);
});

test('decodeCbor: depth is limited while decoding (arrays, maps, tags), exactly', () => {
  const n = 100_000;
  for (const byte of [0x81, 0xa1, 0xd8]) {
    const body = new Uint8Array(n * (byte === 0xa1 ? 2 : byte === 0xd8 ? 2 : 1) + 1);
    if (byte === 0x81) body.fill(0x81);
    else for (let i = 0; i < n; i++) { body[2 * i] = byte; body[2 * i + 1] = byte === 0xa1 ? 0x60 : 0x64; }
    const e = decodeError(body);
    assert.is(e.code, 'TOO_DEEP', `0x${byte.toString(16)}`);
  }
  const nested = (levels: number) => new Uint8Array([...new Array(levels).fill(0x81), 0x00]);
  assert.equal(decodeCbor(nested(3), 3), [[[0]]]);
  assert.is(decodeError(nested(4), 3).code, 'TOO_DEEP');
  assert.is(decodeError(hexBytes('9f 9f 9f 9f 00 ff ff ff ff'), 3).code, 'TOO_DEEP');
});

test('cbor body 100k deep is one TOO_DEEP rejection', () => {
  const out = run(envelope(new Uint8Array(100_000).fill(0x81), 'cbor'));
  assert.equal(codes(out), [['TOO_DEEP', undefined]]);
  const inValue = new Uint8Array([0xa1, 0x68, ...new TextEncoder().encode('anything'), ...new Array(100_000).fill(0x81), 0x00]);
  assert.equal(codes(run(envelope(inValue, 'cbor'))), [['TOO_DEEP', undefined]]);
});

test('decoder state is clean after an error', () => {
  decodeError(new Uint8Array(1000).fill(0x81));
  decodeError('a2 64646f6f72 f5 6b74656d70');
  assert.equal(decodeCbor(hexBytes('a1 64646f6f72 f5'), MAX_JSON_DEPTH), { door: true });
});

// ---- agreement with a general-purpose encoder ----

test('bodies written by cbor-x (as a third-party device library would) decode the same', () => {
  const encoder = new Encoder({ useRecords: false, tagUint8Array: false } as ConstructorParameters<typeof Encoder>[0]);
  const state = {
    temperature: 21.25,
    humidity: { value: 55, at: '2024-05-01T12:00:00Z' },
    door: true,
    location: { latitude: 51.05, longitude: 3.72 },
    label: 'Zürich 水 — a longer label to leave the short-string path behind',
    anything: { nested: [1, -2, 3.5, null, 'x', { deep: [4294967296, -4294967297] }] },
  };
  assert.equal(decodeCbor(encoder.encode(state), MAX_JSON_DEPTH), state);
  const out = run(envelope(encoder.encode(state), 'cbor'));
  assert.equal(out.rejections, []);
  assert.equal(out.rows.map((r) => r.asset), ['temperature', 'humidity', 'door', 'location', 'label', 'anything']);
  assert.equal(out.rows[1].ts, Date.UTC(2024, 4, 1, 12));
});

test.run();
