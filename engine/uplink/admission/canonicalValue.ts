/**
 * String values of a state in their canonical form (DESIGN.md §9 "Canonical strings are what the
 * rules check"): every string, and every object key, in NFC. A profile's `enum: ["Ä"]` then
 * accepts "Ä" however the device composed it, and the value stored is the one the profile checked,
 * so equality filters and GROUP BY in ClickHouse see one "Ä", not two. A leading BOM is not removed
 * from values: inside a value it is data the sender chose, unlike in a name.
 *
 * A lone surrogate (JSON `"\ud800"` parses to one; a binary decoder can make one) is no
 * character, cannot be written as UTF-8 and would reach the store replaced by U+FFFD: the value is
 * refused (INVALID_TEXT) instead.
 *
 * Cheap on the hot path: strings whose code units are all below U+0300 (ASCII, Latin-1, most
 * Latin text) are NFC already, and nothing is copied unless a string changes.
 */
export type CanonicalValue = { value: unknown; problem?: undefined } | { value?: undefined; problem: string };

function needsNormalising(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x300) return true;
  return false;
}

function hex(s: string, i: number): string {
  return `U+${s.charCodeAt(i).toString(16).toUpperCase()}`;
}

function loneAt(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const n = s.charCodeAt(i + 1);
      if (n >= 0xdc00 && n <= 0xdfff) { i++; continue; }
      return i;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

class Refused {
  readonly reason: string;
  constructor(reason: string) {
    this.reason = reason;
  }
}

function str(s: string, path: string): string {
  if (!needsNormalising(s)) return s;
  if (!s.isWellFormed()) throw new Refused(`${path}: string holds a lone surrogate (${hex(s, loneAt(s))}), which is not a character; send well-formed UTF-8`);
  return s.normalize('NFC');
}

/** Already checked by checkJsonValue: plain JSON values only. */
function walk(value: unknown, path: string): unknown {
  if (typeof value === 'string') return str(value, path);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = walk(value[i], `${path}/${i}`);
      if (v !== value[i]) (copy ??= value.slice())[i] = v;
    }
    return copy ?? value;
  }
  let changed = false;
  const entries: Array<[string, unknown]> = [];
  const seen = new Set<string>();
  for (const key in value) {
    const v0 = (value as Record<string, unknown>)[key];
    const k = str(key, `${path}/${key}`);
    const v = walk(v0, `${path}/${k}`);
    if (k !== key || v !== v0) changed = true;
    if (seen.has(k)) throw new Refused(`${path}: keys ${JSON.stringify(k)} appear twice once in NFC`);
    seen.add(k);
    entries.push([k, v]);
  }
  // fromEntries defines own properties: a "__proto__" key stays a key.
  return changed ? Object.fromEntries(entries) : value;
}

/** Whether any string or key below `value` has a code unit from U+0300 up (no allocation: the hot path). */
export function needsCanonicalForm(value: unknown): boolean {
  if (typeof value === 'string') return needsNormalising(value);
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (needsCanonicalForm(value[i])) return true;
    return false;
  }
  for (const key in value) {
    if (needsNormalising(key) || needsCanonicalForm((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** The value with every string in NFC, or why it is refused (a lone surrogate). */
export function canonicalValue(value: unknown, label = 'value'): CanonicalValue {
  if (!needsCanonicalForm(value)) return { value };
  try {
    return { value: walk(value, label) };
  } catch (error) {
    if (error instanceof Refused) return { problem: error.reason };
    throw error;
  }
}
