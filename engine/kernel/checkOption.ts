/** Option checks shared by the factories that validate numbers (`name` is what the message names). */
export function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${name} must be a positive integer`);
  return value;
}

/** Zero included; Infinity allowed (e.g. retries that never give up). */
export function nonNegative(value: number, name: string): number {
  if (!(value >= 0)) throw new TypeError(`${name} must be >= 0`);
  return value;
}
