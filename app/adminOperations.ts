/**
 * The admin CLI's operations (spec-silent: how principals and grounds come to exist). One table
 * drives the command line, the running service's admin socket and the direct registry path, so the
 * three cannot drift apart.
 */
import * as admin from '../engine/admin/adminActions.ts';
import * as quotas from '../engine/admin/quotaActions.ts';
import { FleetError } from '../engine/kernel/errors.ts';
import type { GroundRole, Registry } from '../engine/ports/registry.ts';
import { GROUND_ROLES } from '../schemas/registry.ts';

/** What an operation may need besides the registry. */
export interface AdminContext {
  /** The HTTP edge's base URL as a person on this machine opens it (`http://localhost:8080`). */
  httpBase?: string;
  /** The embedded MQTT edge's URL (`mqtt://localhost:1883`): where the quickstart's demo device hears its commands. */
  mqttUrl?: string;
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
  },
  'add-member': {
    args: ['groundId', 'userId'],
    options: ['role'],
    defaults: { role: 'editor' },
    usage: 'add-member <groundId> <userId> [--role owner|editor|viewer]   adds, or changes the role; editor by default',
    run: (registry, input) => admin.addMember(registry, input.groundId, input.userId, groundRole(input.role)),
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
  },
  'set-quota': {
    args: ['groundId'],
    options: ['devices', 'states-per-second', 'retention-days'],
    optional: ['devices', 'states-per-second', 'retention-days'],
    usage: 'set-quota <groundId> [--devices N] [--states-per-second N] [--retention-days N]   sets the limits given (none removes one)',
    run: async (registry, input) => ({ ...await quotas.setQuota(registry, input.groundId, {
      devices: input.devices, statesPerSecond: input['states-per-second'], retentionDays: input['retention-days'],
    }) }),
  },
  'remove-quota': {
    args: ['groundId'],
    usage: 'remove-quota <groundId>   removes every limit of the ground',
    run: (registry, input) => quotas.removeQuota(registry, input.groundId),
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
