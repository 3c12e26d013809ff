/**
 * What every list of the HTTP API shares (keyset pages): `?limit=` and an opaque `?cursor=` in, and
 * `{items, next}` out, `next` absent on the last page.
 */
import Type, { type TSchema } from 'typebox';

export const PageLimit = Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'page size, default 100' }));

export function pageCursor(maxLength: number) {
  return Type.Optional(Type.String({ minLength: 1, maxLength, pattern: '^[A-Za-z0-9_-]+$', description: 'opaque, from `next` of the previous page' }));
}

export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    next: Type.Optional(Type.String({ description: 'cursor of the next page; absent on the last one' })),
  });
}
