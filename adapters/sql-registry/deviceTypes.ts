/**
 * Device types over SQL (spec §2.7, §9): a draft per type that the partner edits, and immutable
 * versions 1, 2, … published from it. Also the resolution of an activation option's
 * `<partner>/<name>[:<n>|:latest]` reference, shared by creating and changing activations.
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import { checkDeviceTypeDefinition } from '../../engine/activation/deviceTypeDefinition.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId, newId } from '../../engine/kernel/ids.ts';
import type { DeviceType, DeviceTypeDefinition, DeviceTypeVersion, DeviceTypeRegistry } from '../../engine/ports/registry.ts';
import * as S from '../../schemas/registry.ts';
import { prepareAssets } from './createDevice.ts';
import type { SqlExecutor, SqlQueryable } from './executor.ts';
import { canonical, canonicalAssets, canonicalFields, canonicalLookup, check, jsonParam } from './validate.ts';

type DeviceTypeOperations = DeviceTypeRegistry;

export interface DeviceTypeDeps {
  executor: SqlExecutor;
  clock: Clock;
  guard<T>(fn: () => Promise<T>): Promise<T>;
}

/** A whole definition: up to 256 asset profiles and a conversion script. */
const MAX_DEFINITION_BYTES = 1024 * 1024;
const REF_RE = new RegExp(S.DEVICE_TYPE_REF_PATTERN);
const NAME_RE = new RegExp(S.DEVICE_TYPE_NAME_PATTERN);

export interface ParsedRef {
  partnerId: string;
  name: string;
  /** 'latest' when the reference named no version. */
  version: 'latest' | number;
}

export function parseRef(ref: unknown): ParsedRef | undefined {
  if (typeof ref !== 'string' || !REF_RE.test(ref)) return undefined;
  const [path, version] = ref.split(':');
  const [partnerId, name] = path.split('/');
  return { partnerId, name, version: version === undefined || version === 'latest' ? 'latest' : Number(version) };
}

function invalid(field: string, message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `${field}: ${message}`, { detail: { field } });
}

function requirePartner(partnerId: unknown): asserts partnerId is string {
  if (!isId(partnerId)) throw invalid('partnerId', 'not a registry id');
}

/** Schema, asset names, profiles, payload; then the JSON text, bounded. */
export function checkDefinition(raw: DeviceTypeDefinition, field: string): string {
  const prefix = field ? `${field}.` : '';
  const canonicalDefinition = canonicalFields(raw, { title: 'text', description: 'text' }, prefix);
  const definition = canonicalDefinition?.assets === undefined ? canonicalDefinition : { ...canonicalDefinition, assets: canonicalAssets(canonicalDefinition.assets, `${prefix}assets`) };
  check(S.DeviceTypeDefinition, definition, field);
  // The limits a device created directly gets (prepareDevice), checked once here.
  prepareAssets(definition.assets, [field, 'assets'].filter(Boolean).join('.'));
  checkDeviceTypeDefinition(definition, field);
  if (definition.payload !== undefined) jsonParam(definition.payload, [field, 'payload'].filter(Boolean).join('.'));
  return jsonParam(definition, field || 'draft', MAX_DEFINITION_BYTES);
}

function json<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
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
    definition: json<DeviceTypeDefinition>(row.definition),
    publishedAt: Number(row.published_at),
  };
}

export async function resolveIn(q: SqlQueryable, ref: ParsedRef): Promise<DeviceTypeVersion | undefined> {
  const { rows } = await q.query<VersionRow>(
    `SELECT t.partner_id, t.name, v.version, v.definition, v.published_at
     FROM device_types t JOIN device_type_versions v ON v.device_type_id = t.id
     WHERE t.partner_id = $1 AND t.name = $2 AND ($3::integer IS NULL OR v.version = $3::integer)
     ORDER BY v.version DESC LIMIT 1`,
    [ref.partnerId, ref.name, ref.version === 'latest' ? null : ref.version],
  );
  return rows[0] ? toVersion(rows[0]) : undefined;
}

/**
 * Appends the next version to a locked type row: `definition` (JSON text), or the type's draft
 * when null. The row lock orders concurrent publishers, so versions are consecutive.
 */
async function appendVersion(tx: SqlQueryable, clock: Clock, typeId: string, definition: string | null): Promise<DeviceTypeVersion> {
  const { rows } = await tx.query<VersionRow>(
    `WITH t AS (SELECT id, partner_id, name, draft FROM device_types WHERE id = $1)
     INSERT INTO device_type_versions (device_type_id, version, definition, published_at)
     SELECT t.id, COALESCE((SELECT max(version) FROM device_type_versions WHERE device_type_id = t.id), 0) + 1, COALESCE($2::jsonb, t.draft), $3 FROM t
     RETURNING (SELECT partner_id FROM t) AS partner_id, (SELECT name FROM t) AS name, version, definition, published_at`,
    [typeId, definition, clock.now()],
  );
  return toVersion(rows[0]);
}

async function lockType(tx: SqlQueryable, partnerId: string, name: string): Promise<string | undefined> {
  const { rows } = await tx.query<{ id: string }>('SELECT id FROM device_types WHERE partner_id = $1 AND name = $2 FOR UPDATE', [partnerId, name]);
  return rows[0]?.id;
}

/** Creates the type with `definition` as its draft when missing; answers its id, row locked. */
async function upsertDraft(tx: SqlQueryable, clock: Clock, partnerId: string, name: string, definition: string): Promise<{ id: string; created: boolean }> {
  const now = clock.now();
  const { rows } = await tx.query<{ id: string; created: boolean }>(
    `INSERT INTO device_types (id, partner_id, name, created_at, draft, updated_at) VALUES ($1, $2, $3, $4, $5::jsonb, $4)
     ON CONFLICT (partner_id, name) DO UPDATE SET draft = EXCLUDED.draft, updated_at = EXCLUDED.updated_at
     RETURNING id, (xmax = 0) AS created`,
    [newId(), partnerId, name, now, definition],
  );
  return { id: rows[0].id, created: rows[0].created === true };
}

interface TypeRow {
  id: string;
  partner_id: string;
  name: string;
  draft: unknown;
  created_at: unknown;
  updated_at: unknown;
  versions: unknown;
}

const TYPE_SELECT = `SELECT t.id, t.partner_id, t.name, t.draft, t.created_at, t.updated_at,
  COALESCE((SELECT json_agg(json_build_object('version', v.version, 'published_at', v.published_at) ORDER BY v.version)
            FROM device_type_versions v WHERE v.device_type_id = t.id), '[]'::json) AS versions
  FROM device_types t`;

function toDeviceType(row: TypeRow): DeviceType {
  const versions = json<Array<{ version: number; published_at: unknown }>>(row.versions).map((v) => ({
    version: Number(v.version),
    ref: `${row.partner_id}/${row.name}:${Number(v.version)}`,
    publishedAt: Number(v.published_at),
  }));
  return {
    partnerId: row.partner_id,
    name: row.name,
    ref: `${row.partner_id}/${row.name}`,
    draft: json<DeviceTypeDefinition>(row.draft),
    versions,
    latest: versions.length > 0 ? versions[versions.length - 1].version : null,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

async function loadType(q: SqlQueryable, partnerId: string, name: string): Promise<DeviceType | undefined> {
  const { rows } = await q.query<TypeRow>(`${TYPE_SELECT} WHERE t.partner_id = $1 AND t.name = $2`, [partnerId, name]);
  return rows[0] ? toDeviceType(rows[0]) : undefined;
}

export interface ResolvedOptionType {
  typeId: string;
  /** As the option stores it: 'latest' or the number. */
  version: string;
}

/**
 * The device type of each option reference, inside the caller's transaction (spec §2.7, §9):
 * - another partner's type: FORBIDDEN (DESIGN.md §5);
 * - a type name the partner does not have: VALIDATION_FAILED (nothing to publish);
 * - `:<n>` that is not published: VALIDATION_FAILED;
 * - `:latest` (or no suffix) of a type with no published version: its draft is published as
 *   version 1 first ("When none exists, one is created and published beforehand").
 * Types are locked in name order, so concurrent callers cannot deadlock.
 */
export async function resolveOptionTypes(
  tx: SqlQueryable,
  clock: Clock,
  partnerId: string,
  refs: ReadonlyArray<{ ref: ParsedRef; field: string }>,
): Promise<ResolvedOptionType[]> {
  const byKey = new Map<string, { ref: ParsedRef; field: string }>();
  for (const r of refs) {
    // DESIGN.md §5: a partner token reaches only its own device types.
    if (r.ref.partnerId !== partnerId) throw new FleetError('FORBIDDEN', `${r.field}: device types of another partner cannot be used`, { detail: { field: r.field } });
    const key = `${r.ref.name}:${r.ref.version}`;
    if (!byKey.has(key)) byKey.set(key, r);
  }
  const ids = new Map<string, string>();
  const ordered = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key, { ref, field }] of ordered) {
    const { rows } = await tx.query<{ id: string; published: boolean }>(
      `SELECT t.id, EXISTS (SELECT 1 FROM device_type_versions v WHERE v.device_type_id = t.id AND ($3::integer IS NULL OR v.version = $3::integer)) AS published
       FROM device_types t WHERE t.partner_id = $1 AND t.name = $2`,
      [partnerId, ref.name, ref.version === 'latest' ? null : ref.version],
    );
    const type = rows[0];
    if (!type) throw invalid(field, `the partner has no device type ${ref.name}`);
    if (!type.published) {
      if (ref.version !== 'latest') throw invalid(field, `version ${ref.version} of ${ref.name} is not published`);
      // Locked, then checked again: of two callers publishing the same draft, the second sees version 1.
      await lockType(tx, partnerId, ref.name);
      const again = await tx.query('SELECT 1 FROM device_type_versions WHERE device_type_id = $1 LIMIT 1', [type.id]);
      if (again.rows.length === 0) await appendVersion(tx, clock, type.id, null);
    }
    ids.set(key, type.id);
  }
  return refs.map(({ ref }) => ({ typeId: ids.get(`${ref.name}:${ref.version}`)!, version: String(ref.version) }));
}

export function deviceTypeOperations(deps: DeviceTypeDeps): DeviceTypeOperations {
  const { executor, clock, guard } = deps;

  return {
    async publishDeviceType(partnerId, rawName, definition) {
      requirePartner(partnerId);
      const name = canonical(rawName, 'name');
      check(S.DeviceTypeName, name, 'name');
      const text = checkDefinition(definition, 'definition');
      return guard(() =>
        executor.transaction(async (tx) => {
          // The published definition also becomes the draft: the next edit starts from it.
          const { id } = await upsertDraft(tx, clock, partnerId, name, text);
          return appendVersion(tx, clock, id, text);
        }),
      );
    },

    async resolveDeviceType(ref) {
      const parsed = parseRef(ref);
      if (!parsed || !isId(parsed.partnerId)) return undefined;
      return guard(() => resolveIn(executor, parsed));
    },

    async saveDeviceTypeDraft(partnerId, rawName, draft) {
      requirePartner(partnerId);
      const name = canonical(rawName, 'name');
      check(S.DeviceTypeName, name, 'name');
      const text = checkDefinition(draft, '');
      return guard(() =>
        executor.transaction(async (tx) => {
          const { created } = await upsertDraft(tx, clock, partnerId, name, text);
          return { deviceType: (await loadType(tx, partnerId, name))!, created };
        }),
      );
    },

    async publishDeviceTypeDraft(partnerId, rawName) {
      requirePartner(partnerId);
      const name = canonical(rawName, 'name');
      check(S.DeviceTypeName, name, 'name');
      return guard(() =>
        executor.transaction(async (tx) => {
          const id = await lockType(tx, partnerId, name);
          if (id === undefined) throw new FleetError('NOT_FOUND', `device type ${name} not found`, { detail: { field: 'name' } });
          return appendVersion(tx, clock, id, null);
        }),
      );
    },

    async getDeviceType(partnerId, rawName) {
      const name = canonicalLookup(rawName);
      if (!isId(partnerId) || name === undefined || !NAME_RE.test(name)) return undefined;
      return guard(() => loadType(executor, partnerId, name));
    },

    async listDeviceTypes(partnerId) {
      if (!isId(partnerId)) return [];
      return guard(async () => {
        const { rows } = await executor.query<TypeRow>(`${TYPE_SELECT} WHERE t.partner_id = $1 ORDER BY t.name COLLATE "C"`, [partnerId]);
        return rows.map(toDeviceType);
      });
    },
  };
}
