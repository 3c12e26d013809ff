/**
 * What a storable JSON value is, in one place: plain JSON values only (schemas/messages.ts
 * JsonValue), with finite numbers, nested no deeper than MAX_JSON_DEPTH. Admission checks every
 * state with it, the envelope codec every state a record carries, and the state stores every row
 * (engine/uplink/pipeline/checkStateRows.ts); the envelope's writer and reader and the conversion
 * CBOR codec nest no deeper either. Values come from JSON.parse (1e400 parses to Infinity), from the
 * CBOR decoder (markers for what JSON cannot hold), from binary decoders (any JavaScript value) and
 * from records on the log, so nothing else is trusted to have produced clean data.
 */

/**
 * A value that is no JSON value but knows why (the CBOR decoder's markers for a tag, a map with
 * other than text keys, a simple value) holds the reason under this key.
 */
export const notJson: unique symbol = Symbol('why this is not a JSON value');

/**
 * The one nesting limit: of a body (JSON and CBOR alike) and so of any value it carries, deep
 * enough for any real state, shallow enough for any stack (and it stops a cyclic object).
 */
export const MAX_JSON_DEPTH = 32;

export interface ValueProblem {
  code: 'TOO_DEEP' | 'INVALID_STATE';
  reason: string;
}

interface Found {
  code: ValueProblem['code'];
  what: string;
  /** Path from the checked value down to the offender, built only on failure. */
  path: Array<string | number>;
}

function describe(value: unknown): string | undefined {
  switch (typeof value) {
    case 'number':
      return `number ${value} is not finite (NaN and ±Infinity cannot be stored; 1e400 overflows a 64-bit float)`;
    case 'bigint':
      return `integer ${value} is outside ±(2^53−1) and cannot be stored exactly`;
    case 'undefined':
      return 'undefined is not a JSON value';
    case 'function':
    case 'symbol':
      return `a ${typeof value} is not a JSON value`;
    default:
      break;
  }
  if (value instanceof Uint8Array) return 'a byte string is not a JSON value';
  const why = (value as { [notJson]?: unknown })[notJson];
  if (typeof why === 'string') return why;
  return `a ${(value as object).constructor?.name ?? 'prototype-less'} object is not a JSON value`;
}

function tooDeep(): Found {
  return { code: 'TOO_DEEP', what: `nesting deeper than ${MAX_JSON_DEPTH} levels`, path: [] };
}

function walk(value: unknown, depth: number): Found | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : { code: 'INVALID_STATE', what: describe(value)!, path: [] };
    case 'object': {
      if (value === null) return undefined;
      if (Array.isArray(value)) {
        if (depth >= MAX_JSON_DEPTH) return tooDeep();
        for (let i = 0; i < value.length; i++) {
          const found = walk(value[i], depth + 1);
          if (found !== undefined) {
            found.path.unshift(i);
            return found;
          }
        }
        return undefined;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) break;
      if (depth >= MAX_JSON_DEPTH) return tooDeep();
      for (const key in value) {
        const found = walk((value as Record<string, unknown>)[key], depth + 1);
        if (found !== undefined) {
          found.path.unshift(key);
          return found;
        }
      }
      return undefined;
    }
    default:
      break;
  }
  return { code: 'INVALID_STATE', what: describe(value)!, path: [] };
}

/**
 * Undefined when `value` is a storable JSON value; otherwise the problem, its reason naming the
 * path under `label` (e.g. "value/location/latitude: number Infinity is not finite …").
 * `depth` is how many containers already enclose `value` in its message.
 */
export function checkJsonValue(value: unknown, depth: number, label = 'value'): ValueProblem | undefined {
  const found = walk(value, depth);
  if (found === undefined) return undefined;
  const path = found.path.length === 0 ? label : `${label}/${found.path.join('/')}`;
  return { code: found.code, reason: `${path}: ${found.what}` };
}
