/**
 * A mend of kafkajs 2.2.4's RequestQueue (src/network/requestQueue/index.js), applied once by
 * createKafkaLog.ts. After every answer it schedules a look at its pending requests in
 * `throttledUntil - Date.now()` ms, also when none is pending; `throttledUntil` is -1 until a
 * broker throttles, so that is a timer of minus the epoch: Node 24 warns (TimeoutNegativeWarning),
 * sets it to 1 ms, and each such look schedules the next, so every idle connection wakes up every
 * millisecond (kafkajs issues #1751 and #1704, unreleased upstream).
 *
 * With nothing pending there is nothing to look at: a request queued later (throttled, or past
 * maxInFlightRequests) schedules its own look when it is pushed, and an answer looks at once.
 */
import { createRequire } from 'node:module';

interface RequestQueueInternals {
  pending: unknown[];
  scheduleCheckPendingRequests(): void;
}

const MENDED = Symbol.for('fleetstream.kafkajs.requestQueueMended');

/** kafkajs's RequestQueue class: the one its connections use (one module cache). */
export function kafkaRequestQueueClass(): { prototype: RequestQueueInternals } {
  return createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js');
}

export function mendRequestQueue(): void {
  const prototype = kafkaRequestQueueClass().prototype as RequestQueueInternals & { [MENDED]?: true };
  if (prototype[MENDED] || typeof prototype.scheduleCheckPendingRequests !== 'function') return;
  const schedule = prototype.scheduleCheckPendingRequests;
  prototype.scheduleCheckPendingRequests = function (this: RequestQueueInternals) {
    if (this.pending.length > 0) schedule.call(this);
  };
  prototype[MENDED] = true;
}
