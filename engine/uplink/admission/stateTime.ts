/**
 * The time of an asset state (processUplink.ts, spec §2.1–2.2): `at` as an ISO 8601 string, or in
 * CBOR a tag 0 / 1 / 1001 time; the default when absent or null; and why a time is refused, in or
 * outside the device's AtWindow.
 */
import type { UplinkEnvelope } from '../../../schemas/messages.ts';
import type { AtWindow } from './compileDevice.ts';
import { CborMap, CborTag } from './decodeCbor.ts';
import { parseTimestamp } from './parseTimestamp.ts';

const TAG_DATE_TIME = 0;
const TAG_EPOCH = 1;
const TAG_EXTENDED_TIME = 1001;

function epochSeconds(s: unknown): number {
  if (typeof s !== 'number') return NaN;
  const ms = Math.round(s * 1000);
  return Number.isSafeInteger(ms) ? ms : NaN;
}

/** RFC 9581 extended time, the subset: {1: seconds} plus at most one of -3 / -6 / -9 (ms/µs/ns). */
function extendedTime(content: unknown): number {
  if (!(content instanceof CborMap)) return NaN;
  let seconds: unknown;
  let fraction = 0;
  let fractions = 0;
  for (const [k, v] of content.entries) {
    if (k === 1) seconds = v;
    else if ((k === -3 || k === -6 || k === -9) && Number.isSafeInteger(v) && (v as number) >= 0) {
      fraction = (v as number) / 10 ** (-k - 3);
      fractions++;
    } else return NaN;
  }
  if (fractions > 1 || (fractions === 1 && !Number.isSafeInteger(seconds)) || fraction >= 1000) return NaN;
  const ms = epochSeconds(seconds);
  return Number.isNaN(ms) ? NaN : ms + Math.floor(fraction);
}

/** Epoch ms of an `at`, the default when absent or null, NaN when malformed. */
export function resolveAt(at: unknown, defaultTs: number, cbor: boolean): number {
  if (at === undefined || at === null) return defaultTs;
  if (typeof at === 'string') return parseTimestamp(at);
  if (cbor && at instanceof CborTag) {
    if (at.tag === TAG_DATE_TIME) return typeof at.value === 'string' ? parseTimestamp(at.value) : NaN;
    if (at.tag === TAG_EPOCH) return epochSeconds(at.value);
    if (at.tag === TAG_EXTENDED_TIME) return extendedTime(at.value);
  }
  return NaN;
}

export function describeAt(at: unknown, cbor: boolean): string {
  const hint = 'e.g. "2024-05-01T12:00:00Z"';
  if (typeof at === 'string') {
    const shown = at.length > 64 ? `${JSON.stringify(at.slice(0, 61))}...` : JSON.stringify(at);
    return `at ${shown} is not an ISO 8601 timestamp with date and time (${hint})`;
  }
  if (at instanceof CborTag) {
    if (at.tag === TAG_DATE_TIME && typeof at.value === 'string') return `at (tag 0) ${describeAt(at.value, cbor).slice(3)}`;
    return `at: CBOR tag ${at.tag} does not hold a time this service reads (tag 0 date-time string, tag 1 epoch seconds, tag 1001 {1: seconds, one of -3|-6|-9: fraction})`;
  }
  if (typeof at === 'number') {
    return `at must be an ISO 8601 timestamp string (${hint}), not a number${cbor ? '; CBOR senders may tag epoch seconds with tag 1' : ''}`;
  }
  return `at must be an ISO 8601 timestamp string (${hint})`;
}

export function iso(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? `${ms} ms` : d.toISOString();
}

/** Why a parsed time is outside the window; `fromNetwork`: the state had no `at`, the network's receive time stood in. */
export function outsideWindow(env: UplinkEnvelope, ts: number, fromNetwork: boolean, window: AtWindow): string {
  const what = fromNetwork ? `the receive time the network reported (${iso(ts)}), which stands in for a missing at,` : `at ${iso(ts)}`;
  if (ts < window.minAt) return `${what} is before ${iso(window.minAt)}, the earliest measurement time accepted`;
  return `${what} is more than ${window.maxAheadMs} ms ahead of the receive time ${iso(env.receivedAt)}: a clock that is not set, or the wrong unit`;
}
