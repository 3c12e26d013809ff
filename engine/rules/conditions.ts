/**
 * Whether a rule's condition (or its clear condition) holds for a value (schemas/rules.ts):
 *
 * - `above` / `below` / `outside`: a number strictly above, below, or outside [lower, higher];
 * - `equals`: the same JSON value (objects compared key by key, whatever their order);
 * - `outsideArea`: a location ({latitude, longitude} numbers) further than `radiusMeters` from the
 *   centre, by the haversine distance on a sphere of the Earth's mean radius;
 * - `silentFor`: never on a value (it is about the absence of values).
 *
 * A value of another kind (a string where a number is expected) never satisfies a condition.
 */
import type { Area, RuleClear, RuleCondition } from '../../schemas/rules.ts';

const EARTH_RADIUS_M = 6_371_008.8;

export type ValueTest = (value: unknown) => boolean;

export function valueTest(condition: RuleCondition | RuleClear): ValueTest {
  if ('above' in condition) return (v) => typeof v === 'number' && v > condition.above;
  if ('below' in condition) return (v) => typeof v === 'number' && v < condition.below;
  if ('outside' in condition) {
    const [low, high] = condition.outside;
    return (v) => typeof v === 'number' && (v < low || v > high);
  }
  if ('equals' in condition) {
    const expected = condition.equals;
    return (v) => sameJson(v, expected);
  }
  if ('outsideArea' in condition) {
    const area = condition.outsideArea;
    return (v) => {
      const distance = distanceFrom(area, v);
      return distance !== undefined && distance > area.radiusMeters;
    };
  }
  return () => false;
}

/** Metres from the area's centre to a location value; undefined for anything else. */
export function distanceFrom(area: Pick<Area, 'latitude' | 'longitude'>, value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { latitude, longitude } = value as { latitude?: unknown; longitude?: unknown };
  if (typeof latitude !== 'number' || typeof longitude !== 'number' || !Number.isFinite(latitude) || !Number.isFinite(longitude)) return undefined;
  const rad = Math.PI / 180;
  const dLat = (latitude - area.latitude) * rad;
  const dLon = (longitude - area.longitude) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(area.latitude * rad) * Math.cos(latitude * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => sameJson(item, other[i]));
  }
  const keys = Object.keys(a);
  const other = b as Record<string, unknown>;
  return keys.length === Object.keys(other).length && keys.every((key) => Object.hasOwn(other, key) && sameJson((a as Record<string, unknown>)[key], other[key]));
}
