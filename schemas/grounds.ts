/**
 * Grounds as teams: the role each member holds, the ground's own changes, and the HTTP
 * bodies of `/grounds`, `/ground/{groundId}` and `/ground/{groundId}/members`. Types of
 * engine/ports/groundRegistry.ts derive from these; the edge validates requests with the same ones.
 */
import Type, { type Static } from 'typebox';
import { Page, PageLimit, pageCursor } from './page.ts';
import { EntityName, EpochMs, Ground, GroundRole, Id } from './registry.ts';

export { GROUND_ROLES, GroundRole } from './registry.ts';

/** A member of a ground: the user, its name and its role; `createdAt` is when it joined. */
export const Member = Type.Object({ userId: Id, name: EntityName, role: GroundRole, createdAt: EpochMs });
export type Member = Static<typeof Member>;

export const MemberQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1001 })),
  /** Only members after this one in the order (joined, then user id). */
  after: Type.Optional(Type.Object({ createdAt: EpochMs, id: Id })),
});
export type MemberQuery = Static<typeof MemberQuery>;

export const GroundPatch = Type.Object({ name: Type.Optional(EntityName) }, { additionalProperties: false });
export type GroundPatch = Static<typeof GroundPatch>;

/** What deleting a ground removed with it, so that caches and open connections can follow. */
export interface DeletedGround {
  deviceIds: string[];
  memberIds: string[];
  integrationIds: string[];
  ruleIds: string[];
  /** Hashes of the tokens of the ground's API keys, revoked with it. */
  keyTokenHashes: string[];
}

// ---- HTTP ----

export const GroundCreateBody = Type.Object({ name: EntityName }, { additionalProperties: false });
export type GroundCreateBody = Static<typeof GroundCreateBody>;

export const GroundPatchBody = GroundPatch;
export type GroundPatchBody = GroundPatch;

/** A ground as its member sees it: with the role the caller holds in it. */
export const GroundView = Type.Object({ ...Ground.properties, role: GroundRole });
export type GroundView = Static<typeof GroundView>;

export const GroundDeleteQuery = Type.Object({
  force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'true: delete the ground\'s devices with it' })),
}, { additionalProperties: false });
export type GroundDeleteQuery = Static<typeof GroundDeleteQuery>;

export const MemberParams = Type.Object({ groundId: Id, userId: Id });
export const MemberPutBody = Type.Object({ role: GroundRole }, { additionalProperties: false });
export type MemberPutBody = Static<typeof MemberPutBody>;

export const MemberListQuery = Type.Object({ limit: PageLimit, cursor: pageCursor(128) }, { additionalProperties: false });
export type MemberListQuery = Static<typeof MemberListQuery>;
export const MemberPage = Page(Member);
