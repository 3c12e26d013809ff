/**
 * The state row payloads of the compact layout, engine-free: the number split (mantissa and scale)
 * against the decimal text it is defined by, and RowBinary bytes decoded field by field back to the
 * values the TabSeparated payload carries for the same rows. The stored results of both payloads
 * are compared in the engine by test/adapters/clickhouse/chdb-store.test.ts.
 */
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeCompactStateRowsRowBinary } from '../../../adapters/clickhouse-sql/encodeCompactStateRowsRowBinary.ts';
import { encodeStateRowsRowBinary } from '../../../adapters/clickhouse-sql/encodeStateRowsRowBinary.ts';
import { compactNumber, encodeCompactStateRowsTsv, FLOAT_SCALE, numberText } from '../../../adapters/clickhouse-sql/encodeStateRowsTsv.ts';
import { insertGroups } from '../../../adapters/clickhouse-sql/stateLayout.ts';
import { newUplinkId } from '../../../engine/kernel/ids.ts';
import type { JsonValue, StateRow } from '../../../schemas/messages.ts';
import { referenceCompactStateRowsRowBinary, referenceStateRowsRowBinary } from '../../support/rowBinaryReference.ts';

/** The definition: digits and decimals of the shortest text, when it has no exponent and both fit. */
function fromText(value: number): [number, number] {
  const text = numberText(value);
  if (!text.includes('e') && !Object.is(value, -0)) {
    const dot = text.indexOf('.');
    const scale = dot < 0 ? 0 : text.length - dot - 1;
    const mantissa = Number(dot < 0 ? text : text.slice(0, dot) + text.slice(dot + 1));
    if (scale < 16 && Math.abs(mantissa) < 1e15 && mantissa / 10 ** scale === value) return [mantissa, scale];
  }
  return [0, FLOAT_SCALE];
}

function split(value: number): [number, number] {
  const { mantissa, scale } = compactNumber(value);
  return [mantissa, scale];
}

test('the number split is the decimal text, for readings, edges and any double', () => {
  const edges = [0, -0, 1, -1, 0.1, 0.3, 0.05, -0.05, 21.37, -40.25, 99.9, 1e-6, 9.99e-7, 1e-7, 0.000001234, 123456789012345, 1e15, 999999999999999, 99999999999999.9,
    0.30000000000000004, 1e21, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 2 ** 53, 2 ** 53 + 2, 0.1 + 0.2, 1 / 3, Math.PI, -Math.E];
  for (const value of edges) assert.equal(split(value), fromText(value), String(value));
  const readings = fc.tuple(fc.integer({ min: -(10 ** 12), max: 10 ** 12 }), fc.integer({ min: 0, max: 17 })).map(([m, k]) => m / 10 ** k);
  fc.assert(fc.property(fc.oneof(readings, fc.double({ noNaN: true, noDefaultInfinity: true })), (value) => {
    assert.equal(split(value), fromText(value), String(value));
  }), { numRuns: 200_000 });
});

test('a float keeps its text; a decimal does not need one', () => {
  assert.is(compactNumber(-0).text, '-0');
  assert.is(compactNumber(1e21).scale, FLOAT_SCALE);
  assert.is(compactNumber(1e21).text, '1e+21');
});

/** Reads one RowBinary row of the compact layout back into the TSV fields it stands for. */
function readRows(bytes: Buffer): string[][] {
  let pos = 0;
  const string = () => {
    let length = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = bytes[pos++];
      length += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
    }
    const text = bytes.toString('utf8', pos, pos + length);
    pos += length;
    return text.replace(/[\\\t\n\r\0]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' })[c]!);
  };
  const int64 = () => String(bytes.readBigInt64LE((pos += 8) - 8));
  const rows: string[][] = [];
  while (pos < bytes.length) {
    const row = [string(), string(), int64(), int64(), String(bytes.readUInt32LE((pos += 4) - 4)), string()];
    row.push(['null', 'number', 'string', 'boolean', 'json'][bytes[pos++]]);
    row.push(int64(), String(bytes[pos++]));
    const float = bytes.readDoubleLE((pos += 8) - 8);
    row.push(numberText(float), string(), String(bytes[pos++]));
    row.push(String(bytes.readUInt16LE((pos += 2) - 2)));
    rows.push(row);
  }
  return rows;
}

/** The TSV payload split into fields, value_float normalized as the engine would read it. */
function tsvRows(payload: Buffer): string[][] {
  return payload.toString('utf8').split('\n').filter((line) => line !== '').map((line) => {
    const fields = line.split('\t');
    fields[9] = numberText(Number(fields[9]));
    return fields;
  });
}

test('RowBinary carries the same fields as TabSeparated, for every value kind and both uplink id forms', () => {
  const t = Date.UTC(2026, 0, 1);
  const values: JsonValue[] = [21.37, -0, 1e21, 0.1 + 0.2, 5e-324, -40, 'tab\there, new\nline, back\\slash, nul\0, é 😀', '', '\ud800 lone', true, false, null,
    { nested: [1, 'x', { deep: null }] }, [1, 2.5, 'three'], 'x'.repeat(300), 'é'.repeat(100)];
  for (const keepText of [false, true]) {
    const rows: StateRow[] = values.map((value, i) => ({
      deviceId: i % 2 ? 'device-1' : 'dévice\t2',
      asset: `asset-${i}`,
      ts: t + i - 5,
      receivedAt: t + i,
      value,
      uplinkId: i % 3 === 0 ? newUplinkId(t + i) : `uplink ${i}`,
      ...(i % 4 === 0 ? {} : { seq: [0, 1, 999, 65_535][i % 4] }),
    }));
    rows.push({ deviceId: 'd', asset: 'a', ts: -(2 ** 53 - 1), receivedAt: 2 ** 53 - 1, value: 1, uplinkId: newUplinkId(5), seq: 258 });
    assert.equal(readRows(encodeCompactStateRowsRowBinary(rows, keepText)), tsvRows(encodeCompactStateRowsTsv(rows, keepText)));
  }
});

test('RowBinary of many rows grows its buffer without losing a byte', () => {
  const rows: StateRow[] = Array.from({ length: 5_000 }, (_, i) => ({ deviceId: `d${i}`, asset: 'a', ts: i, receivedAt: i, value: 'ü'.repeat(i % 200), uplinkId: `u${i}` }));
  assert.equal(readRows(encodeCompactStateRowsRowBinary(rows, false)), tsvRows(encodeCompactStateRowsTsv(rows, false)));
});

/** Rows as checkStateRows lets through: every value kind, text of every size and script, any ids. */
const stateRow = (() => {
  const text = fc.oneof(
    fc.string({ minLength: 1, maxLength: 20 }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }),
    fc.string({ minLength: 120, maxLength: 3_000 }),
    fc.constantFrom('x'.repeat(127), 'x'.repeat(128), 'é'.repeat(64), '\ud800', 'a\udc00b'),
  );
  const time = fc.oneof(fc.integer({ min: 2 ** 36, max: 2 ** 44 - 1 }), fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), fc.constantFrom(0, -1, 2 ** 32, -(2 ** 32), 2 ** 53 - 1));
  const value: fc.Arbitrary<JsonValue> = fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.tuple(fc.integer({ min: -(10 ** 12), max: 10 ** 12 }), fc.integer({ min: 0, max: 17 })).map(([m, k]) => m / 10 ** k),
    fc.integer(),
    text,
    fc.string({ maxLength: 3 }),
    fc.boolean(),
    fc.constant(null),
    fc.json({ depthSize: 'small' }).map((json) => JSON.parse(json) as JsonValue),
  );
  const seq = fc.oneof(fc.constant(undefined), fc.constant(0), fc.integer({ min: 0, max: 65_535 }));
  return fc.record({ deviceId: text, asset: text, ts: time, lag: fc.oneof(fc.constant(0), fc.integer({ min: -(2 ** 40), max: 2 ** 40 })), value, idKind: fc.nat(4), id: text, hex: fc.stringMatching(/^[0-9A-Fa-f]{16}$/), seq })
    .map(({ deviceId, asset, ts, lag, value, idKind, id, hex, seq }): StateRow => {
      const receivedAt = Number.isSafeInteger(ts + lag) ? ts + lag : ts;
      // Ordered ids of this row's receive time, of another time, hex look-alikes, and plain text.
      const uplinkId = idKind === 0 ? newUplinkId(receivedAt) : idKind === 1 ? newUplinkId(receivedAt + 1) : idKind === 2 ? hex : id;
      return seq === undefined ? { deviceId, asset, ts, receivedAt, value, uplinkId } : { deviceId, asset, ts, receivedAt, value, uplinkId, seq };
    });
})();

test('property: RowBinary bytes are exactly those of the reference encoders, batches small and large', () => {
  fc.assert(fc.property(fc.array(stateRow, { maxLength: 60 }), fc.boolean(), (rows, keepText) => {
    assert.ok(encodeCompactStateRowsRowBinary(rows, keepText).equals(referenceCompactStateRowsRowBinary(rows, keepText)));
    assert.ok(encodeStateRowsRowBinary(rows).equals(referenceStateRowsRowBinary(rows)));
  }), { numRuns: 400 });
  // One large batch, as the store writes them (40 000 rows), of a few rows repeated.
  const some = fc.sample(stateRow, { numRuns: 400, seed: 7 });
  const many = Array.from({ length: 40_000 }, (_, i) => some[i % some.length]);
  for (const keepText of [false, true]) assert.ok(encodeCompactStateRowsRowBinary(many, keepText).equals(referenceCompactStateRowsRowBinary(many, keepText)));
  assert.ok(encodeStateRowsRowBinary(many).equals(referenceStateRowsRowBinary(many)));
  // Every row longer than the initial guess: the buffer grows many times.
  const long = Array.from({ length: 50 }, (_, i): StateRow => ({ deviceId: 'd'.repeat(1_000 + i), asset: 'é'.repeat(500), ts: i, receivedAt: i, value: { text: 'ü'.repeat(700) }, uplinkId: `u${i}` }));
  assert.ok(encodeCompactStateRowsRowBinary(long, true).equals(referenceCompactStateRowsRowBinary(long, true)));
  assert.ok(encodeStateRowsRowBinary(long).equals(referenceStateRowsRowBinary(long)));
});

test('inserts are cut so that none touches more than 100 daily partitions', () => {
  const day = 86_400_000;
  const at = (d: number, i = 0): StateRow => ({ deviceId: 'd', asset: 'a', ts: d * day + i, receivedAt: d * day + i, value: i, uplinkId: `u${d}-${i}` });
  const near = [at(-1), at(98, 5), at(10), at(-1, 7)];
  assert.equal(insertGroups(near), [near]);
  const far = Array.from({ length: 250 }, (_, d) => [at(d * 3), at(d * 3, 1)]).flat();
  const groups = insertGroups(far);
  assert.is(groups.length, 3);
  for (const group of groups) assert.ok(new Set(group.map((row) => Math.floor(row.ts / day))).size <= 100);
  assert.equal(groups.flat().map((row) => row.uplinkId).sort(), far.map((row) => row.uplinkId).sort());
});

test.run();
