/**
 * The body of a delivery, `{"events":[…]}`, exactly as JSON.stringify({ events }) writes it. The
 * events of a record that several integrations of a process deliver are the same objects for all
 * of them (SharedParses): shared, each is written as JSON once and frozen with its text, which
 * every request that carries it reuses. Other events are written each time.
 */

/** An event's JSON, kept on a shared event (a symbol: JSON.stringify and key listings skip it). */
const TEXT = Symbol('json');

/** Marks `events` as shared: each is written as JSON now, and frozen with its text. */
export function shareEvents(events: readonly object[]): void {
  for (const event of events) {
    if (Object.isFrozen(event)) continue;
    Object.defineProperty(event, TEXT, { value: JSON.stringify(event) ?? 'null' });
    Object.freeze(event);
  }
}

export function eventsBody(events: readonly unknown[]): string {
  const texts = new Array<string>(events.length);
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as { [TEXT]?: string } | null | undefined;
    // As JSON.stringify writes an array's element: what has no JSON form is null.
    texts[i] = (typeof event === 'object' && event !== null ? event[TEXT] : undefined) ?? JSON.stringify(event) ?? 'null';
  }
  return `{"events":[${texts.join(',')}]}`;
}
