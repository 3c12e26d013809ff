/**
 * A payload codec: binary uplink → map of asset → value, and (when the format can) device command
 * → binary downlink (spec §2.2, §2.4). Functions never use `this`, so `codec.decode` can be passed
 * around on its own.
 */
import { FleetError } from '../kernel/errors.ts';
import { isPlainObject } from '../kernel/isPlainObject.ts';

export interface DecodeMeta {
  /** LoRaWAN FPort of the uplink, when the network reported one. */
  fPort?: number;
}

export interface Codec {
  /** Throws only FleetError('DECODE_FAILED'), whatever the bytes. */
  decode(bytes: Uint8Array, meta?: DecodeMeta): Record<string, unknown>;
  /** Throws only FleetError('VALIDATION_FAILED'), whatever the command. */
  encode?(command: Record<string, unknown>): Uint8Array;
}

/**
 * Guards a decode function so that anything it throws leaves as DECODE_FAILED: a bug or an engine
 * limit (stack, memory) on hostile bytes must not escape as another exception type.
 */
export function guardDecode(name: string, decode: (bytes: Uint8Array, meta?: DecodeMeta) => Record<string, unknown>): Codec['decode'] {
  return (bytes, meta) => {
    if (!(bytes instanceof Uint8Array)) throw notBytes(name);
    try {
      return decode(bytes, meta);
    } catch (error) {
      throw asDecodeFailed(name, error);
    }
  };
}

/** The same guard for encode, with VALIDATION_FAILED. */
export function guardEncode(name: string, encode: (command: Record<string, unknown>) => Uint8Array): NonNullable<Codec['encode']> {
  return (command) => {
    if (!isRecord(command)) throw notCommand(name);
    try {
      return encode(command);
    } catch (error) {
      throw asValidationFailed(name, error);
    }
  };
}

export function notBytes(name: string): FleetError {
  return new FleetError('DECODE_FAILED', `${name}: payload must be bytes`);
}

export function notCommand(name: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `${name}: a command must be an object of asset → value`);
}

export function asDecodeFailed(name: string, error: unknown): FleetError {
  if (error instanceof FleetError && error.code === 'DECODE_FAILED') return error;
  return new FleetError('DECODE_FAILED', `${name}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

export function asValidationFailed(name: string, error: unknown): FleetError {
  if (error instanceof FleetError && error.code === 'VALIDATION_FAILED') return error;
  return new FleetError('VALIDATION_FAILED', `${name}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

/** What a command, or a nesting level of a state, must be: a plain object (engine/kernel/isPlainObject.ts). */
export const isRecord = isPlainObject;

/** Sets `value` at a dotted path, creating objects on the way; `__proto__` is an ordinary key. */
export function setPath(out: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let target = out;
  for (let i = 0; i < path.length - 1; i++) {
    const next = Object.hasOwn(target, path[i]) ? target[path[i]] : undefined;
    if (typeof next === 'object' && next !== null && !Array.isArray(next)) target = next as Record<string, unknown>;
    else { const fresh: Record<string, unknown> = {}; defineValue(target, path[i], fresh); target = fresh; }
  }
  defineValue(target, path[path.length - 1], value);
}

export function defineValue(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Reads a dotted path: the flat key first (`a.b` as one key), then the nested one. */
export function getPath(command: Record<string, unknown>, path: readonly string[]): unknown {
  if (path.length > 1) {
    const flat = path.join('.');
    if (Object.hasOwn(command, flat)) return command[flat];
  }
  let target: unknown = command;
  for (const key of path) {
    if (typeof target !== 'object' || target === null || !Object.hasOwn(target, key)) return undefined;
    target = (target as Record<string, unknown>)[key];
  }
  return target;
}

/**
 * The engine's canonical copy of a property name. Asset names parsed from stored JSON values or
 * built at run time are not internalized, and a property store with such a key misses V8's inline
 * caches on every call (measured 50× slower); a key read back from an object is canonical.
 */
export function internalize(key: string): string {
  return Object.keys({ [key]: 0 })[0];
}
