/**
 * Asset profiles: plain JSON Schema (DESIGN.md §4), the subset below, compiled once per distinct
 * profile with typebox's `Compile` into a fast checker.
 *
 * Validation keywords (the whole supported subset):
 *   type       "string" | "number" | "integer" | "boolean" | "object" | "array" | "null",
 *              or a non-empty array of them without repeats
 *   enum       non-empty array of JSON values (deep equality)
 *   minimum, maximum   finite numbers, inclusive; minimum ≤ maximum
 *   properties object of name → schema (a property that is absent is not checked)
 *   required   array of distinct property names
 *   items      one schema every array element must match (tuple forms are not supported)
 * Every other JSON Schema validation keyword (pattern, const, oneOf, additionalProperties, $ref, …)
 * makes the profile invalid rather than being silently ignored: a stored rule that is never
 * enforced would let bad values in. Keys that do not validate (`unit`, `title`, `description`,
 * `format`, `default`, AllThingsTalk extras, …) are labels: stripped before compiling, they never
 * cause errors and never change which checker a profile shares.
 *
 * Location (spec §2.1: "an object value with numeric fields latitude and longitude"): there is no
 * implicit range check. `{type:'object', properties:{latitude:{type:'number'}, longitude:{type:'number'}}}`
 * checks types only; a profile that wants latitude within ±90 and longitude within ±180 says so
 * with minimum/maximum, like any other range. The engine adds no meaning a profile does not state.
 *
 * Numbers are checked as typebox does: "number" and "integer" accept finite numbers only.
 */
import { Compile } from 'typebox/compile';
import type { AssetProfile } from '../../ports/directory.ts';
import { isPlainObject } from '../../kernel/isPlainObject.ts';

/** Undefined when the value matches; otherwise a human-readable reason naming the path. */
export type ProfileChecker = (value: unknown) => string | undefined;

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/** Standard validation keywords outside the subset: refused by checkProfile. */
const UNSUPPORTED = new Set([
  'const', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern',
  'minItems', 'maxItems', 'uniqueItems', 'contains', 'minContains', 'maxContains', 'prefixItems',
  'additionalItems', 'unevaluatedItems', 'minProperties', 'maxProperties', 'additionalProperties',
  'patternProperties', 'propertyNames', 'unevaluatedProperties', 'dependentRequired', 'dependentSchemas',
  'dependencies', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', '$ref', '$dynamicRef', '$recursiveRef',
]);

const SUPPORTED_LIST = 'type, enum, minimum, maximum, properties, required, items';

/** Profiles nest far less than this; the bound keeps a hostile profile from exhausting the stack. */
const MAX_PROFILE_DEPTH = 32;

/** Distinct compiled profiles kept; past it the oldest is dropped (sharing, not correctness, suffers). */
const CACHE_LIMIT = 10_000;

class ProfileError extends Error {}

function define(obj: Record<string, unknown>, key: string, value: unknown): void {
  // Plain assignment of "__proto__" would set the prototype instead of a property.
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Copies a JSON value, refusing anything JSON cannot hold. */
function jsonCopy(v: unknown, at: string, depth: number): unknown {
  if (depth > MAX_PROFILE_DEPTH) throw new ProfileError(`${at}: nested too deeply`);
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new ProfileError(`${at}: ${v} is not a finite number`);
    return v;
  }
  if (Array.isArray(v)) return v.map((x, i) => jsonCopy(x, `${at}/${i}`, depth + 1));
  if (isPlainObject(v)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) define(out, k, jsonCopy(v[k], `${at}/${k}`, depth + 1));
    return out;
  }
  throw new ProfileError(`${at}: not a JSON value`);
}

function finite(v: unknown, at: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ProfileError(`${at}: must be a finite number`);
  return v;
}

/** Validates one schema of the subset and returns it with only the validation keywords. */
function normalize(schema: unknown, at: string, depth: number): Record<string, unknown> {
  if (depth > MAX_PROFILE_DEPTH) throw new ProfileError(`${at}: nested too deeply`);
  if (!isPlainObject(schema)) throw new ProfileError(`${at}: a schema must be a JSON object`);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(schema)) {
    const v = schema[key];
    const here = `${at}/${key}`;
    switch (key) {
      case 'type': {
        const list = Array.isArray(v) ? v : [v];
        if (list.length === 0) throw new ProfileError(`${here}: must name at least one type`);
        for (const t of list) {
          if (typeof t !== 'string' || !TYPES.has(t)) {
            throw new ProfileError(`${here}: ${JSON.stringify(t) ?? String(t)} is not one of ${[...TYPES].join(', ')}`);
          }
        }
        if (new Set(list).size !== list.length) throw new ProfileError(`${here}: repeats a type`);
        out.type = Array.isArray(v) ? [...list] : v;
        break;
      }
      case 'enum':
        if (!Array.isArray(v) || v.length === 0) throw new ProfileError(`${here}: must be a non-empty array`);
        out.enum = jsonCopy(v, here, depth + 1);
        break;
      case 'minimum':
      case 'maximum':
        out[key] = finite(v, here);
        break;
      case 'properties': {
        if (!isPlainObject(v)) throw new ProfileError(`${here}: must be an object of property schemas`);
        const props: Record<string, unknown> = {};
        for (const name of Object.keys(v)) define(props, name, normalize(v[name], `${here}/${name}`, depth + 1));
        out.properties = props;
        break;
      }
      case 'required': {
        if (!Array.isArray(v)) throw new ProfileError(`${here}: must be an array of property names`);
        for (const name of v) {
          if (typeof name !== 'string') throw new ProfileError(`${here}: ${JSON.stringify(name)} is not a property name`);
          // The compiled check tests `name in value`, which inherited members such as
          // "toString" would satisfy on any object.
          if (name in Object.prototype) throw new ProfileError(`${here}: "${name}" names a built-in object member and cannot be required`);
        }
        if (new Set(v).size !== v.length) throw new ProfileError(`${here}: repeats a property name`);
        out.required = [...v];
        break;
      }
      case 'items':
        if (Array.isArray(v)) throw new ProfileError(`${here}: tuple form (an array of schemas) is not supported; use one schema`);
        out.items = normalize(v, here, depth + 1);
        break;
      default:
        if (UNSUPPORTED.has(key)) throw new ProfileError(`${here}: keyword "${key}" is not supported (supported: ${SUPPORTED_LIST})`);
      // anything else is a label (unit, title, description, …)
    }
  }
  if (typeof out.minimum === 'number' && typeof out.maximum === 'number' && out.minimum > out.maximum) {
    throw new ProfileError(`${at}: minimum ${out.minimum} is greater than maximum ${out.maximum}`);
  }
  return out;
}

/** JSON with object keys sorted, so equal profiles written in any key order share one checker. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function prepare(profile: AssetProfile): Record<string, unknown> {
  return normalize(profile, 'profile', 0);
}

/**
 * Undefined when the profile is a valid schema of the supported subset; otherwise why not,
 * naming the offending path (e.g. `profile/properties/t/type: "float" is not one of …`).
 * Call it when assets are saved.
 */
export function checkProfile(profile: AssetProfile): string | undefined {
  try {
    prepare(profile);
    return undefined;
  } catch (error) {
    if (error instanceof ProfileError) return error.message;
    throw error;
  }
}

function formatError(e: { instancePath: string; message: string; params?: Record<string, unknown> }): string {
  let reason = `value${e.instancePath}: ${e.message}`;
  const allowed = e.params?.allowedValues;
  if (Array.isArray(allowed)) {
    const list = JSON.stringify(allowed);
    reason += ` ${list.length > 120 ? `${list.slice(0, 117)}...` : list}`;
  }
  return reason;
}

function build(schema: Record<string, unknown>): ProfileChecker {
  // The subset is plain JSON Schema, which typebox compiles directly; its static types do not apply.
  const validator = Compile(schema as unknown as Parameters<typeof Compile>[0]);
  return (value) => {
    if (validator.Check(value)) return undefined;
    const first = validator.Errors(value)[0];
    return first === undefined ? 'value: does not match the asset profile' : formatError(first);
  };
}

const cache = new Map<string, ProfileChecker>();

/**
 * The checker of a profile, shared by every asset with an equal profile (labels such as `unit`
 * and key order do not matter). A profile that checkProfile refuses compiles to a checker that
 * refuses every value with that reason: values are never accepted against a rule that could not
 * be compiled, and one bad asset does not stop its device's other assets.
 */
export function compileProfile(profile: AssetProfile): ProfileChecker {
  let schema: Record<string, unknown>;
  try {
    schema = prepare(profile);
  } catch (error) {
    if (!(error instanceof ProfileError)) throw error;
    const reason = `asset profile is invalid: ${error.message}`;
    return () => reason;
  }
  const key = canonical(schema);
  let checker = cache.get(key);
  if (checker === undefined) {
    checker = build(schema);
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(key, checker);
  }
  return checker;
}

/** Number of distinct compiled profiles held (for metrics and tests). */
export function profileCacheSize(): number {
  return cache.size;
}
