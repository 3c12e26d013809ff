/**
 * Principals port, a part of the registry (engine/ports/registry.ts): partners, users and their
 * bearer tokens. SQL in adapters/sql-registry/principals.ts; contract in test/contracts/principals.contract.ts.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing referenced entity, CONFLICT for a duplicate, UNAVAILABLE/TIMEOUT (retriable) when
 * the database cannot be reached, CLOSED after close() (engine/ports/registry.ts).
 */
import type { Partner, Principal, TokenScope, User } from '../../schemas/registry.ts';

/** A created principal and its bearer token. The plaintext token is returned once and never stored. */
export interface WithToken<T> {
  entity: T;
  token: string;
}

export interface PrincipalRegistry {
  // ---- principals ----
  /** Creates a partner and its first partner token (`fsp_…`). */
  createPartner(input: { name: string }): Promise<WithToken<Partner>>;
  getPartner(partnerId: string): Promise<Partner | undefined>;
  /** Creates a user and its first user token (`fsu_…`). */
  createUser(input: { name: string }): Promise<WithToken<User>>;
  getUser(userId: string): Promise<User | undefined>;

  // ---- tokens ----
  /** Who the token speaks for; undefined for an unknown, malformed or revoked token. */
  authenticate(token: string): Promise<Principal | undefined>;
  /** Issues an additional token for an existing subject (rotation). NOT_FOUND when the subject is missing. */
  issueToken(scope: TokenScope, subjectId: string): Promise<string>;
  /** True when the token existed and was not revoked before. */
  revokeToken(token: string): Promise<boolean>;
}
