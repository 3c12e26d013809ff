/**
 * Integrations (issue: "push every state to applications"): a ground's receivers of its events,
 * as the registry keeps them (engine/ports/integrationRegistry.ts) and the HTTP edge shows them
 * (adapters/http/routes/integrations/). The signing secret is never part of an Integration: it is
 * answered once, when created or rotated.
 */
import Type, { type Static } from 'typebox';
import { Page, PageLimit, pageCursor } from './page.ts';
import { AssetName, EntityName, EpochMs, Id } from './registry.ts';

/** What an integration receives: stored states, refused uplinks, command changes, alarms (once rules raise them). */
export const IntegrationEventType = Type.Union([Type.Literal('state'), Type.Literal('rejection'), Type.Literal('command'), Type.Literal('alarm')]);
export type IntegrationEventType = Static<typeof IntegrationEventType>;

/** How events leave: a signed HTTP POST (Standard Webhooks). The only kind so far. */
export const IntegrationKind = Type.Literal('webhook');
export type IntegrationKind = Static<typeof IntegrationKind>;

export const MAX_INTEGRATION_DEVICES = 1000;
export const MAX_INTEGRATION_ASSETS = 256;
export const MAX_INTEGRATION_URL = 2048;

/** The receiver's URL; its destination is checked by the edge (adapters/webhooks/webhookUrl.ts). */
export const IntegrationUrl = Type.String({ minLength: 1, maxLength: MAX_INTEGRATION_URL, pattern: '^https?://[^\\s]+$', description: 'https:// (http:// only to hosts the operator allows)' });

export const IntegrationEvents = Type.Array(IntegrationEventType, { minItems: 1, maxItems: 4, uniqueItems: true });
/** Only these devices of the ground; absent: every device. */
export const IntegrationDevices = Type.Array(Id, { minItems: 1, maxItems: MAX_INTEGRATION_DEVICES, uniqueItems: true });
/** Only assets of these names; absent: every asset. */
export const IntegrationAssets = Type.Array(AssetName, { minItems: 1, maxItems: MAX_INTEGRATION_ASSETS, uniqueItems: true });
/** Extra request headers (engine/integrations/customHeaders.ts checks names, values and reserved ones). */
export const IntegrationHeaders = Type.Record(Type.String(), Type.String(), { description: 'header name → value; at most 20, webhook-*, content-type, host and hop-by-hop headers refused' });

export const IntegrationStatus = Type.Union([Type.Literal('active'), Type.Literal('disabled')]);
export type IntegrationStatus = Static<typeof IntegrationStatus>;

export const Integration = Type.Object({
  id: Id,
  groundId: Id,
  name: EntityName,
  kind: IntegrationKind,
  url: IntegrationUrl,
  events: IntegrationEvents,
  devices: Type.Optional(IntegrationDevices),
  assets: Type.Optional(IntegrationAssets),
  headers: IntegrationHeaders,
  status: IntegrationStatus,
  /** Why it is disabled: `gone` (the receiver answered 410), `manual` (a member disabled it). */
  disabledReason: Type.Optional(Type.String({ maxLength: 256 })),
  createdAt: EpochMs,
  updatedAt: EpochMs,
  /** While the previous secret still signs too (after a rotation), until when. */
  previousSecretValidUntil: Type.Optional(EpochMs),
});
export type Integration = Static<typeof Integration>;

export const NewIntegration = Type.Object({
  groundId: Id,
  name: EntityName,
  kind: IntegrationKind,
  url: IntegrationUrl,
  events: IntegrationEvents,
  devices: Type.Optional(IntegrationDevices),
  assets: Type.Optional(IntegrationAssets),
  headers: Type.Optional(IntegrationHeaders),
}, { additionalProperties: false });
export type NewIntegration = Static<typeof NewIntegration>;

/** A change; `devices` or `assets` null widens the integration to every device or asset again. */
export const IntegrationPatch = Type.Object({
  name: Type.Optional(EntityName),
  url: Type.Optional(IntegrationUrl),
  events: Type.Optional(IntegrationEvents),
  devices: Type.Optional(Type.Union([IntegrationDevices, Type.Null()])),
  assets: Type.Optional(Type.Union([IntegrationAssets, Type.Null()])),
  headers: Type.Optional(IntegrationHeaders),
  /** `active` re-enables one that was disabled (its reason is cleared); `disabled` stops it (reason `manual`). */
  status: Type.Optional(IntegrationStatus),
}, { additionalProperties: false });
export type IntegrationPatch = Static<typeof IntegrationPatch>;

/** A page of a ground's integrations, oldest first (created time, then id). */
export const IntegrationQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1001 })),
  after: Type.Optional(Type.Object({ createdAt: EpochMs, id: Id })),
}, { additionalProperties: false });
export type IntegrationQuery = Static<typeof IntegrationQuery>;

// ---- the HTTP edge (adapters/http/routes/integrations/) ----

/** `POST /ground/{groundId}/integrations`. */
export const IntegrationCreateBody = Type.Object({
  name: EntityName,
  kind: IntegrationKind,
  url: IntegrationUrl,
  events: IntegrationEvents,
  devices: Type.Optional(IntegrationDevices),
  assets: Type.Optional(IntegrationAssets),
  headers: Type.Optional(IntegrationHeaders),
}, { additionalProperties: false });
export type IntegrationCreateBody = Static<typeof IntegrationCreateBody>;

/** `201` of creation and `200` of a rotation: the secret is shown once and never again. */
export const IntegrationWithSecret = Type.Object({
  ...Integration.properties,
  secret: Type.String({ pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$', description: 'signing secret (Standard Webhooks), shown once' }),
});

/** `GET /integrations/{id}`: the integration with how its deliveries go (engine/ports/integrationDeliveries.ts). */
export const IntegrationView = Type.Object({
  ...Integration.properties,
  /** `failing`: active, and its last attempt failed (`lastError` says how); `disabled`: see `disabledReason`. */
  status: Type.Union([Type.Literal('active'), Type.Literal('failing'), Type.Literal('disabled')]),
  /** Events delivered (2xx). */
  delivered: Type.Integer({ minimum: 0 }),
  /** Attempts that failed (each retried, until the retry window ends). */
  failedAttempts: Type.Integer({ minimum: 0 }),
  /** Events in batches not yet delivered, and the age of the oldest, ms. */
  pending: Type.Object({ events: Type.Integer({ minimum: 0 }), oldestAgeMs: Type.Optional(Type.Integer({ minimum: 0 })) }),
  /** Events never delivered: retried past the retry window, or lost to the log's retention first. */
  dropped: Type.Integer({ minimum: 0 }),
  lastSuccessAt: Type.Optional(EpochMs),
  /** The last failed attempt: the receiver's status, when it answered, and the start of its answer or why none came. */
  lastError: Type.Optional(Type.Object({ status: Type.Optional(Type.Integer()), message: Type.String({ maxLength: 256 }), at: EpochMs })),
});
export type IntegrationView = Static<typeof IntegrationView>;

export const IntegrationParams = Type.Object({ id: Id });

export const IntegrationListQuery = Type.Object({ limit: PageLimit, cursor: pageCursor(128) }, { additionalProperties: false });
export type IntegrationListQuery = Static<typeof IntegrationListQuery>;

export const IntegrationPage = Page(Integration);

/** How long the previous secret keeps signing after a rotation, seconds: 0 (a leaked secret) to 7 days; default 24 h. */
export const MAX_ROTATION_GRACE_S = 7 * 24 * 3600;
export const RotateSecretQuery = Type.Object({
  graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_ROTATION_GRACE_S, description: 'seconds the previous secret still signs; default 86400' })),
}, { additionalProperties: false });
export type RotateSecretQuery = Static<typeof RotateSecretQuery>;

/** `POST /integrations/{id}/test`: what the receiver made of one test event. */
export const IntegrationTestResult = Type.Object({
  /** `delivered` (2xx), `retry` (what a delivery would try again), `disable` (410: a delivery would disable the integration). */
  outcome: Type.Union([Type.Literal('delivered'), Type.Literal('retry'), Type.Literal('disable')]),
  /** The receiver's status, when it answered. */
  status: Type.Optional(Type.Integer()),
  /** The start of its answer's body (at most 1 KiB). */
  body: Type.String(),
  /** Why no answer came (timeout, connection, a destination refused). */
  error: Type.Optional(Type.String()),
  /** What its Retry-After asked, ms. */
  retryAfterMs: Type.Optional(Type.Integer({ minimum: 0 })),
  /** The webhook-id the test was sent with. */
  messageId: Type.String(),
});
