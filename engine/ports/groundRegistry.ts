/**
 * Grounds port, a part of the registry (engine/ports/registry.ts): the roles of a ground's members
 * and the ground's own changes. The fleet port (fleetRegistry.ts) keeps creating grounds
 * and the plain membership calls; this one knows roles. SQL in adapters/sql-registry/groundRoles.ts;
 * contract in test/contracts/grounds.contract.ts.
 *
 * A ground always keeps at least one owner: removing or demoting its last owner is CONFLICT, decided
 * in the transaction that makes the change while the ground's row is locked, so two concurrent
 * demotions of its two owners cannot both pass (fleet's removeMember follows the same rule).
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing ground or user, CONFLICT for the last owner and for a ground that still has devices,
 * UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED after close().
 * Lookups answer undefined/[] for a malformed id without querying.
 */
import type { DeletedGround, GroundPatch, GroundRole, Member, MemberQuery } from '../../schemas/grounds.ts';
import type { Ground } from '../../schemas/registry.ts';

export type { DeletedGround, GroundPatch, GroundRole, Member, MemberQuery } from '../../schemas/grounds.ts';

export interface SetMember {
  member: Member;
  /** True when this call added the user, false when it was a member already. */
  created: boolean;
  /** False when the member already held that role (nothing was written). */
  changed: boolean;
}

export interface GroundRegistry {
  /** The role of the user in the ground; undefined when it is not a member. */
  memberRole(groundId: string, userId: string): Promise<GroundRole | undefined>;
  /** Members of a ground, in the order they joined (then user id); a page when `query` says so. */
  listMembers(groundId: string, query?: MemberQuery): Promise<Member[]>;
  /**
   * Adds the user with `role`, or gives a member that role. NOT_FOUND when the ground or the user
   * does not exist; CONFLICT when it would demote the ground's last owner.
   */
  setMemberRole(groundId: string, userId: string, role: GroundRole): Promise<SetMember>;
  /** Renames the ground. NOT_FOUND when missing. */
  updateGround(groundId: string, patch: GroundPatch): Promise<Ground>;
  /**
   * Deletes the ground with its memberships, integrations, rules and alarms. A ground that still has
   * devices is CONFLICT, unless `force`: then its devices go too, as deleteDevice deletes one (assets
   * with them, device tokens revoked), in the same transaction. Undefined when it did not exist.
   */
  deleteGround(groundId: string, options?: { force?: boolean }): Promise<DeletedGround | undefined>;
}
