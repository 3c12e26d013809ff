/**
 * Paging of the lists ordered oldest first by creation (devices of a ground, a partner's
 * activations): a page is the first `limit` rows of `limit + 1` asked for, and `next`, when there
 * are more, is the cursor after its last row, base64url of `createdAt.key`, opaque to clients.
 */
import { invalidField } from '../request/check.ts';

export interface ListCursor {
  createdAt: number;
  key: string;
}

export interface ListPage<T> {
  items: T[];
  next?: string;
}

/** Cursors whose key matches `keyPattern` (a regular expression source without anchors). */
export function listCursors(keyPattern: string): {
  decode(cursor: string, field?: string): ListCursor;
  page<T extends { createdAt: number }>(rows: T[], limit: number, keyOf: (row: T) => string): ListPage<T>;
} {
  const shape = new RegExp(`^([0-9]{1,16})\\.(${keyPattern})$`);
  return {
    decode(cursor, field = 'query.cursor') {
      const match = shape.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
      if (match === null || !Number.isSafeInteger(Number(match[1]))) throw invalidField(field, 'not a cursor of this list');
      return { createdAt: Number(match[1]), key: match[2] };
    },
    page(rows, limit, keyOf) {
      const items = rows.slice(0, limit);
      const page: ListPage<(typeof rows)[number]> = { items };
      if (rows.length > limit) {
        const last = items[items.length - 1];
        page.next = Buffer.from(`${last.createdAt}.${keyOf(last)}`, 'utf8').toString('base64url');
      }
      return page;
    },
  };
}
