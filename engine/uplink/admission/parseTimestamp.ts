/**
 * `at` of an asset state (spec §2.1: "string, ISO 8601 timestamp") to epoch milliseconds.
 *
 * Accepted: ISO 8601 extended format with a full date and a time,
 *   YYYY-MM-DD 'T' hh:mm [ :ss [ (.|,) fraction ] ] [ Z | ±hh:mm | ±hhmm | ±hh ]
 * ('t' and 'z' in lower case too, as RFC 3339 §5.6 allows). Fractions beyond milliseconds are
 * truncated; second 60 (a leap second) counts as the first second of the next minute.
 *
 * Zone-less times are read as UTC: AllThingsTalk's own Python SDK sends
 * `datetime.utcnow().isoformat()` (no zone designator), and those SDKs must work unchanged.
 *
 * Refused: date-only or time-only strings, the basic format (20240501T120000Z), week and ordinal
 * dates, hour 24, out-of-range fields (2023-02-29, 12:60), a zone after a zone (`12:00Z+02:00`),
 * numbers (epoch values are ambiguous between s and ms; CBOR senders have tag 1 for that).
 */

const MAX_LENGTH = 64;

function digit(s: string, i: number): number {
  const c = s.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : -1;
}

/** Two digits at i as a number, or -1. */
function two(s: string, i: number): number {
  const a = digit(s, i);
  const b = digit(s, i + 1);
  return a < 0 || b < 0 ? -1 : a * 10 + b;
}

function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days since 1970-01-01 of a proleptic Gregorian date (no Date object: Date.UTC maps years 0–99 to 19xx). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const mp = (m + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Epoch ms of an ISO 8601 timestamp string, or NaN when the string is not one (see module doc). */
export function parseTimestamp(s: string): number {
  const n = s.length;
  if (n < 16 || n > MAX_LENGTH) return NaN;
  const y = digit(s, 0) * 1000 + digit(s, 1) * 100 + digit(s, 2) * 10 + digit(s, 3);
  if (digit(s, 0) < 0 || digit(s, 1) < 0 || digit(s, 2) < 0 || digit(s, 3) < 0) return NaN;
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return NaN; // '-'
  const mo = two(s, 5);
  const d = two(s, 8);
  if (mo < 1 || mo > 12 || d < 1) return NaN;
  if (d > (mo === 2 && isLeapYear(y) ? 29 : MONTH_DAYS[mo - 1])) return NaN;
  const t = s.charCodeAt(10);
  if (t !== 84 && t !== 116) return NaN; // 'T' | 't'
  const hh = two(s, 11);
  if (hh < 0 || hh > 23 || s.charCodeAt(13) !== 58) return NaN; // ':'
  const mi = two(s, 14);
  if (mi < 0 || mi > 59) return NaN;
  let i = 16;
  let ss = 0;
  let ms = 0;
  if (i < n && s.charCodeAt(i) === 58) {
    ss = two(s, i + 1);
    if (ss < 0 || ss > 60) return NaN;
    i += 3;
    const sep = s.charCodeAt(i);
    if (i < n && (sep === 46 || sep === 44)) { // '.' | ','
      i++;
      const start = i;
      let scale = 100;
      for (let c = digit(s, i); c >= 0; c = digit(s, ++i)) {
        ms += c * scale; // digits past the third add 0: truncated, integer arithmetic only
        scale = (scale / 10) | 0;
      }
      if (i === start) return NaN;
    }
  }
  let offsetMin = 0;
  if (i < n) {
    const z = s.charCodeAt(i);
    if (z === 90 || z === 122) { // 'Z' | 'z'
      i++;
    } else if (z === 43 || z === 45) { // '+' | '-'
      const oh = two(s, i + 1);
      if (oh < 0 || oh > 23) return NaN;
      i += 3;
      let om = 0;
      if (i < n) {
        if (s.charCodeAt(i) === 58) i++;
        om = two(s, i);
        if (om < 0 || om > 59) return NaN;
        i += 2;
      }
      offsetMin = (oh * 60 + om) * (z === 45 ? -1 : 1);
    } else {
      return NaN;
    }
    if (i !== n) return NaN;
  }
  return ((daysFromCivil(y, mo, d) * 24 + hh) * 60 + mi - offsetMin) * 60_000 + ss * 1000 + ms;
}
