import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { processUplink, type UplinkOutput } from '../../../engine/uplink/admission/processUplink.ts';
import { MAX_JSON_DEPTH } from '../../../engine/kernel/checkJsonValue.ts';
import { compileDevice } from '../../../engine/uplink/admission/compileDevice.ts';
import { RECEIVED_AT, codes, envelope, run, runJson, testDevice, testDeviceInfo } from '../../support/uplink.ts';

const T = '2024-05-01T12:00:00Z';
const T_MS = Date.UTC(2024, 4, 1, 12);

// ---- JSON asset state (spec §2.1) ----

test('json asset state: value and at give one row with every field', () => {
  const out = runJson({ value: 21.5, at: T }, { asset: 'temperature' });
  assert.equal(out.rejections, []);
  assert.equal(out.rows, [{ deviceId: 'dev-1', asset: 'temperature', ts: T_MS, receivedAt: RECEIVED_AT, value: 21.5, uplinkId: 'up-1' }]);
});

test('json asset state: without at, ts is the receive time', () => {
  const out = runJson({ value: true }, { asset: 'door' });
  assert.equal(out.rows.map((r) => [r.ts, r.value]), [[RECEIVED_AT, true]]);
});

test('json asset state: at null means absent', () => {
  assert.is(runJson({ value: 3, at: null }, { asset: 'humidity' }).rows[0].ts, RECEIVED_AT);
});

test('json asset state: LPWAN network receive time is the default ts; row.receivedAt stays ours', () => {
  const out = runJson({ value: 3 }, { asset: 'humidity', channel: 'lpwan', network: { networkId: 'thethingsnetwork', receivedAt: 777 } });
  assert.equal([out.rows[0].ts, out.rows[0].receivedAt], [777, RECEIVED_AT]);
});

test('json asset state: location object value', () => {
  const value = { latitude: 51.05, longitude: 3.72 };
  assert.equal(runJson({ value }, { asset: 'location' }).rows[0].value, value);
});

test('json asset state: any JSON value kind passes an empty profile', () => {
  for (const value of [null, 0, -1.5, 'x', false, [1, 'a', null], { a: { b: [1] } }]) {
    const out = runJson({ value }, { asset: 'anything' });
    assert.equal(out.rows.map((r) => r.value), [value], JSON.stringify(value));
  }
});

test('json asset state: other keys are ignored', () => {
  const out = runJson({ value: 4, unit: '%', meta: { x: 1 } }, { asset: 'humidity' });
  assert.equal(out.rows.map((r) => r.value), [4]);
});

test('json asset state: wrong shapes are INVALID_STATE for the whole message', () => {
  for (const body of ['42', '"x"', 'null', '[1,2]', '{}', '{"at":"2024-05-01T12:00:00Z"}', 'true']) {
    const out = runJson(body, { asset: 'humidity' });
    assert.equal(codes(out), [['INVALID_STATE', undefined]], body);
    assert.is(out.rows.length, 0);
  }
});

test('json asset state: unknown asset and profile violation', () => {
  assert.equal(codes(runJson({ value: 1 }, { asset: 'nope' })), [['UNKNOWN_ASSET', 'nope']]);
  const out = runJson({ value: 'warm' }, { asset: 'temperature' });
  assert.equal(codes(out), [['PROFILE_VIOLATION', 'temperature']]);
  assert.match(out.rejections[0].reason, /must be number/);
});

// ---- JSON device state (spec §2.2) ----

test('json device state: one row per asset, each with its own at', () => {
  const out = runJson({
    temperature: { value: 21.5, at: T },
    humidity: { value: 55 },
    door: { value: false, at: '2024-05-01T14:00:00+02:00' },
    location: { value: { latitude: 1, longitude: 2 } },
  });
  assert.equal(out.rejections, []);
  assert.equal(out.rows.map((r) => [r.asset, r.ts, r.value]), [
    ['temperature', T_MS, 21.5],
    ['humidity', RECEIVED_AT, 55],
    ['door', T_MS, false],
    ['location', RECEIVED_AT, { latitude: 1, longitude: 2 }],
  ]);
  for (const r of out.rows) assert.equal([r.deviceId, r.uplinkId, r.receivedAt], ['dev-1', 'up-1', RECEIVED_AT]);
});

test('json device state: mixed good and bad assets — one rejection per bad asset, good ones kept', () => {
  const out = runJson({
    temperature: { value: 500 },
    humidity: { value: 50.5 },
    door: { value: true },
    ghost: { value: 1 },
    label: { value: 'ok', at: 'yesterday' },
    location: 'not an asset state',
    anything: { value: [1, 2] },
  });
  assert.equal(out.rows.map((r) => r.asset), ['door', 'anything']);
  assert.equal(codes(out), [
    ['PROFILE_VIOLATION', 'temperature'],
    ['PROFILE_VIOLATION', 'humidity'],
    ['UNKNOWN_ASSET', 'ghost'],
    ['INVALID_AT', 'label'],
    ['INVALID_STATE', 'location'],
  ]);
  assert.match(out.rejections[0].reason, /<= 85/);
  assert.match(out.rejections[1].reason, /integer/);
});

test('json device state: entry without value is INVALID_STATE for that asset', () => {
  const out = runJson({ door: { at: T }, humidity: { value: 1 } });
  assert.equal(codes(out), [['INVALID_STATE', 'door']]);
  assert.equal(out.rows.map((r) => r.asset), ['humidity']);
});

test('json device state: wrong top-level shapes are one INVALID_STATE', () => {
  for (const body of ['12', '"door"', 'null', 'false']) {
    assert.equal(codes(runJson(body)), [['INVALID_STATE', undefined]], body);
  }
});

test('json batch: a top-level array holds device states, each item refused or yielding on its own', () => {
  assert.equal(codes(runJson('[]')), []);
  const one = runJson('[{"door":{"value":true}}]');
  assert.equal([codes(one), one.rows.map((r) => [r.asset, r.value])], [[], [['door', true]]]);
  const mixed = runJson('[{"door":{"value":true}}, 12, {"door":{"value":3}}]');
  assert.equal(mixed.rejections.map((r) => [r.code, r.item, r.asset]), [['INVALID_STATE', 1, undefined], ['PROFILE_VIOLATION', 2, 'door']]);
  assert.equal(mixed.rows.map((r) => r.value), [true]);
  assert.equal(codes(runJson(`[${'{},'.repeat(1000)}{}]`)), [['PAYLOAD_TOO_LARGE', undefined]]);
});

test('json device state: empty object yields nothing', () => {
  assert.equal(runJson({}), { rows: [], rejections: [] });
});

test('json: a very long unknown asset name is kept whole in the rejection, shortened in its reason', () => {
  const name = 'n'.repeat(10_000);
  const out = runJson({ [name]: { value: 1 } });
  assert.equal(codes(out), [['UNKNOWN_ASSET', name]]);
  assert.ok(out.rejections[0].reason.length < 200);
});

test('json: a "__proto__" asset name is data, not a prototype', () => {
  const out = runJson('{"__proto__": {"value": 1}, "door": {"value": true}}');
  assert.equal(codes(out), [['UNKNOWN_ASSET', '__proto__']]);
  assert.equal(out.rows.map((r) => r.asset), ['door']);
});

// ---- malformed JSON ----

test('json: malformed bodies are MALFORMED_JSON', () => {
  for (const body of ['', '{', '{"door": {"value": tru}}', "{'door': 1}", '{"a":1}}', '\u0000', '{"door":{"value":NaN}}']) {
    const out = runJson(body);
    assert.equal(codes(out), [['MALFORMED_JSON', undefined]], JSON.stringify(body));
    assert.match(out.rejections[0].reason, /not valid JSON/);
  }
});

test('json: invalid UTF-8 is MALFORMED_JSON, valid UTF-8 and a BOM are fine', () => {
  const bad = [
    Uint8Array.of(0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d), // {"\xc3(":1}
    Uint8Array.of(0x22, 0xed, 0xa0, 0x80, 0x22), // UTF-16 surrogate encoded in UTF-8
    Uint8Array.of(0x22, 0xc0, 0xaf, 0x22), // overlong '/'
    Uint8Array.of(0xff, 0xfe, 0x7b, 0x7d),
  ];
  for (const body of bad) {
    const out = run(envelope(body, 'json', { asset: 'label' }));
    assert.equal(codes(out), [['MALFORMED_JSON', undefined]]);
    assert.match(out.rejections[0].reason, /UTF-8/);
  }
  const ok = run(envelope(new TextEncoder().encode('\ufeff{"value":"Zürich 水"}'), 'json', { asset: 'label' }));
  assert.equal(ok.rows.map((r) => r.value), ['Zürich 水']);
});

test('json: wrong value types are PROFILE_VIOLATION naming the path', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['temperature', '21', /^value: must be number/],
    ['humidity', true, /^value: must be integer/],
    ['door', 'true', /^value: must be boolean/],
    ['label', 5, /^value: must be string/],
    ['location', { latitude: '51', longitude: 3 }, /^value\/latitude: must be number/],
    ['location', [51, 3], /^value: must be object/],
  ];
  for (const [asset, value, reason] of cases) {
    const out = runJson({ [asset]: { value } });
    assert.equal(codes(out), [['PROFILE_VIOLATION', asset]]);
    assert.match(out.rejections[0].reason, reason);
  }
});

// ---- huge numbers ----

test('json: 1e400 and -1e400 are refused for that asset, never stored as Infinity', () => {
  const out = runJson('{"temperature": {"value": 1e400}, "anything": {"value": [1, -1e400]}, "door": {"value": true}}');
  assert.equal(codes(out), [['INVALID_STATE', 'temperature'], ['INVALID_STATE', 'anything']]);
  assert.match(out.rejections[0].reason, /^value: number Infinity is not finite/);
  assert.match(out.rejections[1].reason, /^value\/1: number -Infinity is not finite/);
  assert.equal(out.rows.map((r) => r.value), [true]);
});

test('json: integers beyond 2^53 parse as (inexact) doubles and still obey the profile', () => {
  const out = runJson('{"anything": {"value": 123456789012345678901234567890}, "humidity": {"value": 1e30}}');
  assert.equal(out.rows.map((r) => r.value), [1.2345678901234568e29]);
  assert.equal(codes(out), [['PROFILE_VIOLATION', 'humidity']]);
});

// ---- nesting depth ----

test('json: 100k-deep arrays and objects are TOO_DEEP without blowing the stack', () => {
  const n = 100_000;
  const bodies = [
    '['.repeat(n) + ']'.repeat(n),
    '{"a":'.repeat(n) + '1' + '}'.repeat(n),
    `{"anything": {"value": ${'['.repeat(n)}${']'.repeat(n)}}}`,
    `{"anything": {"value": 1, "extra": ${'{"x":'.repeat(n)}1${'}'.repeat(n)}}}`,
    `{"anything": {"value": 1, "at": ${'['.repeat(n)}${']'.repeat(n)}}}`,
  ];
  for (const body of bodies) {
    assert.equal(codes(runJson(body)), [['TOO_DEEP', undefined]]);
  }
  assert.equal(codes(runJson(`{"value": ${'['.repeat(n)}${']'.repeat(n)}}`, { asset: 'anything' })), [['TOO_DEEP', undefined]]);
});

test('json: depth limit is exact — 32 levels pass, 33 fail', () => {
  // device state object (1) + asset state (2) + value containers
  const nest = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
  const ok = runJson(`{"anything": {"value": ${nest(MAX_JSON_DEPTH - 2)}}}`);
  assert.equal(ok.rejections, []);
  assert.is(ok.rows.length, 1);
  assert.equal(codes(runJson(`{"anything": {"value": ${nest(MAX_JSON_DEPTH - 1)}}}`)), [['TOO_DEEP', undefined]]);
});

test('TOO_DEEP drops rows already produced for the same message', () => {
  const out = runJson(`{"door": {"value": true}, "anything": {"value": ${'['.repeat(40)}${']'.repeat(40)}}}`);
  assert.equal(out.rows, []);
  assert.equal(codes(out), [['TOO_DEEP', undefined]]);
});

// ---- at ----

test('at: accepted ISO 8601 forms', () => {
  const cases: Array<[string, number]> = [
    ['2024-05-01T12:00:00Z', T_MS],
    ['2024-05-01T12:00:00.123Z', T_MS + 123],
    ['2024-05-01T14:00:00+02:00', T_MS],
    ['2024-05-01T12:00:00', T_MS],
    ['2024-05-01T12:00Z', T_MS],
    ['2024-05-01T12:00:00.123456', T_MS + 123],
  ];
  for (const [at, ts] of cases) assert.is(runJson({ value: 1, at }, { asset: 'humidity' }).rows[0]?.ts, ts, at);
});

test('at: malformed values are INVALID_AT for that asset with a reason', () => {
  const bad: unknown[] = [
    'yesterday', '', '2024-05-01', '12:00:00Z', '2024-13-01T00:00:00Z', '2024-02-30T00:00:00Z',
    '2024-05-01T25:00:00Z', '2024-05-01T12:00:00Z+02:00', '2024-05-01 12:00:00Z', '20240501T120000Z',
    'Wed, 01 May 2024 12:00:00 GMT', 1714564800000, 1714564800, true, { t: 1 }, ['2024-05-01T12:00:00Z'],
  ];
  for (const at of bad) {
    const out = runJson({ humidity: { value: 1, at }, door: { value: true } });
    assert.equal(codes(out), [['INVALID_AT', 'humidity']], JSON.stringify(at));
    assert.match(out.rejections[0].reason, /^at /);
    assert.equal(out.rows.map((r) => r.asset), ['door']);
  }
  assert.match(runJson({ value: 1, at: 1714564800000 }, { asset: 'humidity' }).rejections[0].reason, /not a number/);
});

// ---- binary ----

test('binary: decoder output becomes rows, fPort reaches the decoder', () => {
  const seen: Array<number | undefined> = [];
  const device = testDevice({
    binaryDecoder: () => (bytes, meta) => {
      seen.push(meta.fPort);
      return { temperature: bytes[0] / 2, door: bytes[1] === 1 };
    },
  });
  const out = run(envelope(Uint8Array.of(43, 1), 'binary', { channel: 'lpwan', network: { networkId: 'loriot', fPort: 5, receivedAt: 900 } }), device);
  assert.equal(out.rows.map((r) => [r.asset, r.ts, r.value]), [['temperature', 900, 21.5], ['door', 900, true]]);
  assert.equal(seen, [5]);
});

test('binary: decoder gets the DeviceInfo when the device compiles', () => {
  let got: unknown;
  compileDevice(testDeviceInfo, { binaryDecoder: (info) => { got = info; return undefined; } });
  assert.is(got, testDeviceInfo);
});

test('binary: no decoder, a throwing decoder, and a non-map result are DECODE_FAILED', () => {
  const body = Uint8Array.of(1, 2);
  const none = run(envelope(body, 'binary'));
  assert.equal(codes(none), [['DECODE_FAILED', undefined]]);
  const throwing = run(envelope(body, 'binary'), testDevice({ binaryDecoder: () => () => { throw new Error('payload too short: 2 bytes'); } }));
  assert.equal(codes(throwing), [['DECODE_FAILED', undefined]]);
  assert.match(throwing.rejections[0].reason, /payload too short: 2 bytes/);
  const thrownString = run(envelope(body, 'binary'), testDevice({ binaryDecoder: () => () => { throw 'bad'; } }));
  assert.match(thrownString.rejections[0].reason, /bad/);
  for (const result of [null, [1, 2], 5, new Map([['door', true]])]) {
    const out = run(envelope(body, 'binary'), testDevice({ binaryDecoder: () => () => result as unknown as Record<string, unknown> }));
    assert.equal(codes(out), [['DECODE_FAILED', undefined]]);
  }
});

test('binary: decoder values that are not JSON are refused per asset', () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const device = testDevice({
    binaryDecoder: () => () => ({
      temperature: NaN, humidity: 10n, label: new Date(0), anything: cyclic, location: { latitude: undefined, longitude: 1 }, door: true,
    }),
  });
  const out = run(envelope(Uint8Array.of(0), 'binary'), device);
  // The cycle trips the depth limit, which rejects the whole message.
  assert.equal(codes(out), [['TOO_DEEP', undefined]]);
  const device2 = testDevice({
    binaryDecoder: () => () => ({ temperature: NaN, humidity: 10n, label: new Date(0), location: { latitude: undefined, longitude: 1 }, door: true }),
  });
  const out2 = run(envelope(Uint8Array.of(0), 'binary'), device2);
  assert.equal(codes(out2), [['INVALID_STATE', 'temperature'], ['INVALID_STATE', 'humidity'], ['INVALID_STATE', 'label'], ['INVALID_STATE', 'location']]);
  assert.match(out2.rejections[1].reason, /outside ±\(2\^53−1\)/);
  assert.match(out2.rejections[2].reason, /Date object is not a JSON value/);
  assert.match(out2.rejections[3].reason, /^value\/latitude: undefined/);
  assert.equal(out2.rows.map((r) => r.asset), ['door']);
});

// ---- output reuse and guards ----

test('processUplink appends to the caller-owned arrays and never clears them', () => {
  const out: UplinkOutput = { rows: [], rejections: [] };
  const device = testDevice();
  processUplink(envelope('{"door": {"value": true}}', 'json'), device, out);
  processUplink(envelope('{"ghost": {"value": 1}}', 'json'), device, out);
  processUplink(envelope('{', 'json'), device, out);
  processUplink(envelope(`{"anything": {"value": ${'['.repeat(50)}${']'.repeat(50)}}}`, 'json'), device, out);
  assert.is(out.rows.length, 1);
  assert.equal(out.rejections.map((r) => r.code), ['UNKNOWN_ASSET', 'MALFORMED_JSON', 'TOO_DEEP']);
});

test('an envelope for another device is refused, unknown content type too', () => {
  assert.equal(codes(runJson({ door: { value: true } }, { deviceId: 'dev-2' })), [['PROCESSING_FAILED', undefined]]);
  const env = envelope('{}', 'json');
  (env as { contentType: string }).contentType = 'xml';
  assert.equal(codes(run(env)), [['UNSUPPORTED_CONTENT_TYPE', undefined]]);
});

test('a profile checker that throws becomes PROCESSING_FAILED, rows of that message dropped', () => {
  const device = testDevice();
  const door = device.assets.get('door')!;
  (device.assets as Map<string, typeof door>).set('door', { ...door, check: () => { throw new Error('boom'); } });
  const out = runJson({ humidity: { value: 1 }, door: { value: true } }, {}, device);
  assert.equal(out.rows, []);
  assert.equal(codes(out), [['PROCESSING_FAILED', undefined]]);
  assert.match(out.rejections[0].reason, /boom/);
});

test('an asset with an invalid profile refuses its values, other assets still pass', () => {
  const device = compileDevice({
    id: 'dev-1',
    assets: [
      { id: 'x', name: 'broken', is: 'sensor', profile: { type: 'float' } },
      { id: 'y', name: 'door', is: 'sensor', profile: { type: 'boolean' } },
    ],
  });
  const out = runJson({ broken: { value: 1 }, door: { value: true } }, {}, device);
  assert.equal(codes(out), [['PROFILE_VIOLATION', 'broken']]);
  assert.match(out.rejections[0].reason, /asset profile is invalid/);
  assert.equal(out.rows.map((r) => r.asset), ['door']);
});

test.run();
