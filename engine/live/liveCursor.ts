/**
 * Event ids of live streams (docs/live.md "Cursors"). A cursor is a position in every partition of
 * topic `live`: for each partition, the record offset and the index of the next event within that
 * record that the holder has not seen. It is taken after an event is fanned out, so every event of
 * every partition before it was either sent to the subscriber or did not match its filter: resuming
 * from it on any edge (they all read the same topic) continues without a gap and without repeats.
 *
 * Text form: `1.` then per partition `<offset base36>.<index base36>` joined by `~`, e.g.
 * `1.2s.0~0.0~1b.3`. Unknown versions and malformed text decode to undefined (the client is told
 * `reset`, never an error: an id from an older deployment is not the client's fault).
 */

/** Per partition: [record offset, event index within the record]. */
export type LivePosition = readonly [number, number];
export type LiveCursor = readonly LivePosition[];

/** Longest cursor text accepted; a longer Last-Event-ID is refused before it is parsed. */
export const MAX_CURSOR_CHARS = 4096;
const PART = /^([0-9a-z]{1,11})\.([0-9a-z]{1,6})$/;

export function encodeCursor(cursor: LiveCursor): string {
  return `1.${cursor.map(([offset, index]) => `${offset.toString(36)}.${index.toString(36)}`).join('~')}`;
}

export function decodeCursor(text: string, partitions: number): LiveCursor | undefined {
  if (text.length > MAX_CURSOR_CHARS || !text.startsWith('1.')) return undefined;
  const parts = text.slice(2).split('~');
  if (parts.length !== partitions) return undefined;
  const cursor: LivePosition[] = [];
  for (const part of parts) {
    const match = PART.exec(part);
    if (match === null) return undefined;
    const offset = parseInt(match[1], 36);
    const index = parseInt(match[2], 36);
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(index)) return undefined;
    cursor.push([offset, index]);
  }
  return cursor;
}

/** a < b in the order of one partition. */
export function before(a: LivePosition, b: LivePosition): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}
