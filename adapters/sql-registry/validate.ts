/**
 * Input checks of the SQL registry: TypeBox schemas of schemas/registry.ts plus the limits JSON
 * Schema cannot say (serialised size, devEui normalisation). Everything fails with
 * VALIDATION_FAILED and `detail.field`, before any query.
 */
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
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
