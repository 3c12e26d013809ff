/**
 * Activations over SQL (spec §2.5–2.8, §4.5–4.7): create, read, list, change, delete and redeem.
 * Every change of an existing activation locks its row, asks the lifecycle machine
 * (engine/activation/activationMachine.ts) whether the event is allowed in its status, and performs the
 * effect in the same transaction: redeeming creates the device as createDevice would and marks the
 * code used, or nothing happens.
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import { decideActivation } from '../../engine/activation/activationMachine.ts';
import { newActivationCode, normaliseActivationCode } from '../../engine/activation/activationCodes.ts';
import { requireRole } from '../../engine/access/groundRoles.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import { networks } from '../../engine/activation/networks.ts';
import type { ActivateRequest, Activated, Activation, ActivationPatch, NewActivation, NewActivationOption, ActivationRegistry, GroundRole, TokenScope } from '../../engine/ports/registry.ts';
import * as S from '../../schemas/registry.ts';
import { insertDevice, prepareDevice, prepareNetwork } from './createDevice.ts';
import { parseRef, resolveIn, resolveOptionTypes } from './deviceTypes.ts';
import type { SqlExecutor, SqlQueryable } from './executor.ts';
import { canonical, canonicalFields, canonicalLookup, check } from './validate.ts';

type ActivationOperations = ActivationRegistry;

export interface ActivationDeps {
  executor: SqlExecutor;
  clock: Clock;
  /** Runs `fn` when the registry is open, mapping driver errors. */
  guard<T>(fn: () => Promise<T>): Promise<T>;
  insertToken(tx: SqlQueryable, scope: TokenScope, subjectId: string): Promise<string>;
}

const DEFAULT_PAGE = 100;

function invalid(field: string, message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `${field}: ${message}`, { detail: { field } });
}

function requirePartner(partnerId: unknown): asserts partnerId is string {
  if (!isId(partnerId)) throw invalid('partnerId', 'not a registry id');
}

function notFound(): FleetError {
  return new FleetError('NOT_FOUND', 'activation code not found', { detail: { field: 'code' } });
}

/** Options checked before any query: the network through the networks table, the type reference parsed. */
function prepareOptions(options: readonly NewActivationOption[]) {
  return options.map((option, i) => {
    const network = networks.normalise(option.network, `options.${i}.network`);
    return {
      description: option.description ?? '',
      ref: parseRef(option.device.type)!,
      field: `options.${i}.device.type`,
      networkId: network.networkId,
      data: prepareNetwork(network, `options.${i}.network`).data,
    };
  });
}

/** Canonical text of a request (validate.ts): the hardware id is a name, descriptions are text. */
function canonicalOptions<T>(options: T): T {
  return Array.isArray(options) ? options.map((o, i) => canonicalFields(o, { description: 'text' }, `options.${i}.`)) as T : options;
}

function canonicalActivation(input: NewActivation): NewActivation {
  const out = canonicalFields(input, { description: 'text' });
  if (typeof out !== 'object' || out === null) return out;
  const hardware = typeof out.hardware === 'object' && out.hardware !== null
    ? { ...out.hardware, id: canonical(out.hardware.id, 'hardware.id') }
    : out.hardware;
  return { ...out, hardware, options: canonicalOptions(out.options) };
}

function canonicalPatch(patch: ActivationPatch): ActivationPatch {
  const out = canonicalFields(patch, { description: 'text' });
  return typeof out === 'object' && out !== null && out.options !== undefined ? { ...out, options: canonicalOptions(out.options) } : out;
}

type PreparedOption = ReturnType<typeof prepareOptions>[number];

async function insertOptions(tx: SqlQueryable, clock: Clock, partnerId: string, code: string, options: readonly PreparedOption[]): Promise<void> {
  const types = await resolveOptionTypes(tx, clock, partnerId, options);
  for (const [position, option] of options.entries()) {
    await tx.query(
      `INSERT INTO activation_options (id, activation_code, position, description, device_type_id, type_version, network_id, network_data)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)`,
      [newId(), code, position, option.description, types[position].typeId, types[position].version, option.networkId, option.data],
    );
  }
}

const ACTIVATION_SELECT = `SELECT a.code, a.partner_id, a.description, a.hardware_id, a.status, a.activated_device_id, a.activated_option_id, a.created_at,
  COALESCE((SELECT json_agg(json_build_object('id', o.id, 'description', o.description, 'type', t.partner_id || '/' || t.name || ':' || o.type_version,
              'network_id', o.network_id, 'network_data', o.network_data) ORDER BY o.position)
            FROM activation_options o JOIN device_types t ON t.id = o.device_type_id WHERE o.activation_code = a.code), '[]'::json) AS options
  FROM activations a`;

interface ActivationRow {
  code: string;
  partner_id: string;
  description: string;
  hardware_id: string;
  status: 'unused' | 'used';
  activated_device_id: string | null;
  activated_option_id: string | null;
  created_at: unknown;
  options: unknown;
}

function toActivation(row: ActivationRow): Activation {
  const options = (typeof row.options === 'string' ? JSON.parse(row.options) : row.options) as Array<{ id: string; description: string; type: string; network_id: string; network_data: Record<string, unknown> }>;
  return {
    code: row.code,
    partnerId: row.partner_id,
    description: row.description,
    status: row.status,
    activatedDeviceId: row.activated_device_id,
    activatedOptionId: row.activated_option_id,
    hardware: { id: row.hardware_id },
    options: options.map((o) => ({ id: o.id, description: o.description, device: { type: o.type }, network: { networkId: o.network_id, data: o.network_data } })),
    createdAt: Number(row.created_at),
  };
}

async function loadActivation(q: SqlQueryable, where: string, params: unknown[]): Promise<Activation | undefined> {
  const { rows } = await q.query<ActivationRow>(`${ACTIVATION_SELECT} WHERE ${where}`, params);
  return rows[0] ? toActivation(rows[0]) : undefined;
}

/** The partner's activation row, locked for the rest of the transaction; NOT_FOUND otherwise. */
async function lockActivation(tx: SqlQueryable, partnerId: string, code: string): Promise<{ status: 'unused' | 'used' }> {
  const { rows } = await tx.query<{ status: 'unused' | 'used' }>('SELECT status FROM activations WHERE partner_id = $1 AND code = $2 FOR UPDATE', [partnerId, code]);
  if (!rows[0]) throw notFound();
  return rows[0];
}

export function activationOperations(deps: ActivationDeps): ActivationOperations {
  const { executor, clock, guard } = deps;

  return {
    async createActivation(partnerId, raw) {
      requirePartner(partnerId);
      const input = canonicalActivation(raw);
      check(S.NewActivation, input, '');
      const options = prepareOptions(input.options);
      return guard(() =>
        executor.transaction((tx) => insertActivation(tx, clock, partnerId, input, options)),
      );
    },

    async getActivation(partnerId, code) {
      const canonical = normaliseActivationCode(code);
      if (!isId(partnerId) || !canonical) return undefined;
      return guard(() => loadActivation(executor, 'a.partner_id = $1 AND a.code = $2', [partnerId, canonical]));
    },

    async findUnusedActivation(code) {
      const canonical = normaliseActivationCode(code);
      if (!canonical) return undefined;
      return guard(() => loadActivation(executor, "a.code = $1 AND a.status = 'unused'", [canonical]));
    },

    async findActivationByHardware(partnerId, rawHardwareId) {
      const hardwareId = canonicalLookup(rawHardwareId);
      if (!isId(partnerId) || typeof hardwareId !== 'string' || hardwareId.length === 0 || hardwareId.length > 128) return undefined;
      return guard(() => loadActivation(executor, 'a.partner_id = $1 AND a.hardware_id = $2', [partnerId, hardwareId]));
    },

    async listActivations(partnerId, rawQuery) {
      requirePartner(partnerId);
      const query = rawQuery === undefined ? undefined : canonicalFields(rawQuery, { hardwareId: 'name' }, '');
      check(S.ActivationQuery, query ?? {}, '');
      const { status, hardwareId, after } = query ?? {};
      return guard(() => selectActivations(executor, partnerId, status, hardwareId, after, query?.limit));
    },

    async updateActivation(partnerId, code, rawPatch) {
      requirePartner(partnerId);
      const canonical = normaliseActivationCode(code);
      const patch = canonicalPatch(rawPatch);
      check(S.ActivationPatch, patch, '');
      const options = patch.options === undefined ? undefined : prepareOptions(patch.options);
      if (!canonical) throw notFound();
      return guard(() =>
        executor.transaction((tx) => changeActivation(tx, clock, partnerId, canonical, patch.description, options)),
      );
    },

    async deleteActivation(partnerId, code) {
      const canonical = normaliseActivationCode(code);
      if (!isId(partnerId) || !canonical) return false;
      return guard(() =>
        executor.transaction(async (tx) => {
          const { rows } = await tx.query<{ status: 'unused' | 'used' }>('SELECT status FROM activations WHERE partner_id = $1 AND code = $2 FOR UPDATE', [partnerId, canonical]);
          if (!rows[0]) return false;
          decideActivation(rows[0].status, 'DELETE');
          await tx.query('DELETE FROM activations WHERE code = $1', [canonical]);
          return true;
        }),
      );
    },

    async activate(request): Promise<Activated> {
      check(S.ActivateRequest, request, '');
      const code = normaliseActivationCode(request.code);
      if (!code) throw notFound();
      return guard(() => executor.transaction((tx) => redeem(tx, request, code, deps)));
    },
  };
}

/**
 * Redeems an unused code in the caller's transaction (spec §4.6): the user must be an editor or
 * owner of the ground; the option's device type version is resolved now; the device is created from it and the
 * activation becomes `used`.
 */
async function redeem(tx: SqlQueryable, request: ActivateRequest, code: string, deps: ActivationDeps): Promise<Activated> {
    if ((request.userId === undefined) === (request.keyId === undefined)) throw new FleetError('VALIDATION_FAILED', 'name exactly one of userId and keyId', { detail: { field: 'userId' } });
    const member = request.keyId === undefined
      ? await tx.query<{ role: GroundRole }>('SELECT role FROM memberships WHERE ground_id = $1 AND user_id = $2', [request.groundId, request.userId])
      : await tx.query<{ role: GroundRole }>('SELECT role FROM ground_keys WHERE ground_id = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > $3)', [request.groundId, request.keyId, deps.clock.now()]);
    if (member.rows.length === 0) throw new FleetError('FORBIDDEN', `the ${request.keyId === undefined ? 'user is not a member' : 'key is not a key'} of that ground`, { detail: { field: 'groundId' } });
    // Activating a device into a ground changes it: an editor's right (engine/access/groundRoles.ts).
    requireRole(member.rows[0].role, 'editor');
    // FOR UPDATE: of two concurrent redemptions the second waits, then sees `used`.
    const locked = await tx.query<{ status: 'unused' | 'used'; description: string; hardware_id: string }>(
      'SELECT status, description, hardware_id FROM activations WHERE code = $1 FOR UPDATE',
      [code],
    );
    const activation = locked.rows[0];
    if (!activation) throw notFound();
    decideActivation(activation.status, 'ACTIVATE');
    const { rows } = await tx.query<{ partner_id: string; name: string; type_version: string; network_id: string; network_data: unknown }>(
      `SELECT t.partner_id, t.name, o.type_version, o.network_id, o.network_data
       FROM activation_options o JOIN device_types t ON t.id = o.device_type_id WHERE o.id = $1 AND o.activation_code = $2`,
      [request.option, code],
    );
    const option = rows[0];
    if (!option) throw invalid('option', 'not an option of this activation');
    const version = await resolveIn(tx, { partnerId: option.partner_id, name: option.name, version: option.type_version === 'latest' ? 'latest' : Number(option.type_version) });
    // Versions are never deleted and an option's type was published when it was stored.
    if (!version) throw new FleetError('INTERNAL', `device type ${option.name}:${option.type_version} of option ${request.option} is not published`);
    const data = (typeof option.network_data === 'string' ? JSON.parse(option.network_data) : option.network_data) as Record<string, unknown>;
    const prepared = prepareDevice({
      groundId: request.groundId,
      // spec §2.6: the hardware id becomes the name of the device.
      name: activation.hardware_id,
      description: activation.description,
      deviceType: version.ref,
      network: { networkId: option.network_id, data },
      assets: version.definition.assets,
      ...(version.definition.payload ? { payload: version.definition.payload } : {}),
    });
    const device = await insertDevice(tx, prepared, deps);
    await tx.query(
      `UPDATE activations SET status = 'used', activated_device_id = $2, activated_option_id = $3, activated_at = $4 WHERE code = $1`,
      [code, device.device.id, request.option, deps.clock.now()],
    );
    return { activation: (await loadActivation(tx, 'a.code = $1', [code]))!, device };
}

/** A new unused activation with its options, in the caller's transaction. */
async function insertActivation(tx: SqlQueryable, clock: Clock, partnerId: string, input: NewActivation, options: ReturnType<typeof prepareOptions>): Promise<Activation> {
  const code = newActivationCode();
  // activations_partner_hardware_key: one hardware id, one code (spec §2.6), also under races.
  await tx.query(
    `INSERT INTO activations (code, partner_id, description, hardware_id, status, created_at) VALUES ($1, $2, $3, $4, 'unused', $5)`,
    [code, partnerId, input.description ?? '', input.hardware.id, clock.now()],
  );
  await insertOptions(tx, clock, partnerId, code, options);
  return (await loadActivation(tx, 'a.code = $1', [code]))!;
}

/** A page of the partner's activations, oldest first, after the cursor. */
async function selectActivations(
  q: SqlQueryable, partnerId: string, status: string | undefined, hardwareId: string | undefined,
  after: { createdAt: number; code: string } | undefined, limit: number | undefined,
): Promise<Activation[]> {
  const { rows } = await q.query<ActivationRow>(
    `${ACTIVATION_SELECT}
     WHERE a.partner_id = $1 AND ($2::text IS NULL OR a.status = $2) AND ($3::text IS NULL OR a.hardware_id = $3)
       AND ($4::bigint IS NULL OR (a.created_at, a.code) > ($4::bigint, $5::text))
     ORDER BY a.created_at, a.code LIMIT $6`,
    [partnerId, status ?? null, hardwareId ?? null, after?.createdAt ?? null, after?.code ?? null, limit ?? DEFAULT_PAGE],
  );
  return rows.map(toActivation);
}

/** Changes an unused activation (CONFLICT once used), in the caller's transaction. */
async function changeActivation(
  tx: SqlQueryable, clock: Clock, partnerId: string, canonical: string, description: string | undefined, options: ReturnType<typeof prepareOptions> | undefined,
): Promise<Activation> {
  const row = await lockActivation(tx, partnerId, canonical);
  decideActivation(row.status, 'CHANGE');
  if (description !== undefined) await tx.query('UPDATE activations SET description = $2 WHERE code = $1', [canonical, description]);
  if (options !== undefined) {
    await tx.query('DELETE FROM activation_options WHERE activation_code = $1', [canonical]);
    await insertOptions(tx, clock, partnerId, canonical, options);
  }
  return (await loadActivation(tx, 'a.code = $1', [canonical]))!;
}
