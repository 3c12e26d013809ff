/**
 * Epoch ms → the string Date.prototype.toISOString gives (`2024-05-01T12:00:00.000Z`), by integer
 * arithmetic: every stored state and every accepted uplink is stamped with one, and building a Date
 * for it costs about three times as much. Years outside 0000–9999 (the ±YYYYYY form) and anything
 * that is not an integer go through Date itself.
 */

/** 0000-01-01T00:00:00.000Z and one past 9999-12-31T23:59:59.999Z, epoch ms. */
const MIN_MS = -62_167_219_200_000;
const MAX_MS = 253_402_300_800_000;

function two(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

export function isoTime(ms: number): string {
  if (!(Number.isInteger(ms) && ms >= MIN_MS && ms < MAX_MS)) return new Date(ms).toISOString();
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  // Civil date from days since 1970-01-01 (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  const y = year < 1000 ? `${year}`.padStart(4, '0') : `${year}`;
  return `${y}-${two(month)}-${two(day)}T${two(hours)}:${two(minutes)}:${two(seconds)}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}
