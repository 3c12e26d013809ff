/**
 * A ground's audit log (docs/grounds.md "Audit log"): every change made to a ground through HTTP
 * or the admin CLI, who made it, when, the operation, its target and its result. Types of
 * engine/ports/auditLog.ts derive from these; the edge answers GET /ground/{id}/audit with them.
 */
import Type, { type Static } from 'typebox';
import { PageLimit, pageCursor } from './page.ts';
import { EpochMs, Id } from './registry.ts';

export const AUDIT_ACTOR_KINDS = ['user', 'key', 'operator'] as const;

/**
 * A user or a key by its registry id; an operator by the name of the OS user that ran the admin
 * CLI (letters, digits and `._@-`, at most 64: what a login name is; anything else is stored as
 * the CLI's `unknown`).
 */
export const OPERATOR_PATTERN = '^[A-Za-z0-9._@-]{1,64}$';

export const AuditActor = Type.Union([
  Type.Object({ kind: Type.Union([Type.Literal('user'), Type.Literal('key')]), id: Id }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('operator'), id: Type.String({ pattern: OPERATOR_PATTERN }) }, { additionalProperties: false }),
]);
export type AuditActor = Static<typeof AuditActor>;

/** HTTP: the operationId of /openapi.json (`putMember`, `putDeviceCommand_post`); the admin CLI: its command (`add-member`). */
export const AuditOperation = Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$' });

/** `code`: the problem's stable code when the change was refused or failed. */
export const AuditResult = Type.Object({
  status: Type.Integer({ minimum: 100, maximum: 599 }),
  code: Type.Optional(Type.String({ pattern: '^[A-Z][A-Z_]{0,63}$' })),
}, { additionalProperties: false });
export type AuditResult = Static<typeof AuditResult>;

/** One change as it is recorded: `targetId` is what it changed (a device, a member, a key…). */
export const AuditEntry = Type.Object({
  groundId: Id,
  at: EpochMs,
  actor: AuditActor,
  operation: AuditOperation,
  targetId: Type.Optional(Id),
  result: AuditResult,
}, { additionalProperties: false });
export type AuditEntry = Static<typeof AuditEntry>;

/** As listed: `seq` orders entries of the same millisecond (the registry's, increasing). */
export const ListedAuditEntry = Type.Object({ ...AuditEntry.properties, seq: Type.Integer({ minimum: 1 }) });
export type ListedAuditEntry = Static<typeof ListedAuditEntry>;

export const AuditQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1001 })),
  /** Only entries older than this one in the order (at, then seq), newest first. */
  before: Type.Optional(Type.Object({ at: EpochMs, seq: Type.Integer({ minimum: 1 }) }, { additionalProperties: false })),
}, { additionalProperties: false });
export type AuditQuery = Static<typeof AuditQuery>;

// ---- HTTP ----

export const AuditListQuery = Type.Object({ limit: PageLimit, before: pageCursor(64) }, { additionalProperties: false });
export type AuditListQuery = Static<typeof AuditListQuery>;

/** A page, newest first; `next` is the `before` of the following page, absent on the last one. */
export const AuditPage = Type.Object({
  items: Type.Array(Type.Object({ ...AuditEntry.properties })),
  next: Type.Optional(Type.String({ description: 'pass as `before` for the following (older) page; absent on the last one' })),
});
export type AuditPage = Static<typeof AuditPage>;
