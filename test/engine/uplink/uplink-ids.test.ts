import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { newUplinkId } from '../../../engine/kernel/ids.ts';

test('uplink ids are 16 hex digits: the receive time, then 20 bits that count within the millisecond', () => {
  const at = Date.UTC(2026, 10, 24, 19, 0, 0, 123);
  const [a, b] = [newUplinkId(at), newUplinkId(at)];
  const later = newUplinkId(at + 1);
  for (const id of [a, b, later]) assert.match(id, /^[0-9A-F]{16}$/);
  assert.is(BigInt(`0x${a}`) >> 20n, BigInt(at));
  assert.is(BigInt(`0x${later}`) >> 20n, BigInt(at + 1));
  assert.is(BigInt(`0x${b}`) - BigInt(`0x${a}`), 1n);
  assert.ok(a < b && b < later);
});

test('ids of many uplinks in one millisecond stay distinct up to 256', () => {
  const at = Date.UTC(2026, 0, 1);
  const ids = new Set(Array.from({ length: 256 }, () => newUplinkId(at)));
  assert.is(ids.size, 256);
});

test('a receive time outside 1972..2527 falls back to a random id', () => {
  assert.match(newUplinkId(5), /^[0-9A-Za-z]{22}$/);
  assert.match(newUplinkId(2 ** 44), /^[0-9A-Za-z]{22}$/);
});

test('the receive time reads back from the id for any time in range, in any order (also across the 4.096 s steps of the high half)', () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const base = Date.UTC(2026, 10, 24);
  const times = [base + 4095, base + 4096, base + 4097, base + 4095, 2 ** 36, 2 ** 44 - 1];
  for (let i = 0; i < 2000; i++) times.push(i % 2 === 0 ? base + Math.floor(random() * 20_000) : 2 ** 36 + Math.floor(random() * (2 ** 44 - 2 ** 36)));
  for (const at of times) {
    const id = newUplinkId(at);
    assert.match(id, /^[0-9A-F]{16}$/);
    assert.is(BigInt(`0x${id}`) >> 20n, BigInt(at), `${at} → ${id}`);
  }
});

test.run();
