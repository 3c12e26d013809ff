/**
 * What each role of a ground's members allows, decided here and nowhere else: the HTTP
 * edge (adapters/http/EdgeAccess.ts) asks `requireRole` with the role a route needs, the live
 * streams and the MQTT feeds need `viewer` (membership). Each role includes the ones below it:
 *   viewer  reads devices, assets, states, history, aggregates, rejections, commands, alarms, rules
 *           and integrations (never their secrets), and follows live streams and MQTT feeds;
 *   editor  also creates, changes and deletes devices, assets, rules and integrations, sends states
 *           and commands, acknowledges and clears alarms, activates devices into the ground;
 *   owner   also manages the members and the ground itself.
 * Device and partner tokens have no role: their rights are the token's (EdgeAccess.ts). A ground's
 * API key holds its role (viewer or editor) in its one ground (RegistryLookups.roleIn).
 */
import { FleetError } from '../kernel/errors.ts';
import type { GroundRole, Principal } from '../ports/registry.ts';

const RANK: Readonly<Record<GroundRole, number>> = { viewer: 0, editor: 1, owner: 2 };

/** Whether a member holding `held` may do what needs `needed`. */
export function roleAllows(held: GroundRole, needed: GroundRole): boolean {
  return RANK[held] >= RANK[needed];
}

/** FORBIDDEN naming the role needed (`requiredRole` in the problem) unless `held` allows `needed`. */
export function requireRole(held: GroundRole, needed: GroundRole): void {
  if (roleAllows(held, needed)) return;
  throw new FleetError('FORBIDDEN', `needs the ${needed} role in this ground; the token's user is ${held === 'editor' ? 'an' : 'a'} ${held}`, {
    detail: { requiredRole: needed, role: held },
  });
}

/** Whether the token acts in grounds by a role: a user's, or a ground's API key. */
export function actsByRole(principal: Principal): boolean {
  return principal.scope === 'user' || principal.scope === 'key';
}

/** FORBIDDEN for a device or partner token on a route of grounds' members (`what` it cannot do). */
export function requireMemberToken(principal: Principal, what: string): void {
  if (!actsByRole(principal)) throw new FleetError('FORBIDDEN', `a ${principal.scope} token cannot ${what}`);
}

/** Who did it, as records name it (a command's issuer): `user:<id>` or `key:<id>`. */
export function actorOf(principal: Principal): string {
  return `${principal.scope}:${principal.subjectId}`;
}
