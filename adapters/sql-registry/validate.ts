/**
 * Input checks of the SQL registry: TypeBox schemas of schemas/registry.ts plus the limits JSON
 * Schema cannot say (serialised size, devEui normalisation). Everything fails with
 * VALIDATION_FAILED and `detail.field`, before any query.
 *
 * Text is made canonical (engine/kernel/canonicalText.ts: leading BOMs stripped, NFC, lone
 * surrogates refused; names also refuse invisible and control characters) before the schema's
 * length and pattern rules and before the database's unique keys see it, and the canonical form is
 * what is stored: "Ä" precomposed and decomposed are one device name, one hardware id.
 */
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { canonicalName, canonicalText, describeTextProblem } from '../../engine/kernel/canonicalText.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { DEV_EUI_PATTERN } from '../../schemas/registry.ts';

const compiled = new WeakMap<TSchema, ReturnType<typeof Compile>>();

function validator(schema: TSchema): ReturnType<typeof Compile> {
  let c = compiled.get(schema);
  if (!c) {
    c = Compile(schema);
    compiled.set(schema, c);
  }
  return c;
}

/** Asserts `value` matches `schema`; `field` (may be empty) prefixes the failing path in the error detail. */
export function check<T>(schema: TSchema, value: unknown, field: string): asserts value is T {
  const v = validator(schema);
  if (v.Check(value)) return;
  const first = v.Errors(value)[0];
  const parts = (first?.instancePath ?? '').split('/').filter(Boolean);
  const missing = (first?.params as { requiredProperties?: unknown } | undefined)?.requiredProperties;
  if (first?.keyword === 'required' && Array.isArray(missing) && missing.length > 0) parts.push(String(missing[0]));
  const sub = parts.join('.');
  const path = [field, sub].filter(Boolean).join('.') || 'input';
  throw new FleetError('VALIDATION_FAILED', `${path}: ${first?.message ?? 'invalid'}`, { detail: { field: path } });
}

/** Largest serialised profile, payload settings (with a conversion script) or network data. */
export const MAX_JSON_BYTES = 64 * 1024;

/** JSON text of a value for a jsonb parameter, bounded in size; cycles and BigInts fail validation. */
export function jsonParam(value: unknown, field: string, maxBytes = MAX_JSON_BYTES): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new FleetError('VALIDATION_FAILED', `${field}: not serialisable as JSON`, { cause, detail: { field } });
  }
  if (text === undefined) throw new FleetError('VALIDATION_FAILED', `${field}: not a JSON value`, { detail: { field } });
  if (Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw new FleetError('VALIDATION_FAILED', `${field}: larger than ${maxBytes} bytes as JSON`, { detail: { field } });
  }
  return text;
}

const DEV_EUI_RE = new RegExp(DEV_EUI_PATTERN);

/** Upper-case hex without `-`/`:` separators, or undefined when not a devEui. */
export function normaliseDevEui(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const compact = value.replace(/[-:]/g, '');
  return DEV_EUI_RE.test(compact) ? compact.toUpperCase() : undefined;
}

/**
 * The canonical form of a text input (`kind` name: identifiers people compare by eye; text: titles
 * and descriptions). Anything but a string is returned as it is, for the schema check to refuse.
 */
export function canonical<T>(value: T, field: string, kind: 'name' | 'text' = 'name'): T {
  if (typeof value !== 'string') return value;
  const r = kind === 'name' ? canonicalName(value) : canonicalText(value);
  if (r.text !== undefined) return r.text as T;
  throw new FleetError('VALIDATION_FAILED', `${field}: ${describeTextProblem(r.problem!, r.at)}`, { detail: { field, problem: r.problem } });
}

/** A copy of `input` with the named text fields canonical (absent fields stay absent). */
export function canonicalFields<T>(input: T, fields: Readonly<Record<string, 'name' | 'text'>>, prefix = ''): T {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const out: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  for (const [key, kind] of Object.entries(fields)) {
    if (out[key] !== undefined) out[key] = canonical(out[key], prefix + key, kind);
  }
  return out as T;
}

/** For lookups: the canonical form of a name, or undefined when it has none (it then matches nothing). */
export function canonicalLookup(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  return canonicalName(value).text;
}

/** Title and description of a device or asset, and its name. */
export const NAMED_TEXT = { name: 'name', title: 'text', description: 'text' } as const;

/** Canonical assets of a device or device type definition (names, titles, descriptions). */
export function canonicalAssets<T>(assets: T, field: string): T {
  if (!Array.isArray(assets)) return assets;
  return assets.map((a, i) => canonicalFields(a, NAMED_TEXT, `${field}.${i}.`)) as T;
}
