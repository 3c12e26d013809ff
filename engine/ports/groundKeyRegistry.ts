/**
 * Ground keys port, a part of the registry (engine/ports/registry.ts): a ground's API keys. A key is
 * a bearer token (`fsk_…`, engine/access/tokens.ts) that reaches one ground with the role viewer or
 * editor (never owner) until it is revoked or its `expiresAt` passes; the principals port's
 * `authenticate` answers its grant (Principal.key) and nothing for a revoked or expired key. The
 * token is stored hashed in the tokens table, as every token, so revoking a key is a token
 * revocation (`token-revoked`, announced by the tokens table's trigger on PostgreSQL). Deleting a
 * ground revokes its keys (DeletedGround.keyTokenHashes). SQL in adapters/sql-registry/groundKeys.ts;
 * contract in test/contracts/groundKeys.contract.ts.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it: name, role,
 * expiresAt — past or malformed —, groundId, createdBy), NOT_FOUND for a missing ground or user,
 * UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED after close().
 * Lookups answer undefined/[] for a malformed id without querying.
 */
import type { GroundKey, KeyQuery, NewGroundKey } from '../../schemas/groundKeys.ts';

export type { GroundKey, KeyQuery, NewGroundKey } from '../../schemas/groundKeys.ts';

/** A created key and its token: the token is returned once and never stored in clear. */
export interface CreatedGroundKey {
  key: GroundKey;
  token: string;
}

/** A revoked key and the hash of its token (the `token-revoked` change to publish). */
export interface RevokedGroundKey {
  key: GroundKey;
  tokenHash: string;
}

export interface GroundKeyRegistry {
  /** A key of the ground, made by `createdBy` (a user). NOT_FOUND when the ground or the user is missing. */
  createKey(groundId: string, input: NewGroundKey, createdBy: string): Promise<CreatedGroundKey>;
  /** The ground's live keys (revoked ones are gone; expired ones stay until revoked), oldest first, by pages. */
  listKeys(groundId: string, query?: KeyQuery): Promise<GroundKey[]>;
  /** A key of the ground; undefined when it is not one (another ground's key included). */
  getKey(groundId: string, keyId: string): Promise<GroundKey | undefined>;
  /** Revokes the key and its token; undefined when the ground has no such key. */
  revokeKey(groundId: string, keyId: string): Promise<RevokedGroundKey | undefined>;
}
