/**
 * Bearer tokens (DESIGN.md §5). A token is a scope prefix plus 43 random base62 characters
 * (~256 bits): `fsd_…` device, `fsu_…` user, `fsp_…` partner, `fsk_…` a ground's API key. The prefix lets a leaked token be
 * recognised (secret scanners, logs) and lets the edge reject a token of the wrong kind before
 * any lookup.
 *
 * Only SHA-256(token) is stored. A slow password hash (bcrypt, scrypt, argon2) exists to make
 * guessing low-entropy human passwords expensive; these tokens are 256 random bits, so no amount
 * of hashing speed helps an attacker who holds the hash table, and no salt is needed because
 * there is no dictionary to precompute. A fast hash keeps authentication of every uplink an index
 * probe on the hash instead of a deliberate CPU cost per request.
 */
import { createHash } from 'node:crypto';
import type { TokenScope } from '../../schemas/registry.ts';
import { randomBase62 } from '../kernel/ids.ts';

export const TOKEN_PREFIXES = { device: 'fsd_', user: 'fsu_', partner: 'fsp_', key: 'fsk_' } as const satisfies Record<TokenScope, string>;

const SECRET_LENGTH = 43;
const TOKEN_RE = /^fs([dupk])_[0-9A-Za-z]{43}$/;
const SCOPE_BY_LETTER: Record<string, TokenScope> = { d: 'device', u: 'user', p: 'partner', k: 'key' };

export function newToken(scope: TokenScope): string {
  return TOKEN_PREFIXES[scope] + randomBase62(SECRET_LENGTH);
}

/** The scope a well-formed token claims, or undefined when the string is not a token. */
export function tokenScope(token: unknown): TokenScope | undefined {
  if (typeof token !== 'string') return undefined;
  const match = TOKEN_RE.exec(token);
  return match ? SCOPE_BY_LETTER[match[1]] : undefined;
}

/** Lower-case hex SHA-256 of the token: the only form the registry stores. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
