/**
 * Device types and activations over SQL (spec §2.5–2.8, §4.5–4.6): the operations of the registry
 * port that the activation edge calls. Redeeming a code is one transaction: the code row is locked,
 * the device is created as createDevice would, and the code is marked used, or nothing happens.
 */
import type { Clock } from '../../engine/clock.ts';
import { FleetError } from '../../engine/errors.ts';
import { newActivationCode, normaliseActivationCode } from '../../engine/activationCodes.ts';
import { isId, newId } from '../../engine/ids.ts';
import type { Activated, Activation, DeviceTypeDefinition, DeviceTypeVersion, Registry, TokenScope } from '../../engine/ports/registry.ts';
import * as S from '../../schemas/registry.ts';
import { insertDevice, prepareAssets, prepareDevice, prepareNetwork } from './createDevice.ts';
import type { SqlExecutor, SqlQueryable } from './executor.ts';
import { check, jsonParam } from './validate.ts';

type ActivationOperations = Pick<Registry, 'publishDeviceType' | 'resolveDeviceType' | 'createActivation' | 'getActivation' | 'findActivationByHardware' | 'activate'>;

export interface ActivationDeps {
  executor: SqlExecutor;
  clock: Clock;
  /** Runs `fn` when the registry is open, mapping driver errors. */
  guard<T>(fn: () => Promise<T>): Promise<T>;
  insertToken(tx: SqlQueryable, scope: TokenScope, subjectId: string): Promise<string>;
}

/** A whole definition: up to 256 asset profiles and a conversion script. */
const MAX_DEFINITION_BYTES = 1024 * 1024;
const REF_RE = new RegExp(S.DEVICE_TYPE_REF_PATTERN);

interface ParsedRef {
  partnerId: string;
  name: string;
  /** 'latest' when the reference named no version. */
  version: 'latest' | number;
}

function parseRef(ref: unknown): ParsedRef | undefined {
  if (typeof ref !== 'string' || !REF_RE.test(ref)) return undefined;
  const [path, version] = ref.split(':');
  const [partnerId, name] = path.split('/');
  return { partnerId, name, version: version === undefined || version === 'latest' ? 'latest' : Number(version) };
}

function forbidden(field: string, message: string): FleetError {
  return new FleetError('FORBIDDEN', message, { detail: { field } });
}

function notFound(field: string, message: string): FleetError {
  return new FleetError('NOT_FOUND', message, { detail: { field } });
}

function checkDefinition(definition: DeviceTypeDefinition, field: string): string {
  check(S.DeviceTypeDefinition, definition, field);
  // The limits a device created directly gets (prepareDevice), checked once at publication.
  prepareAssets(definition.assets, `${field}.assets`);
  if (definition.payload !== undefined) jsonParam(definition.payload, `${field}.payload`);
  return jsonParam(definition, field, MAX_DEFINITION_BYTES);
}

interface VersionRow {
  partner_id: string;
  name: string;
  version: number;
  definition: unknown;
  published_at: unknown;
}

function toVersion(row: VersionRow): DeviceTypeVersion {
  const version = Number(row.version);
  return {
    partnerId: row.partner_id,
    name: row.name,
    version,
    ref: `${row.partner_id}/${row.name}:${version}`,
    definition: (typeof row.definition === 'string' ? JSON.parse(row.definition) : row.definition) as DeviceTypeDefinition,
    publishedAt: Number(row.published_at),
  };
}

async function resolveIn(q: SqlQueryable, ref: ParsedRef): Promise<DeviceTypeVersion | undefined> {
  const { rows } = await q.query<VersionRow>(
    `SELECT t.partner_id, t.name, v.version, v.definition, v.published_at
     FROM device_types t JOIN device_type_versions v ON v.device_type_id = t.id
     WHERE t.partner_id = $1 AND t.name = $2 AND ($3::integer IS NULL OR v.version = $3::integer)
     ORDER BY v.version DESC LIMIT 1`,
    [ref.partnerId, ref.name, ref.version === 'latest' ? null : ref.version],
  );
  return rows[0] ? toVersion(rows[0]) : undefined;
}

/** Creates the type if needed and appends the next version; the type row lock orders concurrent publishers. */
async function publishIn(tx: SqlQueryable, clock: Clock, partnerId: string, name: string, definition: string): Promise<DeviceTypeVersion & { typeId: string }> {
  const now = clock.now();
  await tx.query('INSERT INTO device_types (id, partner_id, name, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (partner_id, name) DO NOTHING', [newId(), partnerId, name, now]);
  const type = await tx.query<{ id: string }>('SELECT id FROM device_types WHERE partner_id = $1 AND name = $2 FOR UPDATE', [partnerId, name]);
  const typeId = type.rows[0].id;
  const { rows } = await tx.query<VersionRow>(
    `INSERT INTO device_type_versions (device_type_id, version, definition, published_at)
     SELECT $1, COALESCE(max(version), 0) + 1, $2::jsonb, $3 FROM device_type_versions WHERE device_type_id = $1
     RETURNING $4::text AS partner_id, $5::text AS name, version, definition, published_at`,
    [typeId, definition, now, partnerId, name],
  );
  return { ...toVersion(rows[0]), typeId };
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

export function activationOperations(deps: ActivationDeps): ActivationOperations {
  const { executor, clock, guard } = deps;

  return {
    async publishDeviceType(partnerId, name, definition) {
      if (!isId(partnerId)) throw new FleetError('VALIDATION_FAILED', 'partnerId: not a registry id', { detail: { field: 'partnerId' } });
      check(S.DeviceTypeName, name, 'name');
      const json = checkDefinition(definition, 'definition');
      return guard(() =>
        executor.transaction(async (tx) => {
          const { typeId: _typeId, ...version } = await publishIn(tx, clock, partnerId, name, json);
          return version;
        }),
      );
    },

    async resolveDeviceType(ref) {
      const parsed = parseRef(ref);
      if (!parsed || !isId(parsed.partnerId)) return undefined;
      return guard(() => resolveIn(executor, parsed));
    },

    async createActivation(partnerId, input) {
      if (!isId(partnerId)) throw new FleetError('VALIDATION_FAILED', 'partnerId: not a registry id', { detail: { field: 'partnerId' } });
      check(S.NewActivation, input, '');
      const options = input.options.map((option, i) => {
        const field = `options.${i}.device.type`;
        const ref = parseRef(option.device.type)!;
        // DESIGN.md §5: a partner token reaches only its own device types.
        if (ref.partnerId !== partnerId) throw forbidden(field, `${field}: device types of another partner cannot be used`);
        return { option, ref, field, network: prepareNetwork(option.network, `options.${i}.network`) };
      });
      const emptyDefinition = JSON.stringify({ assets: [] } satisfies DeviceTypeDefinition);
      return guard(() =>
        executor.transaction(async (tx) => {
          const typeIds = new Map<string, string>();
          for (const { ref, field } of options) {
            if (typeIds.has(`${ref.name}:${ref.version}`)) continue;
            const found = await tx.query<{ id: string }>(
              `SELECT t.id FROM device_types t JOIN device_type_versions v ON v.device_type_id = t.id
               WHERE t.partner_id = $1 AND t.name = $2 AND ($3::integer IS NULL OR v.version = $3::integer) LIMIT 1`,
              [partnerId, ref.name, ref.version === 'latest' ? null : ref.version],
            );
            let typeId = found.rows[0]?.id;
            if (!typeId) {
              if (ref.version !== 'latest') throw notFound(field, `${field}: no published version ${ref.version} of ${ref.name}`);
              // spec §2.7: when no published version exists, one is created and published beforehand.
              typeId = (await publishIn(tx, clock, partnerId, ref.name, emptyDefinition)).typeId;
            }
            typeIds.set(`${ref.name}:${ref.version}`, typeId);
          }
          const code = newActivationCode();
          await tx.query(
            `INSERT INTO activations (code, partner_id, description, hardware_id, status, created_at) VALUES ($1, $2, $3, $4, 'unused', $5)`,
            [code, partnerId, input.description ?? '', input.hardware.id, clock.now()],
          );
          for (const [position, { option, ref, network }] of options.entries()) {
            await tx.query(
              `INSERT INTO activation_options (id, activation_code, position, description, device_type_id, type_version, network_id, network_data)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)`,
              [newId(), code, position, option.description ?? '', typeIds.get(`${ref.name}:${ref.version}`), String(ref.version), option.network.networkId, network.data],
            );
          }
          return (await loadActivation(tx, 'a.code = $1', [code]))!;
        }),
      );
    },

    async getActivation(partnerId, code) {
      const canonical = normaliseActivationCode(code);
      if (!isId(partnerId) || !canonical) return undefined;
      return guard(() => loadActivation(executor, 'a.partner_id = $1 AND a.code = $2', [partnerId, canonical]));
    },

    async findActivationByHardware(partnerId, hardwareId) {
      if (!isId(partnerId) || typeof hardwareId !== 'string' || hardwareId.length === 0 || hardwareId.length > 128) return undefined;
      return guard(() => loadActivation(executor, 'a.partner_id = $1 AND a.hardware_id = $2', [partnerId, hardwareId]));
    },

    async activate(request): Promise<Activated> {
      check(S.ActivateRequest, request, '');
      const code = normaliseActivationCode(request.code);
      if (!code) throw notFound('code', 'activation code not found');
      return guard(() =>
        executor.transaction(async (tx) => {
          const member = await tx.query('SELECT 1 FROM memberships WHERE ground_id = $1 AND user_id = $2', [request.groundId, request.userId]);
          if (member.rows.length === 0) throw forbidden('groundId', 'the user is not a member of that ground');
          // FOR UPDATE: of two concurrent redemptions the second waits, then sees `used`.
          const locked = await tx.query<{ status: string; description: string; hardware_id: string }>('SELECT status, description, hardware_id FROM activations WHERE code = $1 FOR UPDATE', [code]);
          const activation = locked.rows[0];
          if (!activation) throw notFound('code', 'activation code not found');
          if (activation.status !== 'unused') throw new FleetError('CONFLICT', 'the activation code was already used', { detail: { field: 'code' } });
          const { rows } = await tx.query<{ partner_id: string; name: string; type_version: string; network_id: string; network_data: unknown }>(
            `SELECT t.partner_id, t.name, o.type_version, o.network_id, o.network_data
             FROM activation_options o JOIN device_types t ON t.id = o.device_type_id WHERE o.id = $1 AND o.activation_code = $2`,
            [request.option, code],
          );
          const option = rows[0];
          if (!option) throw notFound('option', 'the activation has no such option');
          const version = await resolveIn(tx, { partnerId: option.partner_id, name: option.name, version: option.type_version === 'latest' ? 'latest' : Number(option.type_version) });
          if (!version) throw notFound('option', 'the device type version of that option is not published');
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
            [code, device.device.id, request.option, clock.now()],
          );
          return { activation: (await loadActivation(tx, 'a.code = $1', [code]))!, device };
        }),
      );
    },
  };
}
