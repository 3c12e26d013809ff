/**
 * A resource of a ground (an integration, a rule, an alarm) found by id for a user or a ground's key:
 * it exists only for members of its ground (a key: its own ground). For anyone else it is NOT_FOUND, as an unknown id, so ids of other
 * grounds' resources cannot be probed; a device or partner token is FORBIDDEN, and so is a
 * member whose role is below `needed` (it knows the resource exists: it may read it).
 * A change is noted for the audit log with the resource as its target (auditNote.ts).
 */
import { FleetError, isFleetError } from '../../../engine/kernel/errors.ts';
import { requireMemberToken } from '../../../engine/access/groundRoles.ts';
import type { GroundRole, Principal } from '../../../engine/ports/registry.ts';
import { noteTarget } from '../auditNote.ts';
import type { EdgeContext } from '../EdgeContext.ts';

export async function memberResource<T extends { groundId: string }>(
  edge: EdgeContext, principal: Principal, kind: string, id: string, lookup: (id: string) => Promise<T | undefined>, needed: GroundRole,
): Promise<T> {
  requireMemberToken(principal, `manage ${kind}s`);
  const resource = await lookup(id);
  const notFound = new FleetError('NOT_FOUND', `${kind} ${id} not found`);
  if (resource === undefined) throw notFound;
  // A member's change of it, or its refusal by role, is recorded against it (a stranger's is not).
  noteTarget(id);
  try {
    await edge.access.ground(principal, resource.groundId, needed);
  } catch (error) {
    const byRole = isFleetError(error) && error.detail?.requiredRole !== undefined;
    if (isFleetError(error) && !byRole && (error.code === 'FORBIDDEN' || error.code === 'NOT_FOUND')) throw notFound;
    throw error;
  }
  return resource;
}
