/**
 * What a change request tells the audit log (docs/grounds.md "Audit log"), noted as the request is
 * handled and recorded by EdgeRouter once it is answered: who (EdgeAccess, from the token: a user
 * or a ground's key), which ground (EdgeAccess, once the caller is known to be a member of it: a
 * stranger's refusal writes nothing into a ground's log) and which target (EdgeAccess's default,
 * or a route's noteTarget, e.g. the id of what it created).
 *
 * Kept per request in an AsyncLocalStorage, so the handlers and EdgeAccess, which many callers
 * share, need no extra parameter; outside a change request (reads, live streams) noting does
 * nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AuditActor } from '../../engine/ports/auditLog.ts';
import type { Principal } from '../../engine/ports/registry.ts';

export interface AuditNote {
  actor?: AuditActor;
  groundId?: string;
  targetId?: string;
}

const notes = new AsyncLocalStorage<AuditNote>();

/** Runs `fn` with `note` as the request's note. */
export function withAuditNote<T>(note: AuditNote, fn: () => T): T {
  return notes.run(note, fn);
}

/** The caller: users and keys are recorded; a device or partner token changes no ground's settings. */
export function noteActor(principal: Principal): void {
  const note = notes.getStore();
  if (note === undefined) return;
  if (principal.scope === 'user' || principal.scope === 'key') note.actor = { kind: principal.scope, id: principal.subjectId };
}

/** The caller is a member of `groundId` (whatever its role): the change is the ground's to record. */
export function noteGround(groundId: string, defaultTarget?: string): void {
  const note = notes.getStore();
  if (note === undefined) return;
  note.groundId = groundId;
  if (defaultTarget !== undefined) note.targetId ??= defaultTarget;
}

/** What the change is about, when it is not what access checked (an id just created, a member). */
export function noteTarget(id: string): void {
  const note = notes.getStore();
  if (note !== undefined) note.targetId = id;
}
