/**
 * JsonBytes (engine/events/JsonBytes.ts): what it writes is what JSON.stringify writes, for the
 * integers, numbers, strings (those that need escaping included) and values of the records of
 * topic `events`; and what take() handed out stays as it was while the writer goes on, across
 * buffers.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { JsonBytes } from '../../../engine/events/JsonBytes.ts';

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

test('integers, numbers and values as JSON.stringify writes them', () => {
  const out = new JsonBytes(8);
  const integers = [0, 1, 9, 10, 99, 100, 999_999_999, 1e9, 1e9 + 1, 1_764_000_000_123, -1_764_000_000_123, -5, -0, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 60, 1e21];
  for (const n of integers) assert.is(text(out.integer(n).take()), JSON.stringify(n), String(n));
  const values = [1.5, -0.25, 5e-7, 1e21, NaN, Infinity, -Infinity, 'x"y', null, { a: [1, 'b'] }, [1, 2], true, 42];
  for (const v of values) assert.is(text(out.value(v).take()), JSON.stringify(v) ?? 'null', String(v));
});

test('strings: printable ASCII as it is, anything else escaped as JSON.stringify does', () => {
  const out = new JsonBytes(8);
  for (const s of ['plain', '', 'q"uote', 'back\\slash', 'ünï', '\u2028', 'ctrl\u0001\n', '😀', '\ud800', 'a'.repeat(100)]) {
    assert.is(text(out.string(s).take()), JSON.stringify(s), JSON.stringify(s));
  }
});

test('what take() handed out stays as it was while the writer goes on into new buffers', () => {
  const out = new JsonBytes(16);
  const taken: [Uint8Array, string][] = [];
  for (let i = 0; i < 300; i++) {
    const s = `${'k'.repeat(i % 40)}${i % 7 === 0 ? 'é"' : ''}`;
    out.raw('[').string(s).raw(',').integer(i * 1e10).raw(',').value(i / 4).raw(']');
    taken.push([out.take(), JSON.stringify([s, i * 1e10, i / 4])]);
  }
  for (const [bytes, expected] of taken) assert.is(text(bytes), expected);
  assert.ok(JSON.parse(text(taken[299][0])));
});

test.run();
