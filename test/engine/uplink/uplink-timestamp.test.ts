import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { parseTimestamp } from '../../../engine/uplink/admission/parseTimestamp.ts';

test('accepted ISO 8601 forms', () => {
  const noon = Date.UTC(2024, 4, 1, 12);
  const cases: Array<[string, number]> = [
    ['2024-05-01T12:00:00Z', noon],
    ['2024-05-01T12:00:00z', noon],
    ['2024-05-01t12:00:00Z', noon],
    ['2024-05-01T12:00Z', noon],
    ['2024-05-01T12:00', noon],
    ['2024-05-01T12:00:00', noon],
    ['2024-05-01T12:00:00.5Z', noon + 500],
    ['2024-05-01T12:00:00,25Z', noon + 250],
    ['2024-05-01T12:00:00.123Z', noon + 123],
    ['2024-05-01T12:00:00.123999999Z', noon + 123],
    ['2024-05-01T12:00:00.999999999999999999Z', noon + 999],
    ['2024-05-01T14:00:00+02:00', noon],
    ['2024-05-01T14:00:00+0200', noon],
    ['2024-05-01T14:00:00+02', noon],
    ['2024-05-01T09:30:00-02:30', noon],
    ['2024-05-01T12:00:00-00:00', noon],
    ['2024-05-01T12:00:00+00:00', noon],
    ['2024-05-01T12:00:00.123456', noon + 123],
    ['2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
    ['2000-02-29T00:00:00Z', Date.UTC(2000, 1, 29)],
    ['1970-01-01T00:00:00Z', 0],
    ['1969-12-31T23:59:59.999Z', -1],
    ['0001-01-01T00:00:00Z', -62135596800000],
    ['0000-03-01T00:00:00Z', -62162035200000],
    ['9999-12-31T23:59:59.999Z', 253402300799999],
    ['2016-12-31T23:59:60Z', Date.UTC(2017, 0, 1)],
  ];
  for (const [s, ms] of cases) assert.is(parseTimestamp(s), ms, s);
});

test('refused forms give NaN', () => {
  const bad = [
    '', 'now', '2024-05-01', '2024-05-01T', '2024-05-01T12', '2024-05-01T12:0', '12:00:00Z', 'T12:00:00Z',
    '2024-5-1T12:00:00Z', '24-05-01T12:00:00Z', '+002024-05-01T12:00:00Z', '-2024-05-01T12:00:00Z',
    '20240501T120000Z', '2024-W18-3T12:00:00Z', '2024-122T12:00:00Z',
    '2024-00-01T12:00:00Z', '2024-13-01T12:00:00Z', '2024-05-00T12:00:00Z', '2024-05-32T12:00:00Z',
    '2024-04-31T12:00:00Z', '2023-02-29T12:00:00Z', '1900-02-29T12:00:00Z',
    '2024-05-01T24:00:00Z', '2024-05-01T12:60:00Z', '2024-05-01T12:00:61Z',
    '2024-05-01T12:00:00.Z', '2024-05-01T12:00:00.abcZ', '2024-05-01T12:00.5Z',
    '2024-05-01T12:00:00Z+02:00', '2024-05-01T12:00Z+02:00', '2024-05-01T12:00:00ZZ',
    '2024-05-01T12:00:00+2:00', '2024-05-01T12:00:00+24:00', '2024-05-01T12:00:00+02:60', '2024-05-01T12:00:00+02:',
    '2024-05-01T12:00:00+020', '2024-05-01T12:00:00 Z', '2024-05-01 12:00:00Z', '2024-05-01_12:00:00Z',
    ' 2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z ', '2024-05-01T12:00:00\u0000',
    '２０２４-05-01T12:00:00Z', '2024-05-01T12:00:00UTC', '2024-05-01T12:00:00GMT+1',
    'Wed, 01 May 2024 12:00:00 GMT', '2024-05-01T12:00:00.' + '1'.repeat(100) + 'Z',
  ];
  for (const s of bad) assert.ok(Number.isNaN(parseTimestamp(s)), JSON.stringify(s));
});

test('agrees with Date.parse on every RFC 3339 timestamp with a zone', () => {
  const arb = fc.record({
    ms: fc.integer({ min: Date.UTC(1, 0, 1), max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) }),
    offset: fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
  });
  fc.assert(fc.property(arb, ({ ms, offset }) => {
    const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23); // YYYY-MM-DDThh:mm:ss.sss
    if (local.startsWith('+') || local.startsWith('-')) return;
    const sign = offset < 0 ? '-' : '+';
    const abs = Math.abs(offset);
    const zone = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
    assert.is(parseTimestamp(local + zone), ms);
    assert.is(parseTimestamp(local + zone), Date.parse(local + zone));
  }), { numRuns: 2000 });
});

test.run();
