/**
 * Compiled device types are shared by content and dropped with their last holder
 * (engine/conversion/codecCache.ts).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { codecFor } from '../../../engine/conversion/codecFor.ts';
import { compiledTypeStats } from '../../../engine/conversion/codecCache.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { fromHex, loadConversionFixtures } from '../../support/conversionFixtures.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** Collects after the current job: WeakRef targets made in a job live until it ends. */
async function collect(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
}

const binary = (conversion: unknown) => ({ format: 'binary' as const, conversion: conversion as never });
let unique = 0;
/** A script no other test compiles. */
const fresh = () => ({ sense: [{ asset: `asset${++unique}`, value: { byte: 0, bytelength: 2, calculation: `val / ${unique}` } }] });

test('one compiled type per content: versions, comments, key order and spellings share it', () => {
  const base = { sense: [{ asset: 'temperature', value: { byte: 0, bytelength: 2, type: 'integer', signed: true, byteorder: 'little' } }] };
  const before = compiledTypeStats();
  const a = codecFor(binary(base))!;
  const b = codecFor(binary({ version: '2', name: 'Room sensor', description: 'same bytes', ...structuredClone(base) }))!;
  const c = codecFor(binary({ sense: [{ value: { byteorder: 'small', type: 'int', bytelength: 2, byte: 0 }, asset: 'temperature', comment: 'reordered' }] }))!;
  assert.is(b.decode, a.decode);
  assert.is(c.decode, a.decode);
  assert.is(codecFor(binary(base)), a, 'the same object gives the same codec');
  const after = compiledTypeStats();
  assert.is(after.compiled - before.compiled, 1);
  assert.is(after.shared - before.shared, 2);
  assert.equal(a.decode(fromHex('feff')), { temperature: -2 });
  const other = codecFor(binary({ sense: [{ asset: 'temperature', value: { byte: 0, bytelength: 2 } }] }))!;
  assert.is.not(other.decode, a.decode);
});

test('every golden script compiles once and decodes through codecFor', () => {
  for (const fixture of loadConversionFixtures()) {
    const codec = codecFor(binary(fixture.script))!;
    assert.is(codecFor(binary(structuredClone(fixture.script)))!.decode, codec.decode, fixture.file);
  }
});

test('a type stays while a device holds only its decode, and goes with the last holder', async () => {
  await collect();
  const before = compiledTypeStats().live;
  const script = fresh();
  let decode: ((bytes: Uint8Array) => unknown) | undefined = codecFor(binary(structuredClone(script)))!.decode;
  await collect();
  // The codec object and the script object are gone; decode alone keeps the type.
  assert.is(compiledTypeStats().live, before + 1);
  assert.is(codecFor(binary(structuredClone(script)))!.decode, decode);
  assert.equal(decode(fromHex('0010')), { [`asset${unique}`]: 16 / unique });
  decode = undefined;
  await collect();
  assert.is(compiledTypeStats().live, before);
});

test('many types: each stays bounded, and all go when their devices go', async () => {
  await collect();
  const before = compiledTypeStats();
  let held: unknown[] = Array.from({ length: 50 }, () => codecFor(binary(fresh()))!.decode);
  const during = compiledTypeStats();
  assert.is(during.live - before.live, 50);
  assert.is(during.compiled - before.compiled, 50);
  assert.ok((during.compileMs - before.compileMs) / 50 < 50, 'compile time is recorded per type');
  assert.ok((during.sourceChars - before.sourceChars) / 50 < 4_000, `${(during.sourceChars - before.sourceChars) / 50} characters of source per type`);
  held = [];
  await collect();
  assert.is(compiledTypeStats().live, before.live + held.length);
});

test('a stored script that no longer checks gives a codec that rejects with the reason', () => {
  const codec = codecFor(binary({ sense: [{ asset: 'a', value: { byte: 0, calculation: 'val ** 2' } }] }))!;
  for (const run of [() => codec.decode(fromHex('00')), () => codec.encode!({})]) {
    try {
      run();
      assert.unreachable();
    } catch (error) {
      assert.instance(error, FleetError);
      assert.match((error as FleetError).message, /conversion script is invalid: sense\[0\]\.value\.calculation/);
    }
  }
});

test.run();
