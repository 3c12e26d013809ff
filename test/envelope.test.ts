import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { Encoder } from 'cbor-x';
import { decodeDeadLetter, decodeEnvelope, encodeDeadLetter, encodeEnvelope, encodeEnvelopeGeneric } from '../engine/uplink/envelope.ts';
import { writeEnvelope } from '../engine/uplink/envelopeWriter.ts';
import { FleetError } from '../engine/kernel/errors.ts';
import { CborMap, CborSimple, CborTag, decodeCbor } from '../engine/uplink/admission/decodeCbor.ts';
import type { DeadLetter, UplinkEnvelope } from '../schemas/messages.ts';
import { hexBytes } from './support/uplink.ts';

const golden = JSON.parse(readFileSync(new URL('./fixtures/log-messages.json', import.meta.url), 'utf8'));
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

test('property: the hand-written envelope bytes are exactly the cbor-x bytes, and decode back', () => {
  const ts = fc.oneof(fc.integer({ min: 0, max: 2 ** 32 }), fc.integer({ min: -(2 ** 53) + 1, max: Number.MAX_SAFE_INTEGER }), fc.constantFrom(0xffffffff, 2 ** 32, -0xffffffff, -(2 ** 32), 1_714_564_800_123));
  const arb = fc.record({
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
    body: fc.uint8Array({ maxLength: 70_000 }),
    admitted: fc.option(fc.record({
      states: fc.array(fc.tuple(fc.string({ unit: 'grapheme', maxLength: 30 }), ts, jsonValue), { maxLength: 30 }),
      dropped: fc.array(fc.tuple(fc.string(), fc.constantFrom('UNKNOWN_ASSET', 'PROFILE_VIOLATION'), fc.string({ unit: 'grapheme', maxLength: 300 })), { maxLength: 3 }),
    }), { nil: undefined }),
  }, { requiredKeys: ['id', 'channel', 'contentType', 'deviceId', 'receivedAt', 'body'] });
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

test('dead letter round trip, with and without asset; garbage throws', () => {
  const withAsset: DeadLetter = { code: 'PROFILE_VIOLATION', reason: 'value: must be number', asset: 'temperature', rejectedAt: 1_714_564_800_999, envelope: full };
  const without: DeadLetter = { code: 'MALFORMED_JSON', reason: 'body is not valid JSON', rejectedAt: 5, envelope: minimal };
  for (const d of [withAsset, without]) assert.equal(decodeDeadLetter(encodeDeadLetter(d)), d);
  const encoder = new Encoder({ useRecords: false, tagUint8Array: false } as ConstructorParameters<typeof Encoder>[0]);
  malformed(encoder.encode({ code: 'X', reason: 'y', rejectedAt: 1 }), decodeDeadLetter);
  malformed(encoder.encode({ code: 'X', reason: 'y', rejectedAt: 1.5, envelope: minimal }), decodeDeadLetter);
  malformed(encoder.encode({ code: 1, reason: 'y', rejectedAt: 1, envelope: minimal }), decodeDeadLetter);
  malformed(encoder.encode({ code: 'X', reason: 'y', rejectedAt: 1, envelope: { ...minimal, body: 'x' } }), decodeDeadLetter);
  malformed(encodeEnvelope(full), decodeDeadLetter);
  malformed(hexBytes('a1'), decodeDeadLetter);
});

test.run();
