/**
 * What one delivery attempt came to, from the receiver's answer (or its absence), as the retry
 * schedule (retrySchedule.ts) and the integration's status read it:
 *
 * - `delivered`: a 2xx. Nothing else counts as success: unlike brokers that take a 404 for one, a
 *   receiver that did not take the events has not got them.
 * - `disable`: 410 Gone, the receiver saying that this endpoint is gone for good.
 * - `retry`: any other status (3xx included: redirects are not followed, so a moved endpoint is a
 *   failure the operator sees), a timeout, or a connection error. On 429 and 503 a `Retry-After`
 *   (delay-seconds or an HTTP date, RFC 9110 §10.2.3) says when to come back.
 */
import type { DeliveryOutcome } from '../ports/webhooks.ts';

export type { DeliveryOutcome } from '../ports/webhooks.ts';

/** The outcome of an HTTP answer of `status`; `retryAfter` is the header as received, `nowMs` when it was. */
export function classifyAnswer(status: number, retryAfter: string | undefined, nowMs: number): DeliveryOutcome {
  if (status >= 200 && status <= 299) return { kind: 'delivered', status };
  if (status === 410) return { kind: 'disable', reason: 'gone', status };
  if (status === 429 || status === 503) {
    const retryAfterMs = parseRetryAfter(retryAfter, nowMs);
    if (retryAfterMs !== undefined) return { kind: 'retry', reason: 'status', status, retryAfterMs };
  }
  return { kind: 'retry', reason: 'status', status };
}

/** Longest Retry-After taken as given, before the schedule's own cap applies: about a year. */
const MAX_RETRY_AFTER_S = 366 * 24 * 3600;
const SECONDS_RE = /^\d{1,12}$/;
/** IMF-fixdate, the form RFC 9110 says senders use (the obsolete forms are not accepted). */
const HTTP_DATE_RE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** Milliseconds to wait per a Retry-After header; undefined when absent or malformed (then the schedule alone decides). */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (SECONDS_RE.test(text)) return Math.min(Number(text), MAX_RETRY_AFTER_S) * 1000;
  if (!HTTP_DATE_RE.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - nowMs), MAX_RETRY_AFTER_S * 1000);
}
