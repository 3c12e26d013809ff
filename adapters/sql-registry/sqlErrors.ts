/**
 * Vendor errors → FleetErrors, through tables only (CONVENTIONS: retries read `retriable`, never
 * message text). PGlite and node-postgres both raise errors carrying the SQLSTATE in `code` and the
 * violated constraint in `constraint`; socket failures carry Node's errno `code`.
 */
import { FleetError, type ErrorCode } from '../../engine/kernel/errors.ts';

interface Mapping {
  code: ErrorCode;
  retriable?: boolean;
  message?: string;
  field?: string;
}

/** Named constraints of migrations.ts: what their violation means to a caller. */
const BY_CONSTRAINT: Record<string, Mapping> = {
  devices_ground_name_key: { code: 'CONFLICT', message: 'the ground already has a device of that name', field: 'name' },
  devices_network_dev_eui_key: { code: 'CONFLICT', message: 'another device is bound to that devEui on that network', field: 'network' },
  assets_device_name_key: { code: 'CONFLICT', message: 'the device already has an asset of that name', field: 'name' },
  devices_ground_id_fkey: { code: 'NOT_FOUND', message: 'ground not found', field: 'groundId' },
  assets_device_id_fkey: { code: 'NOT_FOUND', message: 'device not found', field: 'deviceId' },
  memberships_ground_id_fkey: { code: 'NOT_FOUND', message: 'ground not found', field: 'groundId' },
  memberships_user_id_fkey: { code: 'NOT_FOUND', message: 'user not found', field: 'userId' },
  device_types_partner_id_fkey: { code: 'NOT_FOUND', message: 'partner not found', field: 'partnerId' },
  activations_partner_id_fkey: { code: 'NOT_FOUND', message: 'partner not found', field: 'partnerId' },
  integrations_ground_id_fkey: { code: 'NOT_FOUND', message: 'ground not found', field: 'groundId' },
  ground_keys_ground_id_fkey: { code: 'NOT_FOUND', message: 'ground not found', field: 'groundId' },
  rules_ground_id_fkey: { code: 'NOT_FOUND', message: 'ground not found', field: 'groundId' },
  alarms_ground_id_fkey: { code: 'NOT_FOUND', message: 'ground not found', field: 'groundId' },
  rule_standings_rule_id_fkey: { code: 'NOT_FOUND', message: 'rule not found', field: 'ruleId' },
  activations_partner_hardware_key: { code: 'CONFLICT', message: 'the partner already has an activation for that hardware id', field: 'hardware.id' },
};

/** Exact SQLSTATEs (PostgreSQL Appendix A). */
const BY_SQLSTATE: Record<string, Mapping> = {
  '23505': { code: 'CONFLICT' }, // unique_violation
  '23503': { code: 'NOT_FOUND' }, // foreign_key_violation: a referenced row is missing
  '23502': { code: 'VALIDATION_FAILED' }, // not_null_violation
  '23514': { code: 'VALIDATION_FAILED' }, // check_violation
  '40001': { code: 'UNAVAILABLE', retriable: true }, // serialization_failure: retry the transaction
  '40P01': { code: 'UNAVAILABLE', retriable: true }, // deadlock_detected
  '55P03': { code: 'UNAVAILABLE', retriable: true }, // lock_not_available
  '57014': { code: 'TIMEOUT' }, // query_canceled (statement_timeout)
  '54000': { code: 'VALIDATION_FAILED' }, // program_limit_exceeded (e.g. an index row too large)
  // Raised by enforce_devices_quota (migration 15): one more device than the ground's quota.
  FSQ01: { code: 'QUOTA_EXCEEDED', message: 'the ground holds as many devices as its quota allows', field: 'devices' },
};

/** SQLSTATE classes (first two characters) when no exact code matched. */
const BY_CLASS: Record<string, Mapping> = {
  '08': { code: 'UNAVAILABLE' }, // connection exception
  '22': { code: 'VALIDATION_FAILED' }, // data exception (bad encoding, \u0000 in jsonb, out of range)
  '23': { code: 'CONFLICT' }, // integrity constraint violation
  '40': { code: 'UNAVAILABLE', retriable: true }, // transaction rollback
  '53': { code: 'UNAVAILABLE' }, // insufficient resources
  '57': { code: 'UNAVAILABLE' }, // operator intervention (admin shutdown, cannot connect now)
  '58': { code: 'UNAVAILABLE' }, // system error (I/O)
};

/** Node socket errors of a driver that cannot reach its server. */
const BY_ERRNO: Record<string, Mapping> = {
  ECONNREFUSED: { code: 'UNAVAILABLE' },
  ECONNRESET: { code: 'UNAVAILABLE' },
  ETIMEDOUT: { code: 'TIMEOUT' },
  EPIPE: { code: 'UNAVAILABLE' },
  ENOTFOUND: { code: 'UNAVAILABLE' },
  EAI_AGAIN: { code: 'UNAVAILABLE' },
  EHOSTUNREACH: { code: 'UNAVAILABLE' },
  ENETUNREACH: { code: 'UNAVAILABLE' },
};

function lookup(error: { code?: unknown; constraint?: unknown }): Mapping | undefined {
  const code = typeof error.code === 'string' ? error.code : undefined;
  const constraint = typeof error.constraint === 'string' ? error.constraint : undefined;
  if (constraint && code?.startsWith('23') && BY_CONSTRAINT[constraint]) return BY_CONSTRAINT[constraint];
  if (!code) return undefined;
  if (code.length === 5 && /^[0-9A-Z]{5}$/.test(code)) return BY_SQLSTATE[code] ?? BY_CLASS[code.slice(0, 2)];
  return BY_ERRNO[code];
}

/** Maps anything a SQL driver throws to a FleetError (FleetErrors pass through unchanged). */
export function mapSqlError(error: unknown): FleetError {
  if (error instanceof FleetError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; constraint?: unknown; message?: unknown };
  const mapping = lookup(e);
  const vendorMessage = typeof e.message === 'string' ? e.message : String(error);
  if (!mapping) return new FleetError('INTERNAL', `registry: ${vendorMessage}`, { cause: error });
  const detail: Record<string, unknown> = {};
  if (mapping.field) detail.field = mapping.field;
  if (typeof e.constraint === 'string') detail.constraint = e.constraint;
  if (typeof e.code === 'string') detail.vendorCode = e.code;
  return new FleetError(mapping.code, mapping.message ?? `registry: ${vendorMessage}`, {
    cause: error,
    ...(mapping.retriable === undefined ? {} : { retriable: mapping.retriable }),
    detail,
  });
}
