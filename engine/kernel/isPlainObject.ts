/**
 * A plain object as JSON.parse, a CBOR map with text keys or an object literal makes it: not null,
 * not an array, and no prototype but Object.prototype (or none), so class instances, Maps, byte
 * arrays and decoder markers never pass for a JSON object.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
