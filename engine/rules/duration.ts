/**
 * ISO 8601 durations of rules (schemas/rules.ts RuleDuration): weeks, days, hours, minutes and
 * seconds (to the millisecond), e.g. `PT3S`, `PT15M`, `P1D`, `P1DT12H`, `PT0.5S`, `P2W`. A day is
 * 24 hours (rules count elapsed time, not calendar days). Years and months, whose length varies,
 * are not durations here.
 */
const DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,3}))?S)?)?$/;

/** Milliseconds, or a reason the text is not a duration this service reads. */
export function parseDuration(text: string): { ms: number } | { problem: string } {
  const match = DURATION.exec(text);
  if (match === null || text === 'P' || text.endsWith('T')) {
    return { problem: /^P.*[YM].*$/.test(text) && !/T.*M/.test(text) ? 'years and months are not durations here (their length varies): use days (P30D)' : 'not an ISO 8601 duration such as PT30S, PT15M, P1D' };
  }
  const [, weeks, days, hours, minutes, seconds, fraction] = match;
  const n = (part: string | undefined) => (part === undefined ? 0 : Number(part));
  const ms = (((n(weeks) * 7 + n(days)) * 24 + n(hours)) * 60 + n(minutes)) * 60_000
    + n(seconds) * 1000 + (fraction === undefined ? 0 : Number(fraction.padEnd(3, '0')));
  if (!Number.isSafeInteger(ms)) return { problem: 'too long' };
  return { ms };
}

/** Milliseconds of a duration already checked by parseDuration (a stored rule's). */
export function durationMs(text: string): number {
  const parsed = parseDuration(text);
  if ('problem' in parsed) throw new Error(`not a duration: ${text}`);
  return parsed.ms;
}
