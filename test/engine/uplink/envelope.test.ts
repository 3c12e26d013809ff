import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { Encoder } from 'cbor-x';
import { decodeDeadLetter, decodeEnvelope, encodeDeadLetter, encodeEnvelope } from '../../../engine/uplink/envelope.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { MAX_JSON_DEPTH } from '../../../engine/kernel/checkJsonValue.ts';
import { CborMap, CborSimple, CborTag, decodeCbor } from '../../../engine/uplink/admission/decodeCbor.ts';
import type { DeadLetter, UplinkEnvelope } from '../../../schemas/messages.ts';
import { hexBytes } from '../../support/uplink.ts';
import { decodeEnvelopeCborX, decodeEnvelopeCborXJs, encodeEnvelopeCborX } from '../../support/reference/envelopeCborX.ts';
import { envelopeVariant, hasRepeatedKey, seeded } from '../../support/cborVariants.ts';

const golden = JSON.parse(readFileSync(new URL('../../fixtures/log-messages.json', import.meta.url), 'utf8'));
const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const goldenEnvelope: UplinkEnvelope = { ...golden.envelope.value, body: hexBytes(golden.envelope.value.body) };

const full: UplinkEnvelope = {
  id: 'up-42',
  channel: 'lpwan',
  contentType: 'binary',
  deviceId: 'dev-7',
  asset: 'temperature',
  network: { networkId: 'thethingsnetwork', devEui: '0004A30B001C0530', fPort: 10, receivedAt: 1_714_564_800_000, format: 'cayenne' },
  receivedAt: 1_714_564_800_123,
  body: Uint8Array.of(0, 1, 2, 254, 255),
};
const minimal: UplinkEnvelope = { id: 'u', channel: 'http', contentType: 'json', deviceId: 'd', receivedAt: 0, body: new Uint8Array(0) };

function malformed(bytes: Uint8Array, decode: (b: Uint8Array) => unknown = decodeEnvelope): FleetError {
  try {
    decode(bytes);
  } catch (error) {
    assert.instance(error, FleetError);
    assert.is((error as FleetError).code, 'MALFORMED_PAYLOAD');
    return error as FleetError;
  }
  assert.unreachable(`decoded ${toHex(bytes).slice(0, 60)}`);
  throw new Error('unreachable');
}

/** Walks a value from the independent decoder: no tags, simple values or non-text keys anywhere. */
function assertPlain(v: unknown, path = ''): void {
  assert.not.ok(v instanceof CborTag || v instanceof CborMap || v instanceof CborSimple, `extension at ${path}`);
  if (Array.isArray(v)) v.forEach((x, i) => assertPlain(x, `${path}/${i}`));
  else if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) for (const [k, x] of Object.entries(v)) assertPlain(x, `${path}/${k}`);
}

test('envelope round trip: all fields and minimal', () => {
  for (const e of [full, minimal]) {
    const back = decodeEnvelope(encodeEnvelope(e));
    assert.equal(back, e);
    assert.is(back.body.constructor, Uint8Array);
  }
});

test('golden envelope and dead letter bytes', () => {
  assert.is(toHex(encodeEnvelope(goldenEnvelope)), golden.envelope.hex);
  assert.equal(decodeEnvelope(hexBytes(golden.envelope.hex)), goldenEnvelope);
  const d: DeadLetter = { code: golden.deadLetter.code, reason: golden.deadLetter.reason, asset: golden.deadLetter.asset, rejectedAt: golden.deadLetter.rejectedAt, envelope: goldenEnvelope };
  assert.is(toHex(encodeDeadLetter(d)), golden.deadLetter.hex);
  assert.equal(decodeDeadLetter(hexBytes(golden.deadLetter.hex)), d);
});

test('the wire form is plain CBOR any reader handles: text keys, byte-string body, integer times', () => {
  const bytes = encodeEnvelope(full);
  assert.is(bytes.constructor, Uint8Array);
  const plain = decodeCbor(bytes, 8) as Record<string, unknown>;
  assertPlain(plain);
  assert.equal(Object.keys(plain), ['id', 'channel', 'contentType', 'deviceId', 'asset', 'network', 'receivedAt', 'body']);
  assert.equal(plain.body, full.body);
  assert.is(plain.receivedAt, full.receivedAt);
  assert.ok(toHex(bytes).includes(`1b${full.receivedAt.toString(16).padStart(16, '0')}`), 'receivedAt as uint64, not float64');
  assertPlain(decodeCbor(encodeDeadLetter({ code: 'X', reason: 'y', rejectedAt: 2 ** 40, envelope: full }), 8));
});

test('undefined optional fields and unknown fields are not carried', () => {
  const withUndefined = { ...minimal, asset: undefined, network: undefined } as UplinkEnvelope;
  const plain = decodeCbor(encodeEnvelope(withUndefined), 8) as Record<string, unknown>;
  assert.equal(Object.keys(plain), ['id', 'channel', 'contentType', 'deviceId', 'receivedAt', 'body']);
  const encoder = new Encoder({ useRecords: false, tagUint8Array: false } as ConstructorParameters<typeof Encoder>[0]);
  const extra = decodeEnvelope(encoder.encode({ ...minimal, future: 'field', network: { networkId: 'n', rssi: -80 } }));
  assert.equal(extra, { ...minimal, network: { networkId: 'n' } });
});

test('format version: absent or 1 is the format written, any other is refused, not misread', () => {
  assert.not.ok(Object.keys(decodeCbor(encodeEnvelope({ ...minimal, version: 1 }), 8) as object).includes('version'));
  const encoder = new Encoder({ useRecords: false, tagUint8Array: false } as ConstructorParameters<typeof Encoder>[0]);
  assert.equal(decodeEnvelope(encoder.encode({ ...minimal, version: 1 })), minimal);
  for (const version of [2, 0, '1', null]) assert.match(malformed(encoder.encode({ ...minimal, version })).message, /\/version/);
  assert.match(malformed(encoder.encode({ code: 'X', reason: 'y', rejectedAt: 1, envelope: { ...minimal, version: 2 } }), decodeDeadLetter).message, /\/version/);
});

test('decoded body is a copy: reusing the input buffer does not change it', () => {
  const bytes = encodeEnvelope(full);
  const copy = Uint8Array.from(bytes);
  const back = decodeEnvelope(copy);
  copy.fill(0);
  assert.equal(back.body, full.body);
});

test('garbage envelopes throw MALFORMED_PAYLOAD', () => {
  const encoder = new Encoder({ useRecords: false, tagUint8Array: false } as ConstructorParameters<typeof Encoder>[0]);
  const good = { ...minimal } as Record<string, unknown>;
  const variants: Array<Record<string, unknown>> = [
    { ...good, id: 5 },
    { ...good, channel: 'smoke-signal' },
    { ...good, contentType: 'xml' },
    { ...good, deviceId: null },
    { ...good, receivedAt: 1.5 },
    { ...good, receivedAt: '1000' },
    { ...good, receivedAt: 2 ** 60 },
    { ...good, body: 'abc' },
    { ...good, body: [1, 2, 3] },
    { ...good, asset: 7 },
    { ...good, network: 'ttn' },
    { ...good, network: { devEui: 'x' } },
    { ...good, network: { networkId: 'n', fPort: 1.5 } },
  ];
  for (const key of ['id', 'channel', 'contentType', 'deviceId', 'receivedAt', 'body']) {
    const v = { ...good };
    delete v[key];
    variants.push(v);
  }
  for (const v of variants) malformed(encoder.encode(v));
  for (const v of [null, 42, 'envelope', [minimal], new Uint8Array(3)]) malformed(encoder.encode(v));
  const bytes = encodeEnvelope(full);
  for (let n = 0; n < bytes.length; n++) malformed(bytes.subarray(0, n));
  malformed(Uint8Array.of(...bytes, 0));
  malformed(new Uint8Array(100_000).fill(0x81));
  malformed(hexBytes('ff'));
  assert.match(malformed('not bytes' as unknown as Uint8Array).message, /must be bytes/);
  assert.match(malformed(encoder.encode({ ...good, channel: 'x' })).message, /channel/);
});

test('random bytes never escape as anything but MALFORMED_PAYLOAD or a valid envelope', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
    try {
      const e = decodeEnvelope(bytes);
      assert.type(e.id, 'string');
    } catch (error) {
      assert.instance(error, FleetError);
      assert.is((error as FleetError).code, 'MALFORMED_PAYLOAD');
    }
  }), { numRuns: 2000 });
});

test('property: any valid envelope round trips', () => {
  const arb = fc.record({
    id: fc.string(),
    channel: fc.constantFrom('http', 'mqtt', 'lpwan'),
    contentType: fc.constantFrom('json', 'cbor', 'binary'),
    deviceId: fc.string(),
    asset: fc.option(fc.string(), { nil: undefined }),
    network: fc.option(fc.record({
      networkId: fc.string(),
      devEui: fc.option(fc.string({ minLength: 16, maxLength: 16 }), { nil: undefined }),
      fPort: fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
      receivedAt: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), { nil: undefined }),
      format: fc.option(fc.constantFrom('json', 'cbor', 'binary', 'cayenne'), { nil: undefined }),
    }, { requiredKeys: ['networkId'] }), { nil: undefined }),
    receivedAt: fc.integer({ min: -(2 ** 53) + 1, max: Number.MAX_SAFE_INTEGER }),
    body: fc.uint8Array({ maxLength: 300 }),
  }, { requiredKeys: ['id', 'channel', 'contentType', 'deviceId', 'receivedAt', 'body'] });
  fc.assert(fc.property(arb, (e) => {
    const clean = JSON.parse(JSON.stringify({ ...e, body: undefined }));
    assert.equal(decodeEnvelope(encodeEnvelope(e as UplinkEnvelope)), { ...clean, body: e.body });
  }), { numRuns: 500 });
});

/** JSON values as admission carries them: every number kind, unicode text, nesting. */
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.oneof(fc.integer(), fc.integer({ min: -(2 ** 33), max: 2 ** 33 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -0, 23, 24, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, -(2 ** 32), -(2 ** 32) - 1, 2 ** 31, -(2 ** 31) - 1, 0.5)),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.string({ minLength: 20, maxLength: 300 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.string({ unit: 'binary', maxLength: 30 }), tie('value'), { maxKeys: 5 }),
  ),
})).value;

const ts = fc.oneof(fc.integer({ min: 0, max: 2 ** 32 }), fc.integer({ min: -(2 ** 53) + 1, max: Number.MAX_SAFE_INTEGER }), fc.constantFrom(0xffffffff, 2 ** 32, -0xffffffff, -(2 ** 32), 1_714_564_800_123));
/** Envelopes of every shape the hand-written encoder writes, bodies up to `maxBody` bytes. */
const envelopeOf = (maxBody: number) => fc.record({
  id: fc.string({ unit: 'grapheme', maxLength: 30 }),
  channel: fc.constantFrom('http', 'mqtt', 'lpwan'),
  contentType: fc.constantFrom('json', 'cbor', 'binary'),
  deviceId: fc.string({ maxLength: 300 }),
  asset: fc.option(fc.string({ unit: 'grapheme' }), { nil: undefined }),
  network: fc.option(fc.record({
    networkId: fc.string(),
    devEui: fc.option(fc.string({ minLength: 16, maxLength: 16 }), { nil: undefined }),
    fPort: fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
    receivedAt: fc.option(ts, { nil: undefined }),
    format: fc.option(fc.constantFrom('json', 'cbor', 'binary', 'cayenne'), { nil: undefined }),
  }, { requiredKeys: ['networkId'] }), { nil: undefined }),
  receivedAt: ts,
  body: fc.uint8Array({ maxLength: maxBody }),
  admitted: fc.option(fc.record({
    states: fc.array(fc.tuple(fc.string({ unit: 'grapheme', maxLength: 30 }), ts, jsonValue), { maxLength: 30 }),
    dropped: fc.array(fc.oneof(
      fc.tuple(fc.string(), fc.constantFrom('UNKNOWN_ASSET', 'PROFILE_VIOLATION'), fc.string({ unit: 'grapheme', maxLength: 300 })),
      fc.tuple(fc.string(), fc.constantFrom('DUPLICATE_READING', 'INVALID_STATE'), fc.string({ unit: 'grapheme', maxLength: 300 }), fc.nat({ max: 70_000 })),
    ), { maxLength: 3 }),
  }), { nil: undefined }),
}, { requiredKeys: ['id', 'channel', 'contentType', 'deviceId', 'receivedAt', 'body'] }) as fc.Arbitrary<UplinkEnvelope>;
const writtenEnvelope = envelopeOf(2_000);

type Outcome = { value: UplinkEnvelope } | { error: string };

function outcome(decode: (b: Uint8Array) => UplinkEnvelope, bytes: Uint8Array): Outcome {
  try {
    return { value: decode(bytes) };
  } catch (error) {
    assert.instance(error, FleetError, `${toHex(bytes).slice(0, 60)}: ${(error as Error).message}`);
    assert.is((error as FleetError).code, 'MALFORMED_PAYLOAD');
    return { error: (error as FleetError).message };
  }
}

/**
 * What the reader refuses on purpose although cbor-x and the schema read it (engine/uplink/cborCursor.ts):
 * tags other than 55799 and 64 on bytes (cbor-x's own extensions), nesting deeper than the one
 * limit in values the schema never looks at, 0xf8 simple values below 32 (not well-formed), and a
 * map naming a key twice (hasRepeatedKey: the reason may then be a value a later key replaces).
 */
const REFUSED_ON_PURPOSE = /tag \d+ is not read|nesting deeper than \d+ levels|names .+ twice|simple value 0xf8/;

/**
 * The reader gives what the cbor-x path (test/support/reference/envelopeCborX.ts) gives: the same
 * envelope for every input the reference reads (but what REFUSED_ON_PURPOSE names), and a refusal
 * of every input the reference refuses.
 */
function assertSameAsReference(bytes: Uint8Array): Outcome {
  let reference = outcome(decodeEnvelopeCborX, bytes);
  // cbor-x's native string extractor refuses a text string with an 8-byte head after others; its
  // JavaScript reader does not, nor does the reader (RFC 8949 allows any head).
  if ('error' in reference && /Unexpected end of buffer reading string/.test(reference.error)) reference = outcome(decodeEnvelopeCborXJs, bytes);
  const read = outcome(decodeEnvelope, bytes);
  if ('error' in reference) assert.ok('error' in read, `read what the reference refuses (${reference.error}): ${toHex(bytes).slice(0, 120)}`);
  else if ('error' in read) {
    assert.ok(REFUSED_ON_PURPOSE.test(read.error) || hasRepeatedKey(bytes), `refused what the reference reads (${read.error}): ${toHex(bytes).slice(0, 120)}`);
  }
  else {
    assert.equal(read.value, reference.value);
    // Same key order everywhere (states' values included), and a plain Uint8Array body.
    assert.is(JSON.stringify(read.value), JSON.stringify(reference.value));
    assert.equal(Object.keys(read.value), Object.keys(reference.value));
    assert.is(read.value.body.constructor, Uint8Array);
  }
  return read;
}

test('property: the reader reads every written envelope as the cbor-x path does', () => {
  fc.assert(fc.property(writtenEnvelope, (e) => {
    const bytes = encodeEnvelope(e);
    const read = assertSameAsReference(bytes);
    // Refused only what admission never carries (nested too deep).
    if ('error' in read) assert.match(read.error, /deeper/);
    // Inputs that are Buffers over a larger block, at an offset, read the same.
    const framed = Buffer.concat([Buffer.from([1, 2, 3]), bytes, Buffer.from([4])]).subarray(3, 3 + bytes.length);
    assert.equal(outcome(decodeEnvelope, framed), read);
  }), { numRuns: 500 });
});

/** Recorded-style envelopes the hostile inputs below are derived from. */
function samples(): Uint8Array[] {
  const admittedFull: UplinkEnvelope = {
    ...full,
    admitted: { states: [['temperature', 1_714_564_800_000, 21.5], ['door', 5, { open: true, at: [1, -2, 'x', null] }]], dropped: [['humidity', 'PROFILE_VIOLATION', 'value: too high'], ['door', 'DUPLICATE_READING', 'item 300: …', 300]] },
  };
  return [full, minimal, admittedFull, { ...minimal, receivedAt: -(2 ** 40), asset: 'é' }].map((e) => encodeEnvelope(e));
}

test('hostile envelopes: truncated, trailing bytes, mutated bytes, huge lengths → as the cbor-x path decides', () => {
  for (const bytes of samples()) {
    assert.ok('value' in assertSameAsReference(bytes));
    for (let n = 0; n < bytes.length; n++) assert.ok('error' in assertSameAsReference(bytes.subarray(0, n)));
    for (const tail of [[0], [0xff], [0x60], [0xa0, 0x00]]) assert.ok('error' in assertSameAsReference(Uint8Array.of(...bytes, ...tail)));
    for (let i = 0; i < bytes.length; i++) {
      for (const b of [0x00, 0x17, 0x18, 0x1b, 0x3b, 0x5a, 0x5b, 0x7a, 0x7b, 0x9a, 0x9b, 0x9f, 0xba, 0xbf, 0xc6, 0xf7, 0xf9, 0xfa, 0xfb, 0xff, bytes[i] ^ 0x20, bytes[i] + 1]) {
        const mutated = Uint8Array.from(bytes);
        mutated[i] = b;
        assertSameAsReference(mutated);
      }
      // A length or count header that declares far more than is there.
      for (const huge of [[0xff, 0xff, 0xff, 0xff], [0x7f, 0xff, 0xff, 0xff]]) {
        const major = bytes[i] & 0xe0;
        if (major < 0x40 || major > 0xa0) continue;
        assertSameAsReference(Uint8Array.of(...bytes.subarray(0, i), major | 26, ...huge, ...bytes.subarray(i + 1)));
        assertSameAsReference(Uint8Array.of(...bytes.subarray(0, i), major | 27, 0, 0, 0, 1, ...huge, ...bytes.subarray(i + 1)));
      }
    }
  }
  // Wrong types, unknown or reordered keys, duplicates: valid CBOR of another shape.
  const encoder = new Encoder({ useRecords: false, tagUint8Array: false, variableMapSize: true } as ConstructorParameters<typeof Encoder>[0]);
  const good = { ...minimal } as Record<string, unknown>;
  const { id, ...noId } = good;
  for (const v of [
    { ...good, id: 5 }, { ...good, channel: 'smoke' }, { ...good, contentType: 'xml' }, { ...good, receivedAt: 1.5 },
    { ...good, receivedAt: 2 ** 60 }, { ...good, body: 'abc' }, { ...good, network: { networkId: 'n', fPort: 1.5 } },
    { ...good, admitted: { states: [['a', 1.5, 1]], dropped: [] } }, { ...good, admitted: { states: [['a', 1, 1, 1]], dropped: [] } },
    { ...good, admitted: { states: [['a', 1, Number.NaN]], dropped: [] } }, { ...good, admitted: { states: [], dropped: [['a', 'b']] } },
    ...[-1, 1.5, '1', 2 ** 60, null].map((item) => ({ ...good, admitted: { states: [], dropped: [['a', 'b', 'c', item]] } })),
    { ...good, admitted: { states: [], dropped: [['a', 'b', 'c', 1, 2]] } },
    { ...noId, id }, { ...good, extra: 1 }, { ...good, asset: 'a', network: { networkId: 'n', format: 'json', devEui: 'e' } },
  ]) assertSameAsReference(encoder.encode(v));
  assertSameAsReference(hexBytes('ff'));
  assertSameAsReference(new Uint8Array(100_000).fill(0xa1));
  assertSameAsReference(new Uint8Array(100_000).fill(0x81));
  // Nesting deeper than stored values may be, in the direct reader's reach: refused as before.
  let deep: unknown = 1;
  for (let i = 0; i < 40; i++) deep = [deep];
  const tooDeep = encodeEnvelopeCborX({ ...minimal, admitted: { states: [['a', 1, deep]], dropped: [] } });
  assert.match((assertSameAsReference(tooDeep) as { error: string }).error, /deeper/);
});

test('property: random edits of written envelopes decode as with the cbor-x path', () => {
  const edit = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }));
  fc.assert(fc.property(writtenEnvelope, fc.array(edit, { minLength: 1, maxLength: 4 }), fc.nat(), (e, edits, cut) => {
    const bytes = Uint8Array.from(encodeEnvelope(e));
    for (const [at, b] of edits) bytes[at % bytes.length] = b;
    assertSameAsReference(bytes);
    assertSameAsReference(bytes.subarray(0, cut % (bytes.length + 1)));
  }), { numRuns: 400 });
});

test('property: the hand-written envelope bytes are exactly the cbor-x bytes, and decode back', () => {
  const arb = envelopeOf(70_000);
  fc.assert(fc.property(arb, (e) => {
    const envelope = e as UplinkEnvelope;
    let written: Uint8Array;
    try {
      written = encodeEnvelope(envelope);
    } catch (error) {
      // Only a state nested deeper than any stored value may be refused (the reader refuses it too).
      assert.match((error as FleetError).message, /deeper/);
      assert.is((error as FleetError).code, 'INTERNAL');
      return;
    }
    assert.is(toHex(written), toHex(encodeEnvelopeCborX(envelope)));
    const back = decodeEnvelope(written);
    assert.equal(back.body, e.body);
    assert.is(back.receivedAt, e.receivedAt);
    assert.equal(back.admitted?.states.map(([, t]) => t), e.admitted?.states.map(([, t]) => t));
  }), { numRuns: 400 });
});

test('the writer refuses what no reader would read back (FleetError INTERNAL), and what it writes is its own', () => {
  const admitted = (value: unknown) => ({ ...minimal, admitted: { states: [['a', 1, value]], dropped: [] } }) as unknown as UplinkEnvelope;
  let deep: unknown = 1;
  for (let i = 0; i <= MAX_JSON_DEPTH; i++) deep = [deep];
  const unwritable: Array<[UplinkEnvelope, RegExp]> = [
    ...[undefined, 10n, new Date(0), new Map([[1, 2]]), [undefined], Number.NaN, Infinity, () => 1, Symbol('s'), deep].map((odd) => [admitted(odd), /state|deeper/] as [UplinkEnvelope, RegExp]),
    [{ ...minimal, receivedAt: 1.5e20 }, /receivedAt/],
    [{ ...minimal, receivedAt: 2 ** 32 + 0.5 }, /receivedAt/],
    [{ ...minimal, receivedAt: 1.5 }, /receivedAt/],
    [{ ...minimal, receivedAt: Number.NaN }, /receivedAt/],
    [{ ...minimal, admitted: { states: [['a', 0.5, 1]], dropped: [] } }, /ts/],
    [{ ...minimal, network: { networkId: 'n', fPort: 1.5 } }, /fPort/],
    [{ ...minimal, admitted: { states: [], dropped: [['a', 'b', 'c', -1]] } }, /item/],
    [{ ...minimal, admitted: { states: [], dropped: [['a', 'b', 'c', 1.5]] } }, /item/],
    [{ ...minimal, admitted: { states: [], dropped: [['a', 'b'] as unknown as [string, string, string]] } }, /dropped/],
    [{ ...minimal, id: 5 as unknown as string }, /text/],
    [{ ...minimal, body: 'abc' as unknown as Uint8Array }, /body/],
  ];
  for (const [e, why] of unwritable) {
    try {
      encodeEnvelope(e);
      assert.unreachable(`wrote ${String(e.receivedAt)} ${String(e.admitted?.states[0]?.[2])}`);
    } catch (error) {
      assert.instance(error, FleetError);
      assert.is((error as FleetError).code, 'INTERNAL');
      assert.match((error as Error).message, why);
    }
  }
  // The network's own time may be any integer (the schema's Integer): beyond 2^53 it reads back as written.
  for (const receivedAt of [2 ** 60, -(2 ** 60), 1e300]) {
    const e = { ...minimal, network: { networkId: 'n', receivedAt } };
    assert.equal(decodeEnvelope(encodeEnvelope(e)), e);
    assert.equal(decodeEnvelopeCborX(encodeEnvelope(e)), e);
  }
  // Output is the caller's own: the next envelope does not overwrite it.
  const first = encodeEnvelope(full);
  const copy = toHex(first);
  encodeEnvelope(minimal);
  assert.is(toHex(first), copy);
});

const cborx = new Encoder({ useRecords: false, tagUint8Array: false, variableMapSize: true } as ConstructorParameters<typeof Encoder>[0]);
const hex = (...parts: Array<string | Uint8Array>) => hexBytes(parts.map((p) => (typeof p === 'string' ? p : toHex(p))).join(''));
/** The minimal envelope's map with `n` more entries (their keys and values, in hex parts). */
const minimalWithEntries = (n: number, ...parts: string[]) => hex((0xa6 + n).toString(16), toHex(encodeEnvelope(minimal)).slice(2), ...parts);
/** The minimal envelope's map with one more entry. */
const minimalWith = (...entry: string[]) => minimalWithEntries(1, ...entry);
const key = (name: string) => toHex(Uint8Array.of(0x60 | name.length, ...Buffer.from(name)));
const stateWith = (value: string) => minimalWith(key('admitted'), 'a2', key('states'), '81', '83', key('a'), '01', value, key('dropped'), '80');

test('property: any RFC 8949 encoding of an envelope reads as written (reordered and unknown keys, wide heads, indefinite lengths, float16/32, tags 55799 and 64)', () => {
  let variants = 0;
  fc.assert(fc.property(writtenEnvelope, fc.integer(), (e, seed) => {
    let expected: UplinkEnvelope;
    try {
      expected = decodeEnvelope(encodeEnvelope(e));
    } catch {
      return; // nested too deep to be written
    }
    const bytes = envelopeVariant(e, seeded(seed));
    const read = assertSameAsReference(bytes);
    if ('error' in read) return void assert.match(read.error, /deeper/); // a junk value nested too deep
    variants++;
    assert.equal(read.value, expected);
    assert.is(JSON.stringify(read.value), JSON.stringify(expected));
    // Every variant truncated anywhere is refused by both.
    assert.ok('error' in assertSameAsReference(bytes.subarray(0, (seed >>> 0) % bytes.length)));
  }), { numRuns: 1000 });
  assert.ok(variants > 900, `${variants} variants read`);
});

test('property: random edits of envelope variants decode as with the cbor-x path', () => {
  const edit = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }));
  fc.assert(fc.property(envelopeOf(60), fc.integer(), fc.array(edit, { minLength: 1, maxLength: 3 }), (e, seed, edits) => {
    const bytes = envelopeVariant(e, seeded(seed));
    for (const [at, b] of edits) bytes[at % bytes.length] = b;
    assertSameAsReference(bytes);
  }), { numRuns: 1500 });
});

test('every truncation of every variant of the samples is refused by both', () => {
  for (const bytes of samples()) {
    const e = decodeEnvelope(bytes);
    for (let seed = 0; seed < 20; seed++) {
      const variant = envelopeVariant(e, seeded(seed));
      assert.ok('value' in assertSameAsReference(variant));
      for (let n = 0; n < variant.length; n++) assert.ok('error' in assertSameAsReference(variant.subarray(0, n)));
    }
  }
});

test('numbers: float16/32/64 and integers with heads of any width read as the cbor-x path reads them', () => {
  // receivedAt 5 as 0x05, 0x1805, 0x190005, 0x1a00000005, 0x1b0000000000000005, float16/32/64 5.0.
  for (const five of ['05', '1805', '190005', '1a00000005', '1b0000000000000005', 'f94500', 'fa40a00000', 'fb4014000000000000']) {
    const bytes = hex('a6', key('id'), '6175', key('channel'), '6468747470', key('contentType'), '646a736f6e', key('deviceId'), '6164', key('receivedAt'), five, key('body'), '40');
    assert.is(decodeEnvelope(bytes).receivedAt, 5);
    assertSameAsReference(bytes);
  }
  // Values of states: every float16 class (subnormal, normal, ±0, ±Infinity, NaN), float32, wide negative heads.
  for (const value of ['f90001', 'f93c00', 'f98000', 'f97bff', 'f97c00', 'f9fc00', 'f97e00', 'fa3fc00000', 'fa7f800000', 'fb7ff8000000000000', '3b001fffffffffffff', '3bffffffffffffffff', '1bffffffffffffffff', '3a7fffffff', '39ffff', '38ff', 'f8f4', 'f814']) {
    assertSameAsReference(stateWith(value));
  }
  assert.equal(decodeEnvelope(stateWith('f90001')).admitted!.states[0][2], 2 ** -24);
  assert.equal(decodeEnvelope(stateWith('fa3fc00000')).admitted!.states[0][2], 1.5);
  assert.equal(decodeEnvelope(stateWith('3bffffffffffffffff')).admitted!.states[0][2], -(2 ** 64));
  assert.ok(Object.is(decodeEnvelope(stateWith('f98000')).admitted!.states[0][2], -0));
  for (const nonFinite of ['f97c00', 'f97e00', 'fa7f800000']) assert.match(malformed(stateWith(nonFinite)).message, /not finite/);
  // A state timestamp or a time beyond 2^53, or not an integer, is no epoch ms.
  for (const ts of ['1b0020000000000000', 'f93e00', 'fb3ff8000000000000']) assert.match(malformed(minimalWith(key('admitted'), 'a2', key('states'), '81', '83', key('a'), ts, '01', key('dropped'), '80')).message, /epoch ms/);
  // Reserved additional information (28-30) and break codes where an item belongs.
  for (const odd of ['1c', '3d', '5e', '7f', 'ff', 'fc', 'e0', 'f3', 'f820']) assertSameAsReference(stateWith(odd));
});

test('keys: `__proto__` pollutes nothing and reads as the cbor-x path renames it; other key types as cbor-x names them', () => {
  // Under the envelope, the network and admitted: a key the envelope does not have, skipped.
  for (const bytes of [minimalWith(key('__proto__'), 'a1', key('polluted'), 'f5'), minimalWith(key('network'), 'a2', key('networkId'), '616e', key('__proto__'), 'a1', key('polluted'), 'f5')]) {
    const read = assertSameAsReference(bytes) as { value: UplinkEnvelope };
    assert.is(Object.getPrototypeOf(read.value), Object.prototype);
    assert.is((read.value as unknown as Record<string, unknown>).polluted, undefined);
  }
  // In a state's value: kept under `__proto_`, as cbor-x keeps it, as an own property.
  const state = decodeEnvelope(stateWith(`a2${key('__proto__')}a1${key('polluted')}f5${key('x')}01`)).admitted!.states[0][2] as Record<string, unknown>;
  assert.equal(Object.keys(state), ['__proto_', 'x']);
  assert.is(Object.getPrototypeOf(state), Object.prototype);
  assert.equal(state.__proto_, { polluted: true });
  assert.is(({} as Record<string, unknown>).polluted, undefined);
  assertSameAsReference(stateWith(`a1${key('__proto__')}01`));
  // `__proto_` and `__proto__` are one key to cbor-x: named twice, refused.
  assert.match(malformed(stateWith(`a2${key('__proto_')}01${key('__proto__')}02`)).message, /twice/);
  assertSameAsReference(stateWith(`a2${key('__proto_')}01${key('__proto__')}02`));
  // Keys of numbers, true, false, null, undefined name properties as cbor-x names them; bytes, arrays, maps do not.
  for (const k of ['05', '20', '1b0000000100000000', 'f93e00', 'fb7ff8000000000000', 'f4', 'f5', 'f6', 'f7', 'd9d9f76161', 'd9d9f7f7', '4161', '80', 'a0', 'c16161', 'f814']) {
    assertSameAsReference(stateWith(`a1${k}01`));
    assertSameAsReference(minimalWith(k, '01'));
  }
  assert.equal(decodeEnvelope(stateWith('a305f5f4f5f7f6')).admitted!.states[0][2], { 5: true, false: true, undefined: null });
});

test('duplicate keys are refused where cbor-x would keep the last (readers of the log must not disagree)', () => {
  for (const bytes of [
    minimalWith(key('id'), '6176'),
    minimalWithEntries(2, key('asset'), '6161', key('asset'), '6162'),
    minimalWith(key('network'), 'a2', key('networkId'), '616e', key('networkId'), '616d'),
    stateWith(`a2${key('a')}01${key('a')}02`),
  ]) {
    assert.match(malformed(bytes).message, /twice/);
    assertSameAsReference(bytes);
  }
  // A key the envelope does not have may repeat: it is skipped either way.
  assert.equal(decodeEnvelope(minimalWithEntries(2, key('x'), '01', key('x'), '02')), minimal);
});

test('optional keys given undefined read as absent, as with cbor-x and the schema; required ones are refused', () => {
  for (const name of ['asset', 'network', 'admitted', 'version']) assert.equal(decodeEnvelope(minimalWith(key(name), 'f7')), minimal);
  assert.equal(decodeEnvelope(minimalWith(key('network'), 'a2', key('networkId'), '616e', key('fPort'), 'f7')), { ...minimal, network: { networkId: 'n' } });
  // A tagged undefined is no undefined to cbor-x but a Tag object: refused.
  assertSameAsReference(minimalWith(key('asset'), 'd9d9f7f7'));
  malformed(minimalWith(key('asset'), 'd9d9f7f7'));
  // The two-byte undefined (0xf8 0x17) is not well-formed.
  assertSameAsReference(minimalWith(key('asset'), 'f817'));
  for (const name of ['id', 'channel', 'contentType', 'deviceId', 'receivedAt', 'body']) {
    const bytes = toHex(encodeEnvelope(minimal)).replace(key(name) + toHex(cborx.encode((minimal as Record<string, unknown>)[name]).subarray(0)), key(name) + 'f7');
    assert.ok(bytes.includes(`${key(name)}f7`), name);
    assert.ok('error' in assertSameAsReference(hexBytes(bytes)));
  }
});

test('text: invalid UTF-8 becomes U+FFFD and a leading BOM stays, as the cbor-x path reads it, at every length', () => {
  const odd = ['efbbbf', 'c3a9', 'eda080', 'f09f9880', '80', 'c0', 'e080', 'f490', 'ff', 'e282', 'f09f98', '41'];
  const rnd = seeded(7);
  for (let i = 0; i < 2000; i++) {
    let s = '';
    const n = Math.floor(rnd() * 50);
    for (let j = 0; j < n; j++) s += odd[Math.floor(rnd() * odd.length)];
    const text = Buffer.from(s, 'hex');
    const item = toHex(Uint8Array.of(...(text.length < 24 ? [0x60 | text.length] : text.length < 256 ? [0x78, text.length] : [0x79, text.length >> 8, text.length & 255]), ...text));
    assertSameAsReference(stateWith(item));
    assertSameAsReference(minimalWith(key('asset'), item));
    assertSameAsReference(stateWith(`a1${item}01`));
  }
  // Indefinite-length text and bytes: refused by both.
  for (const item of ['7f6161ff', '5f4101ff']) assertSameAsReference(minimalWith(key('asset'), item));
  assertSameAsReference(minimalWith(key('x'), '7f6161ff'));
});

test('skipped values: nesting is bounded, lengths are checked before anything is allocated, tags are refused', () => {
  const nested = (depth: number, open: string, close = '') => hex(open.repeat(depth), '01', close.repeat(depth));
  for (const [open, close] of [['81', ''], ['9f', 'ff'], ['a16161', ''], ['bf6161', 'ff']]) {
    const ok = minimalWith(key('x'), toHex(nested(MAX_JSON_DEPTH, open, close)));
    assert.equal(decodeEnvelope(ok), minimal);
    const deep = minimalWith(key('x'), toHex(nested(MAX_JSON_DEPTH + 1, open, close)));
    assert.match(malformed(deep).message, /deeper/);
    assertSameAsReference(deep);
    // Far deeper than any stack: refused without recursion.
    assert.match(malformed(minimalWith(key('x'), toHex(nested(200_000, open, close)))).message, /deeper|ends/);
  }
  // A run of tags is nesting too (cbor-x reads each a call deeper).
  assert.equal(decodeEnvelope(hex('d9d9f7'.repeat(MAX_JSON_DEPTH), encodeEnvelope(minimal))), minimal);
  assert.match(malformed(hex('d9d9f7'.repeat(100_000), encodeEnvelope(minimal))).message, /deeper/);
  // Counts and lengths beyond the input, in every width, in skipped values and in read ones.
  for (const head of ['9a7fffffff', '9b7fffffffffffffff', 'ba7fffffff', 'bb0000000100000000', '5a7fffffff', '7b00000000ffffffff', '5bffffffffffffffff']) {
    for (const bytes of [minimalWith(key('x'), head), stateWith(head), minimalWith(key('admitted'), 'a2', key('states'), head), minimalWith(key('network'), head)]) {
      assert.ok('error' in assertSameAsReference(bytes));
    }
  }
  // Tags: 55799 and 64 on bytes are read through; cbor-x's extensions are not.
  assert.equal(decodeEnvelope(minimalWith(key('x'), 'd8404101')), minimal);
  assert.equal(decodeEnvelope(minimalWith(key('x'), 'd9d9f7f7')), minimal);
  for (const tagged of ['c074323032342d30312d30315430303a30303a30305a', 'c11a65920080', 'c249010000000000000000', 'c48221196ab3', 'd81c81d81d00', 'd9010281', 'd9010380', 'd84061', 'd8406161', 'd8338401808080', 'd9dfff8301', 'da53687264a0']) {
    assertSameAsReference(minimalWith(key('x'), tagged));
    assertSameAsReference(stateWith(tagged));
    assertSameAsReference(minimalWith(key('asset'), tagged));
  }
  // The body as cbor-x's default encoder writes a Uint8Array (tag 64), read as the bytes.
  const tagged = cborx.encode({ ...minimal, body: Uint8Array.of(1, 2, 3) });
  const withTag = new Encoder({ useRecords: false, variableMapSize: true } as ConstructorParameters<typeof Encoder>[0]).encode({ ...minimal, body: Uint8Array.of(1, 2, 3) });
  assert.ok(toHex(withTag).includes('d84043010203'));
  assert.equal(decodeEnvelope(withTag), decodeEnvelope(tagged));
  assertSameAsReference(withTag);
  // Tag 64 on anything but bytes: cbor-x makes an empty Uint8Array of it; refused.
  const onText = hexBytes(toHex(encodeEnvelope(minimal)).replace(`${key('body')}40`, `${key('body')}d8406161`));
  assert.ok('value' in outcome(decodeEnvelopeCborX, onText));
  assert.match(malformed(onText).message, /tag 64 is not read/);
  assertSameAsReference(onText);
});

test('dead letter round trip, with and without asset and item; garbage throws', () => {
  const withAsset: DeadLetter = { code: 'PROFILE_VIOLATION', reason: 'value: must be number', asset: 'temperature', rejectedAt: 1_714_564_800_999, envelope: full };
  const without: DeadLetter = { code: 'MALFORMED_JSON', reason: 'body is not valid JSON', rejectedAt: 5, envelope: minimal };
  const ofItem: DeadLetter = { code: 'DUPLICATE_READING', reason: 'item 2: …', asset: 'temperature', item: 2, rejectedAt: 7, envelope: minimal };
  const ofItem0: DeadLetter = { code: 'INVALID_STATE', reason: 'item 0: …', item: 0, rejectedAt: 7, envelope: minimal };
  for (const d of [withAsset, without, ofItem, ofItem0]) assert.equal(decodeDeadLetter(encodeDeadLetter(d)), d);
  assert.not.ok('item' in decodeDeadLetter(encodeDeadLetter(without)), 'a dead letter of no item decodes without one');
  const encoder = new Encoder({ useRecords: false, tagUint8Array: false } as ConstructorParameters<typeof Encoder>[0]);
  malformed(encoder.encode({ code: 'X', reason: 'y', rejectedAt: 1 }), decodeDeadLetter);
  malformed(encoder.encode({ code: 'X', reason: 'y', rejectedAt: 1.5, envelope: minimal }), decodeDeadLetter);
  malformed(encoder.encode({ code: 1, reason: 'y', rejectedAt: 1, envelope: minimal }), decodeDeadLetter);
  malformed(encoder.encode({ code: 'X', reason: 'y', rejectedAt: 1, envelope: { ...minimal, body: 'x' } }), decodeDeadLetter);
  for (const item of [-1, 1.5, '1']) malformed(encoder.encode({ code: 'X', reason: 'y', item, rejectedAt: 1, envelope: minimal }), decodeDeadLetter);
  malformed(encodeEnvelope(full), decodeDeadLetter);
  malformed(hexBytes('a1'), decodeDeadLetter);
});

test.run();
