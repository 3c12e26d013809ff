import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { Encoder } from 'cbor-x';
import { decodeDeadLetter, decodeEnvelope, decodeEnvelopeGeneric, encodeDeadLetter, encodeEnvelope, encodeEnvelopeGeneric } from '../../../engine/uplink/envelope.ts';
import { readEnvelope } from '../../../engine/uplink/envelopeReader.ts';
import { writeEnvelope } from '../../../engine/uplink/envelopeWriter.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { CborMap, CborSimple, CborTag, decodeCbor } from '../../../engine/uplink/admission/decodeCbor.ts';
import type { DeadLetter, UplinkEnvelope } from '../../../schemas/messages.ts';
import { hexBytes } from '../../support/uplink.ts';

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

/** decodeEnvelope (direct reader first) gives exactly what the cbor-x path gives: value or error. */
function assertSameAsGeneric(bytes: Uint8Array): Outcome {
  const generic = outcome(decodeEnvelopeGeneric, bytes);
  const direct = readEnvelope(bytes);
  if ('error' in generic) assert.is(direct, undefined, `direct reader accepted what cbor-x refuses: ${generic.error}`);
  else if (direct !== undefined) {
    assert.equal(direct, generic.value);
    assert.equal(Object.keys(direct), Object.keys(generic.value));
    assert.is(direct.body.constructor, Uint8Array);
  }
  assert.equal(outcome(decodeEnvelope, bytes), generic);
  return generic;
}

test('property: the direct reader reads every written envelope as cbor-x does', () => {
  let direct = 0;
  fc.assert(fc.property(writtenEnvelope, (e) => {
    const bytes = writeEnvelope(e)!;
    assert.ok(bytes !== undefined);
    const generic = assertSameAsGeneric(bytes);
    // It declines only what cbor-x's decoders may read differently (a leading BOM), keys cbor-x
    // renames, and values the engine refuses (nested too deep): cbor-x decides those.
    const declinable = /"\uFEFF|"__proto__"/.test(JSON.stringify(e)) || 'error' in generic;
    const read = readEnvelope(bytes);
    if (read !== undefined) direct++;
    else assert.ok(declinable, `declined ${toHex(bytes).slice(0, 80)}`);
    // Inputs that are Buffers over a larger block, at an offset, read the same.
    const framed = Buffer.concat([Buffer.from([1, 2, 3]), bytes, Buffer.from([4])]).subarray(3, 3 + bytes.length);
    assert.equal(readEnvelope(framed), read);
  }), { numRuns: 500 });
  assert.ok(direct >= 450, `${direct} of 500 read directly`);
});

/** Recorded-style envelopes the hostile inputs below are derived from. */
function samples(): Uint8Array[] {
  const admittedFull: UplinkEnvelope = {
    ...full,
    admitted: { states: [['temperature', 1_714_564_800_000, 21.5], ['door', 5, { open: true, at: [1, -2, 'x', null] }]], dropped: [['humidity', 'PROFILE_VIOLATION', 'value: too high'], ['door', 'DUPLICATE_READING', 'item 300: …', 300]] },
  };
  return [full, minimal, admittedFull, { ...minimal, receivedAt: -(2 ** 40), asset: 'é' }].map((e) => writeEnvelope(e)!);
}

test('hostile envelopes: truncated, trailing bytes, mutated bytes, huge lengths → as cbor-x decides', () => {
  for (const bytes of samples()) {
    assert.ok(readEnvelope(bytes) !== undefined);
    for (let n = 0; n < bytes.length; n++) assert.ok('error' in assertSameAsGeneric(bytes.subarray(0, n)));
    for (const tail of [[0], [0xff], [0x60], [0xa0, 0x00]]) assert.ok('error' in assertSameAsGeneric(Uint8Array.of(...bytes, ...tail)));
    for (let i = 0; i < bytes.length; i++) {
      for (const b of [0x00, 0x17, 0x18, 0x1b, 0x3b, 0x5a, 0x5b, 0x7a, 0x7b, 0x9a, 0x9b, 0x9f, 0xba, 0xbf, 0xc6, 0xf7, 0xf9, 0xfa, 0xfb, 0xff, bytes[i] ^ 0x20, bytes[i] + 1]) {
        const mutated = Uint8Array.from(bytes);
        mutated[i] = b;
        assertSameAsGeneric(mutated);
      }
      // A length or count header that declares far more than is there.
      for (const huge of [[0xff, 0xff, 0xff, 0xff], [0x7f, 0xff, 0xff, 0xff]]) {
        const major = bytes[i] & 0xe0;
        if (major < 0x40 || major > 0xa0) continue;
        assertSameAsGeneric(Uint8Array.of(...bytes.subarray(0, i), major | 26, ...huge, ...bytes.subarray(i + 1)));
        assertSameAsGeneric(Uint8Array.of(...bytes.subarray(0, i), major | 27, 0, 0, 0, 1, ...huge, ...bytes.subarray(i + 1)));
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
  ]) assertSameAsGeneric(encoder.encode(v));
  assertSameAsGeneric(hexBytes('ff'));
  assertSameAsGeneric(new Uint8Array(100_000).fill(0xa1));
  assertSameAsGeneric(new Uint8Array(100_000).fill(0x81));
  // Nesting deeper than stored values may be, in the direct reader's reach: refused as before.
  let deep: unknown = 1;
  for (let i = 0; i < 40; i++) deep = [deep];
  const tooDeep = encodeEnvelope({ ...minimal, admitted: { states: [['a', 1, deep]], dropped: [] } });
  assert.match((assertSameAsGeneric(tooDeep) as { error: string }).error, /deeper/);
});

test('property: random edits of written envelopes decode as with cbor-x alone', () => {
  const edit = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }));
  fc.assert(fc.property(writtenEnvelope, fc.array(edit, { minLength: 1, maxLength: 4 }), fc.nat(), (e, edits, cut) => {
    const bytes = Uint8Array.from(writeEnvelope(e)!);
    for (const [at, b] of edits) bytes[at % bytes.length] = b;
    assertSameAsGeneric(bytes);
    assertSameAsGeneric(bytes.subarray(0, cut % (bytes.length + 1)));
  }), { numRuns: 400 });
});

test('property: the hand-written envelope bytes are exactly the cbor-x bytes, and decode back', () => {
  const arb = envelopeOf(70_000);
  fc.assert(fc.property(arb, (e) => {
    const envelope = e as UplinkEnvelope;
    const written = writeEnvelope(envelope);
    assert.ok(written !== undefined);
    assert.is(toHex(written), toHex(encodeEnvelopeGeneric(envelope)));
    const back = decodeEnvelope(written);
    assert.equal(back.body, e.body);
    assert.is(back.receivedAt, e.receivedAt);
    assert.equal(back.admitted?.states.map(([, t]) => t), e.admitted?.states.map(([, t]) => t));
  }), { numRuns: 400 });
});

test('the hand-written encoder leaves what is not plain JSON to cbor-x, which decides as before', () => {
  const admitted = (value: unknown) => ({ ...minimal, admitted: { states: [['a', 1, value]], dropped: [] } }) as unknown as UplinkEnvelope;
  for (const odd of [undefined, 10n, new Date(0), new Map([[1, 2]]), [undefined]]) {
    assert.is(writeEnvelope(admitted(odd)), undefined);
  }
  assert.is(writeEnvelope({ ...minimal, receivedAt: 1.5e20 }), undefined);
  assert.is(writeEnvelope({ ...minimal, receivedAt: 2 ** 32 + 0.5 }), undefined);
  // A non-integer time beyond 32 bits stays refused, as with cbor-x alone.
  assert.throws(() => encodeEnvelopeGeneric({ ...minimal, receivedAt: 2 ** 32 + 0.5 }));
  assert.throws(() => encodeEnvelope({ ...minimal, receivedAt: 2 ** 32 + 0.5 }));
  assert.is(toHex(encodeEnvelope(admitted(10n))), toHex(encodeEnvelopeGeneric(admitted(10n))));
  // Output is the caller's own: the next envelope does not overwrite it.
  const first = encodeEnvelope(full);
  const copy = toHex(first);
  encodeEnvelope(minimal);
  assert.is(toHex(first), copy);
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
