import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { newActivationCode, normaliseActivationCode } from '../../../engine/activation/activationCodes.ts';
import { isId, newId } from '../../../engine/kernel/ids.ts';
import { hashToken, newToken, tokenScope } from '../../../engine/access/tokens.ts';

test('ids: 22 base62 characters, distinct, every character in use', () => {
  const ids = Array.from({ length: 2000 }, newId);
  assert.is(new Set(ids).size, ids.length);
  for (const id of ids) assert.ok(isId(id), id);
  const seen = new Set(ids.join(''));
  assert.is(seen.size, 62, 'the whole alphabet appears (no truncated range)');
  for (const bad of ['', 'a'.repeat(21), 'a'.repeat(23), 'a'.repeat(21) + '-', 'a'.repeat(21) + '_', 'ä'.repeat(22), 22, null, undefined, ['a'.repeat(22)]]) {
    assert.not.ok(isId(bad), String(bad));
  }
});

test('tokens: scope prefix, 43 secret characters, scope read back only from well-formed tokens', () => {
  for (const [scope, prefix] of [['device', 'fsd_'], ['user', 'fsu_'], ['partner', 'fsp_']] as const) {
    const t = newToken(scope);
    assert.ok(t.startsWith(prefix));
    assert.match(t, /^fs[dup]_[0-9A-Za-z]{43}$/);
    assert.is(tokenScope(t), scope);
  }
  assert.is.not(newToken('user'), newToken('user'));
  for (const bad of ['', 'fsd_', 'fsx_' + 'a'.repeat(43), 'fsd_' + 'a'.repeat(42), 'fsd_' + 'a'.repeat(44), ' fsd_' + 'a'.repeat(43), 'fsd_' + 'a'.repeat(42) + '\n', 1, null]) {
    assert.is(tokenScope(bad), undefined, JSON.stringify(bad));
  }
});

test('token hash is lower-case hex SHA-256 of the whole token', () => {
  // FIPS 180-2 test vector for "abc".
  assert.is(hashToken('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  const t = newToken('device');
  assert.match(hashToken(t), /^[0-9a-f]{64}$/);
  assert.is.not(hashToken(t), hashToken(t.replace('fsd_', 'fsu_')), 'the prefix is part of what is hashed');
});

test('activation codes: 16 Crockford base32 characters, read back as people type them', () => {
  const codes = Array.from({ length: 2000 }, newActivationCode);
  assert.is(new Set(codes).size, codes.length);
  for (const c of codes) assert.match(c, /^[0-9A-HJKMNP-TV-Z]{16}$/);
  assert.is(new Set(codes.join('')).size, 32);
  const code = '7KQ2M9XD3HFWPA6R';
  for (const typed of [code, code.toLowerCase(), '7KQ2-M9XD-3HFW-PA6R', '7kq2 m9xd 3hfw pa6r']) assert.is(normaliseActivationCode(typed), code, typed);
  assert.is(normaliseActivationCode('1IL0O0000000000A'), '111000000000000A', 'I/L read as 1, O as 0');
  for (const bad of ['', '7KQ2M9XD3HFWPA6', '7KQ2M9XD3HFWPA6RR', 'UKQ2M9XD3HFWPA6R', '7KQ2_M9XD3HFWPA6R', 'x'.repeat(65), 7, null]) {
    assert.is(normaliseActivationCode(bad), undefined, String(bad));
  }
});

test.run();
