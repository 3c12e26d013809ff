/**
 * Canonical strings (DESIGN.md §9: "Canonical strings (NFC, no BOM) are what the rules check").
 * Two strings people cannot tell apart must not be two names: "Ä" precomposed (U+00C4) and
 * decomposed (A + U+0308) are one name once both are in NFC; "\uFEFFthermo" (a byte order mark an
 * editor left in front) is "thermo". Rules of length and uniqueness run on the canonical form, and
 * the canonical form is what is stored.
 *
 * A lone surrogate (half of a UTF-16 pair, e.g. from JSON `"\ud800"`) is no character at all: no
 * UTF-8 encoding holds it, so PostgreSQL, ClickHouse and every client would each replace it their
 * own way. It is refused, never repaired.
 */

/** One leading U+FEFF (or several: each paste adds one) is a byte order mark, not text. */
const LEADING_BOMS = /^\uFEFF+/;

/**
 * What a name (an identifier people compare by eye: device names, hardware ids, ground names) may
 * not hold besides lone surrogates: control characters (C0, DEL, C1), format characters (\p{Cf}:
 * zero-width space and joiners, bidi marks and overrides, soft hyphen, U+FEFF inside the text, …),
 * line and paragraph separators, and noncharacters (U+FDD0–U+FDEF, U+xxFFFE/U+xxFFFF). Each of them
 * is invisible or reorders what is shown, so "ther\u200Bmo" would be a second "thermo".
 * Zero-width joiners are refused too, although emoji sequences and some scripts use them: a name
 * is an identifier, and a twin that differs only by a joiner is worse than a plainer name.
 */
const NAME_FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\p{Cf}\u2028\u2029\uFDD0-\uFDEF\uFFFE\uFFFF\u{1FFFE}\u{1FFFF}\u{2FFFE}\u{2FFFF}\u{3FFFE}\u{3FFFF}\u{4FFFE}\u{4FFFF}\u{5FFFE}\u{5FFFF}\u{6FFFE}\u{6FFFF}\u{7FFFE}\u{7FFFF}\u{8FFFE}\u{8FFFF}\u{9FFFE}\u{9FFFF}\u{AFFFE}\u{AFFFF}\u{BFFFE}\u{BFFFF}\u{CFFFE}\u{CFFFF}\u{DFFFE}\u{DFFFF}\u{EFFFE}\u{EFFFF}\u{FFFFE}\u{FFFFF}\u{10FFFE}\u{10FFFF}]/u;

export type TextProblem = 'lone-surrogate' | 'invisible';

export interface CanonicalResult {
  /** The canonical string, when the input has one. */
  text?: string;
  problem?: TextProblem;
  /** The first offending code point, as U+XXXX. */
  at?: string;
}

function codePoint(s: string, index: number): string {
  return `U+${s.codePointAt(index)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

function loneSurrogateIndex(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return i;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

/**
 * Free text (titles, descriptions, string values): leading BOMs stripped, NFC. Refused: lone
 * surrogates only — free text may carry bidi marks and joiners that the script it is written in
 * needs.
 */
export function canonicalText(s: string): CanonicalResult {
  if (!s.isWellFormed()) return { problem: 'lone-surrogate', at: codePoint(s, loneSurrogateIndex(s)) };
  return { text: s.replace(LEADING_BOMS, '').normalize('NFC') };
}

/** A name: canonicalText, then refused when it holds an invisible or control character (NAME_FORBIDDEN). */
export function canonicalName(s: string): CanonicalResult {
  const r = canonicalText(s);
  if (r.text === undefined) return r;
  const m = NAME_FORBIDDEN.exec(r.text);
  if (m !== null) return { problem: 'invisible', at: codePoint(r.text, m.index) };
  return r;
}

/**
 * The canonical text of `object[key]` when it is a string that has one, else the object as it is:
 * for an edge whose schema checks lengths before the registry makes names canonical (the registry
 * refuses what has no canonical form, with the reason).
 */
export function withCanonicalField<T>(object: T, key: string): T {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) return object;
  const value = (object as Record<string, unknown>)[key];
  if (typeof value !== 'string') return object;
  const text = canonicalText(value).text;
  return text === undefined || text === value ? object : { ...object, [key]: text };
}

/** Why a string was refused, for an error message. */
export function describeTextProblem(problem: TextProblem, at: string | undefined): string {
  return problem === 'lone-surrogate'
    ? `holds a lone surrogate (${at}), which is not a character: send well-formed UTF-8/UTF-16`
    : `holds an invisible or control character (${at}) that would make a look-alike of another name`;
}
