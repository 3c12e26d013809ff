/**
 * TypeBox validation of what arrives at the edge, with errors a client can act on: every failing
 * field named (`errors: [{path, message}]`), paths prefixed by where the field was (`path.`,
 * `query.`, `body.`).
 */
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { FleetError, type ErrorCode } from '../../engine/kernel/errors.ts';

type Validator = ReturnType<typeof Compile>;

const compiled = new WeakMap<TSchema, Validator>();

export function validatorOf(schema: TSchema): Validator {
  let v = compiled.get(schema);
  if (v === undefined) {
    v = Compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

export interface FieldError {
  path: string;
  message: string;
}

/** Validation errors grouped per field; anyOf noise folded into "a or b". */
export function fieldErrors(schema: TSchema, value: unknown, prefix: string): FieldError[] {
  const byPath = new Map<string, string[]>();
  const add = (pointer: string, message: string) => {
    const path = [prefix, ...pointer.split('/').filter(Boolean)].join('.');
    const list = byPath.get(path) ?? [];
    if (!list.includes(message)) list.push(message);
    byPath.set(path, list);
  };
  const errors = validatorOf(schema).Errors(value);
  const unknownFields = errors.some((e) => e.keyword === 'boolean');
  for (const e of errors) {
    if (e.keyword === 'anyOf' && errors.some((o) => o !== e && o.instancePath === e.instancePath)) continue;
    if (e.keyword === 'additionalProperties' && unknownFields) continue;
    // `additionalProperties: false` reports each extra property as "schema is false".
    add(e.instancePath, e.keyword === 'boolean' ? 'unknown field' : e.message);
  }
  return [...byPath].map(([path, messages]) => ({ path: path || prefix, message: messages.join(' or ') }));
}

/** Asserts `value` matches `schema`, else throws `code` (default VALIDATION_FAILED, 422) listing the fields. */
export function check<T>(schema: TSchema, value: unknown, prefix: string, code: ErrorCode = 'VALIDATION_FAILED'): T {
  if (validatorOf(schema).Check(value)) return value as T;
  const errors = fieldErrors(schema, value, prefix);
  const summary = errors.slice(0, 3).map((e) => `${e.path}: ${e.message}`).join('; ');
  throw new FleetError(code, summary || `invalid ${prefix}`, { detail: { errors } });
}

const INTEGER_TEXT = /^(0|[1-9][0-9]{0,15})$/;

function acceptsInteger(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  const s = schema as { type?: unknown; anyOf?: unknown };
  if (s.type === 'integer' || s.type === 'number') return true;
  return Array.isArray(s.anyOf) && s.anyOf.some(acceptsInteger);
}

/**
 * Query strings to the values an object schema describes: decimal digits become numbers where the
 * property accepts an integer (strictly: no signs, exponents, fractions or leading zeros; anything
 * else stays a string and fails validation). A parameter given twice is refused.
 */
export function coerceQuery(schema: TSchema, queries: Record<string, string[]>): Record<string, unknown> {
  const properties = ((schema as { properties?: Record<string, unknown> }).properties ?? {});
  const out: Record<string, unknown> = {};
  const repeated: FieldError[] = [];
  for (const [key, values] of Object.entries(queries)) {
    if (values.length !== 1) repeated.push({ path: `query.${key}`, message: 'given more than once' });
    const raw = values[values.length - 1] ?? '';
    out[key] = Object.hasOwn(properties, key) && acceptsInteger(properties[key]) && INTEGER_TEXT.test(raw) ? Number(raw) : raw;
  }
  if (repeated.length > 0) {
    throw new FleetError('VALIDATION_FAILED', `${repeated[0].path}: given more than once`, { detail: { errors: repeated } });
  }
  return out;
}
