/**
 * TypeBox validation of what arrives at the edge, with errors a client can act on: every failing
 * field named (`errors: [{path, message}]`), paths prefixed by where the field was (`path.`,
 * `query.`, `body.`).
 */
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { FleetError, type ErrorCode } from '../../../engine/kernel/errors.ts';

type Validator = ReturnType<typeof Compile>;

const compiled = new WeakMap<TSchema, Validator>();

function validatorOf(schema: TSchema): Validator {
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

export interface CheckOptions {
  /** The error's code; default VALIDATION_FAILED (422). */
  code?: ErrorCode;
  /**
   * Name a missing property itself (`body.hardware.id: required`) rather than its parent object,
   * so a partner's tooling can point at the field it forgot (the activation edge's bodies).
   */
  nameMissing?: boolean;
}

/** Asserts `value` matches `schema`, else throws (VALIDATION_FAILED, 422, by default) listing the fields. */
export function check<T>(schema: TSchema, value: unknown, prefix: string, options: CheckOptions = {}): T {
  const validator = validatorOf(schema);
  if (validator.Check(value)) return value as T;
  const errors = options.nameMissing === true ? withMissingNamed(validator, schema, value, prefix) : fieldErrors(schema, value, prefix);
  const summary = errors.slice(0, 3).map((e) => `${e.path}: ${e.message}`).join('; ');
  throw new FleetError(options.code ?? 'VALIDATION_FAILED', summary || `invalid ${prefix}`, { detail: { errors } });
}

/** One field's VALIDATION_FAILED (422): `path: message`, and the field under `errors`. */
export function invalidField(path: string, message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `${path}: ${message}`, { detail: { errors: [{ path, message }] } });
}

/** A validated TimeParam of the query (epoch ms or RFC 3339) → epoch ms. */
export function queryTime(value: number | string | undefined, field: string): number | undefined {
  if (value === undefined || typeof value === 'number') return value;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) throw invalidField(`query.${field}`, 'not a valid date-time');
  return ms;
}

/** Validation errors grouped per field; anyOf noise folded into "a or b". */
function fieldErrors(schema: TSchema, value: unknown, prefix: string): FieldError[] {
  const byPath = new Map<string, string[]>();
  const add = (pointer: string, message: string) => {
    const path = [prefix, ...pointer.split('/').filter(Boolean)].join('.');
    const list = byPath.get(path) ?? [];
    if (!list.includes(message)) list.push(message);
    byPath.set(path, list);
  };
  const errors = validatorOf(schema).Errors(value);
  const unknownFields = errors.some((e) => e.keyword === 'boolean');
  // A union of literals (an enum) fails once per literal: name the values it allows instead.
  const allowed = new Map<string, string[]>();
  for (const e of errors) {
    if (e.keyword !== 'const') continue;
    const list = allowed.get(e.instancePath) ?? [];
    list.push(JSON.stringify((e.params as { allowedValue?: unknown }).allowedValue));
    allowed.set(e.instancePath, list);
  }
  for (const e of errors) {
    if (e.keyword === 'anyOf' && errors.some((o) => o !== e && o.instancePath === e.instancePath)) continue;
    if (e.keyword === 'additionalProperties' && unknownFields) continue;
    const values = allowed.get(e.instancePath);
    if (e.keyword === 'const' && values !== undefined) add(e.instancePath, values.length === 1 ? `must be ${values[0]}` : `must be one of ${values.join(', ')}`);
    // `additionalProperties: false` reports each extra property as "schema is false".
    else add(e.instancePath, e.keyword === 'boolean' ? 'unknown field' : e.message);
  }
  return [...byPath].map(([path, messages]) => ({ path: path || prefix, message: messages.join(' or ') }));
}

/** fieldErrors, with each missing property its own `required` entry ahead of the rest. */
function withMissingNamed(validator: Validator, schema: TSchema, value: unknown, prefix: string): FieldError[] {
  const missing: FieldError[] = [];
  const parents = new Set<string>();
  for (const e of validator.Errors(value)) {
    const props = (e.params as { requiredProperties?: unknown } | undefined)?.requiredProperties;
    if (e.keyword !== 'required' || !Array.isArray(props)) continue;
    const parent = [prefix, ...e.instancePath.split('/').filter(Boolean)].join('.');
    parents.add(parent);
    for (const p of props) missing.push({ path: `${parent}.${String(p)}`, message: 'required' });
  }
  // The parent's own entry only repeats "must have required properties …"; keep any other message.
  const rest = fieldErrors(schema, value, prefix)
    .map((f) => (parents.has(f.path) ? { ...f, message: f.message.split(' or ').filter((m) => !m.startsWith('must have required propert')).join(' or ') } : f))
    .filter((f) => f.message !== '');
  return [...missing, ...rest];
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
