/**
 * Keyset pagination of an asset's state history over the StateStore port, which knows only
 * `from`/`to`/`limit`/`order` by `ts`. Pages are ordered by (ts, receivedAt, uplinkId, seq) —
 * unique per asset, since the readings of one uplink at one asset and time are numbered (seq) and
 * the store hides replayed duplicates — so the order is total and stable while new states arrive,
 * and the same order the latest state is picked by. The cursor is opaque to clients: base64url of
 * the last row's ts, receive time, uplink id and seq. A cursor without seq (made before it was in
 * the order) stands for seq 0: the only number rows stored before then have.
 *
 * The store orders ties on ts by receivedAt, then uplinkId, then seq, in the query's direction (store
 * contract), which is this order, so a limit cuts a page exactly where it should. What the store cannot do is start inside a
 * ts: the states sharing the cursor's ts are read whole (at most GROUP_MAX of them; no device sends
 * more states of one asset for one millisecond — a batch without `at` puts at most 1000 there) and
 * those past the cursor kept.
 */
import { FleetError } from '../../../../engine/kernel/errors.ts';
import type { Order, StateStore, StoredState } from '../../../../engine/ports/store.ts';

export const GROUP_MAX = 10_000;

export interface HistoryPageQuery {
  deviceId: string;
  asset: string;
  /** Inclusive, epoch ms. */
  from?: number;
  /** Exclusive, epoch ms. */
  to?: number;
  limit: number;
  order: Order;
  cursor?: string;
}

export interface HistoryPageResult {
  items: StoredState[];
  /** Cursor of the next page, when there is one. */
  next?: string;
}

interface Cursor {
  ts: number;
  receivedAt: number;
  uplinkId: string;
  seq: number;
}

export function encodeCursor(row: Pick<StoredState, 'ts' | 'receivedAt' | 'uplinkId' | 'seq'>, order: Order): string {
  return Buffer.from(JSON.stringify([row.ts, row.receivedAt, row.uplinkId, row.seq, order]), 'utf8').toString('base64url');
}

function invalidCursor(message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `query.cursor: ${message}`, {
    detail: { errors: [{ path: 'query.cursor', message }] },
  });
}

export function decodeCursor(text: string, order: Order): Cursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor('not a cursor of this API');
  }
  // Cursors of three items (ts, uplinkId, order) predate the receive time in the order: start again.
  // Four items (no seq) predate seq: seq 0, the number of every row stored before it.
  if (!Array.isArray(parsed) || (parsed.length !== 4 && parsed.length !== 5)) throw invalidCursor('not a cursor of this API');
  const [ts, receivedAt, uplinkId] = parsed as unknown[];
  const seq: unknown = parsed.length === 5 ? parsed[3] : 0;
  const cursorOrder: unknown = parsed[parsed.length - 1];
  if (!Number.isSafeInteger(ts) || !Number.isSafeInteger(receivedAt) || typeof uplinkId !== 'string' || uplinkId.length > 128) throw invalidCursor('not a cursor of this API');
  if (!Number.isSafeInteger(seq) || (seq as number) < 0) throw invalidCursor('not a cursor of this API');
  if (cursorOrder !== order) throw invalidCursor(`made for order=${String(cursorOrder)}; pass the same order`);
  return { ts: ts as number, receivedAt: receivedAt as number, uplinkId, seq: seq as number };
}

function compare(order: Order): (a: Cursor, b: Cursor) => number {
  const sign = order === 'asc' ? 1 : -1;
  return (a, b) => sign * (a.ts - b.ts || a.receivedAt - b.receivedAt || (a.uplinkId < b.uplinkId ? -1 : a.uplinkId > b.uplinkId ? 1 : 0) || a.seq - b.seq);
}

export async function historyPage(store: Pick<StateStore, 'history'>, q: HistoryPageQuery): Promise<HistoryPageResult> {
  const cmp = compare(q.order);
  const base = { deviceId: q.deviceId, asset: q.asset, order: q.order };
  const group = (ts: number) => store.history({ ...base, from: ts, to: ts + 1, limit: GROUP_MAX });
  let from = q.from;
  let to = q.to;
  const rows: StoredState[] = [];

  if (q.cursor !== undefined) {
    const cursor = decodeCursor(q.cursor, q.order);
    const inRange = (from === undefined || cursor.ts >= from) && (to === undefined || cursor.ts < to);
    if (inRange) for (const row of await group(cursor.ts)) if (cmp(row, cursor) > 0) rows.push(row);
    // The rest lies strictly beyond the cursor's ts.
    if (q.order === 'desc') to = to === undefined ? cursor.ts : Math.min(to, cursor.ts);
    else from = from === undefined ? cursor.ts + 1 : Math.max(from, cursor.ts + 1);
  }

  const wanted = q.limit + 1 - rows.length;
  if (wanted > 0 && (from === undefined || to === undefined || from < to)) {
    rows.push(...await store.history({ ...base, from, to, limit: wanted }));
  }

  // Already in order when the store keeps its contract; sorting keeps pages consistent if it does not.
  rows.sort(cmp);
  const items = rows.slice(0, q.limit);
  return rows.length > q.limit ? { items, next: encodeCursor(items[items.length - 1], q.order) } : { items };
}
