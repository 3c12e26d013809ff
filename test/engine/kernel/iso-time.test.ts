import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { isoTime } from '../../../engine/kernel/isoTime.ts';

const dateIso = (ms: number): string => new Date(ms).toISOString();

test('the same string as Date.prototype.toISOString over years 0000–9999', () => {
  fc.assert(fc.property(fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }), (ms) => {
    assert.is(isoTime(ms), dateIso(ms));
  }), { numRuns: 20_000 });
});

test('edges: epoch, leap days, the ends of the four-digit years', () => {
  for (const ms of [0, -1, 1, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, -62_167_219_200_000, 253_402_300_799_999]) {
    assert.is(isoTime(ms), dateIso(ms), String(ms));
  }
});

test('outside the four-digit years and fractions: what Date gives', () => {
  for (const ms of [-62_167_219_200_001, 253_402_300_800_000, 8.64e15, -8.64e15, 1.5]) assert.is(isoTime(ms), dateIso(ms), String(ms));
  assert.throws(() => isoTime(NaN), RangeError);
});

test.run();
