/**
 * A ground's API keys (docs/grounds.md "API keys"): a named bearer token (`fsk_…`) that reaches one
 * ground with the role viewer or editor, until it is revoked or expires. Types of
 * engine/ports/groundKeyRegistry.ts derive from these; the edge validates requests with the same ones.
 */
import Type, { type Static } from 'typebox';
import { Page, PageLimit, pageCursor } from './page.ts';
import { EntityName, EpochMs, Id, KeyRole } from './registry.ts';

export { KeyRole } from './registry.ts';

/** The last millisecond of year 9999: later times are no date a client means. */
export const MAX_EXPIRES_AT = 253_402_300_799_999;

/** `createdBy` is the user who made the key; `lastUsedAt` when a process last authenticated it with the registry. */
export const GroundKey = Type.Object({
  id: Id,
  groundId: Id,
  name: EntityName,
  role: KeyRole,
  createdAt: EpochMs,
  createdBy: Id,
  expiresAt: Type.Optional(EpochMs),
  lastUsedAt: Type.Optional(EpochMs),
});
export type GroundKey = Static<typeof GroundKey>;

/** A key to create: `expiresAt` (epoch ms) must lie ahead; absent, the key lasts until revoked. */
export const NewGroundKey = Type.Object({
  name: EntityName,
  role: KeyRole,
  expiresAt: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EXPIRES_AT, description: 'epoch milliseconds, in the future' })),
}, { additionalProperties: false });
export type NewGroundKey = Static<typeof NewGroundKey>;

export const KeyQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1001 })),
  /** Only keys after this one in the order (created, then id). */
  after: Type.Optional(Type.Object({ createdAt: EpochMs, id: Id })),
});
export type KeyQuery = Static<typeof KeyQuery>;

// ---- HTTP ----

export const KeyCreateBody = NewGroundKey;
export type KeyCreateBody = NewGroundKey;

/** The answer to a created key: the only time its token is shown. */
export const CreatedKey = Type.Object({ ...GroundKey.properties, token: Type.String({ description: '`fsk_…`: shown once, stored only hashed' }) });
export type CreatedKey = Static<typeof CreatedKey>;

export const KeyParams = Type.Object({ groundId: Id, keyId: Id });
export const KeyListQuery = Type.Object({ limit: PageLimit, cursor: pageCursor(128) }, { additionalProperties: false });
export type KeyListQuery = Static<typeof KeyListQuery>;
export const KeyPage = Page(GroundKey);
