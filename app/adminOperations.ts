/**
 * The admin CLI's operations (spec-silent: how principals and grounds come to exist). One table
 * drives the command line, the running service's admin socket and the direct registry path, so the
 * three cannot drift apart.
 */
import * as admin from '../engine/admin/adminActions.ts';
import * as quotas from '../engine/admin/quotaActions.ts';
import { systemClock, type Clock } from '../engine/kernel/clock.ts';
import { FleetError, toFleetError } from '../engine/kernel/errors.ts';
import { isId } from '../engine/kernel/ids.ts';
import type { GroundRole, Registry } from '../engine/ports/registry.ts';
import { OPERATOR_PATTERN } from '../schemas/audit.ts';
import { GROUND_ROLES } from '../schemas/registry.ts';

/** What an operation may need besides the registry. */
export interface AdminContext {
  /** The HTTP edge's base URL as a person on this machine opens it (`http://localhost:8080`). */
  httpBase?: string;
  /** The embedded MQTT edge's URL (`mqtt://localhost:1883`): where the quickstart's demo device hears its commands. */
  mqttUrl?: string;
  /** Stamps audit entries. Default: the system clock. */
  clock?: Clock;
}

export interface AdminOperation {
  /** Positional arguments in order, then named options (`--user`). */
  args: readonly string[];
  options?: readonly string[];
  /** Arguments that may be left out, with their default. */
  defaults?: Readonly<Record<string, string>>;
  /** Options that may be left out with no default (the operation says which it needs). */
  optional?: readonly string[];
  usage: string;
  run(registry: Registry, input: Record<string, string>, context: AdminContext): Promise<Record<string, unknown>>;
  /**
   * A change of a ground, for its audit log (docs/grounds.md "Audit log"): the ground and the target,
   * from the input and, once it succeeded, the result. Absent: the operation changes no ground.
   */
  audit?(input: Record<string, string>, result?: Record<string, unknown>): { groundId: string; targetId?: string } | undefined;
}

export const adminOperations: Record<string, AdminOperation> = {
  'create-partner': {
    args: ['name'],
    usage: 'create-partner <name>',
    run: (registry, input) => admin.createPartner(registry, input.name) as Promise<unknown> as Promise<Record<string, unknown>>,
  },
  'create-user': {
    args: ['name'],
    usage: 'create-user <name>',
    run: (registry, input) => admin.createUser(registry, input.name) as Promise<unknown> as Promise<Record<string, unknown>>,
  },
  'create-ground': {
    args: ['name'],
    options: ['user', 'role'],
    defaults: { role: 'owner' },
    usage: 'create-ground <name> --user <userId> [--role owner|editor|viewer]   the user\'s role, owner by default',
    run: (registry, input) => admin.createGround(registry, input.name, input.user, groundRole(input.role)),
    audit: (_input, result) => (result === undefined ? undefined : { groundId: String(result.id), targetId: String(result.id) }),
  },
  'add-member': {
    args: ['groundId', 'userId'],
    options: ['role'],
    defaults: { role: 'editor' },
    usage: 'add-member <groundId> <userId> [--role owner|editor|viewer]   adds, or changes the role; editor by default',
    run: (registry, input) => admin.addMember(registry, input.groundId, input.userId, groundRole(input.role)),
    audit: (input) => ({ groundId: input.groundId, targetId: input.userId }),
  },
  quickstart: {
    args: ['name'],
    defaults: { name: 'demo' },
    usage: 'quickstart [name] [--demo]   a user, a ground and a demo device; --demo runs it: states sent, commands answered',
    run: async (registry, input, context) => {
      const created = await admin.quickstart(registry, input.name);
      // The token is printed apart from the link, never in it (URLs end up in histories and logs).
      return { ...created, ...(context.httpBase ? { console: `${context.httpBase}/console/` } : {}), ...(context.mqttUrl ? { mqtt: context.mqttUrl } : {}) };
    },
    audit: (_input, result) => (result === undefined ? undefined : { groundId: String(result.groundId), targetId: String(result.groundId) }),
  },
  'set-quota': {
    args: ['groundId'],
    options: ['devices', 'states-per-second', 'retention-days'],
    optional: ['devices', 'states-per-second', 'retention-days'],
    usage: 'set-quota <groundId> [--devices N] [--states-per-second N] [--retention-days N]   sets the limits given (none removes one)',
    run: async (registry, input) => ({ ...await quotas.setQuota(registry, input.groundId, {
      devices: input.devices, statesPerSecond: input['states-per-second'], retentionDays: input['retention-days'],
    }) }),
    audit: (input) => ({ groundId: input.groundId, targetId: input.groundId }),
  },
  'remove-quota': {
    args: ['groundId'],
    usage: 'remove-quota <groundId>   removes every limit of the ground',
    run: (registry, input) => quotas.removeQuota(registry, input.groundId),
    audit: (input) => ({ groundId: input.groundId, targetId: input.groundId }),
  },
  'show-quota': {
    args: ['groundId'],
    usage: 'show-quota <groundId>   the ground\'s limits (null: none)',
    run: async (registry, input) => ({ ...await quotas.showQuota(registry, input.groundId) }),
  },
  'revoke-token': {
    args: ['token'],
    usage: 'revoke-token <token>',
    run: (registry, input) => admin.revokeToken(registry, input.token),
  },
};

/** A role as typed on the command line (the registry refuses anything else with VALIDATION_FAILED too). */
function groundRole(text: string): GroundRole {
  if (!(GROUND_ROLES as readonly string[]).includes(text)) {
    throw new FleetError('VALIDATION_FAILED', `role: must be one of ${GROUND_ROLES.join(', ')}, not "${text}"`, { detail: { field: 'role' } });
  }
  return text as GroundRole;
}

/** Checks that every argument and option of `name` is present and a string. */
export function checkAdminInput(name: string, input: unknown): { operation: AdminOperation; input: Record<string, string> } {
  const operation = Object.hasOwn(adminOperations, name) ? adminOperations[name] : undefined;
  if (operation === undefined) {
    throw new FleetError('NOT_FOUND', `unknown admin command '${name}'; commands: ${Object.keys(adminOperations).join(', ')}`);
  }
  if (input === null || typeof input !== 'object') throw new FleetError('BAD_REQUEST', 'admin input must be an object');
  const values = input as Record<string, unknown>;
  const checked: Record<string, string> = {};
  for (const key of [...operation.args, ...(operation.options ?? [])]) {
    const value = values[key] ?? operation.defaults?.[key];
    if (value === undefined && operation.optional?.includes(key)) continue;
    if (typeof value !== 'string' || value.length === 0) {
      throw new FleetError('VALIDATION_FAILED', `missing ${key}: usage: fleetstream admin ${operation.usage}`, { detail: { field: key } });
    }
    checked[key] = value;
  }
  return { operation, input: checked };
}

/** `name` as an operator id of the audit log: an OS login name, else `unknown` (the CLI's user is told, not trusted). */
export function operatorName(name: string | undefined): string {
  return name !== undefined && new RegExp(OPERATOR_PATTERN).test(name) ? name : 'unknown';
}

/**
 * Runs a checked operation as `operator` (the OS user who ran the CLI) and records a change of a
 * ground in its audit log, refused ones included (a ground that exists only: a mistyped id writes
 * nothing). A failure to record is told to `onAuditError`; the change stands.
 */
export async function runAdminOperation(
  registry: Registry, name: string, checked: { operation: AdminOperation; input: Record<string, string> }, context: AdminContext,
  operator: string, onAuditError: (error: FleetError) => void = () => undefined,
): Promise<Record<string, unknown>> {
  const { operation, input } = checked;
  const record = async (result: { status: number; code?: string }, output?: Record<string, unknown>) => {
    const target = operation.audit?.(input, output);
    if (target === undefined || !isId(target.groundId)) return;
    if (result.status >= 400 && (await registry.getGround(target.groundId)) === undefined) return;
    await registry.recordAudit([{
      groundId: target.groundId,
      at: (context.clock ?? systemClock).now(),
      actor: { kind: 'operator', id: operatorName(operator) },
      operation: name,
      ...(target.targetId !== undefined && isId(target.targetId) ? { targetId: target.targetId } : {}),
      result,
    }]).catch((error: unknown) => onAuditError(toFleetError(error)));
  };
  let output: Record<string, unknown>;
  try {
    output = await operation.run(registry, input, context);
  } catch (error) {
    const e = toFleetError(error);
    await record({ status: e.status, code: e.code }).catch(() => undefined);
    throw error;
  }
  await record({ status: 200 }, output);
  return output;
}
