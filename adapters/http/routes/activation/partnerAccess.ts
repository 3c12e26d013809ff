/**
 * Who may use the activation edge (DESIGN.md §5): a partner token reaches only its own partner's
 * device types and activations (`/partner/{partner}/…` with its own id); users redeem codes; device
 * tokens reach none of it. A partner token naming another partner gets 403 without any lookup, so
 * nothing about the other partner is revealed.
 */
import { FleetError, isFleetError } from '../../../../engine/kernel/errors.ts';
import type { Principal } from '../../../../engine/ports/registry.ts';

export function requirePartner(principal: Principal, partnerId: string): void {
  if (principal.scope !== 'partner') throw new FleetError('FORBIDDEN', `a ${principal.scope} token cannot manage device types or activations; use a partner token`);
  if (principal.subjectId !== partnerId) throw new FleetError('FORBIDDEN', 'a partner token reaches only its own device types and activations');
}

export function requireUser(principal: Principal): void {
  if (principal.scope !== 'user') throw new FleetError('FORBIDDEN', `a ${principal.scope} token cannot activate devices; use a user token`);
}

/**
 * Runs a registry call and names the failing field the way the edge does (`errors: [{path,
 * message}]`): the registry's `detail.field` is relative to what it was given, `where` says where
 * that was in the request (`body.options.0.device.type`, `path.code`), or undefined to leave it.
 */
export async function namingFields<T>(call: Promise<T>, where: (field: string) => string | undefined): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (!isFleetError(error)) throw error;
    const field = error.detail?.field;
    if (typeof field !== 'string' || Array.isArray(error.detail?.errors)) throw error;
    const path = where(field);
    if (path === undefined) throw error;
    const message = error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message;
    throw new FleetError(error.code, `${path}: ${message}`, {
      cause: error,
      retriable: error.retriable,
      detail: { ...error.detail, field: path, errors: [{ path, message }] },
    });
  }
}
