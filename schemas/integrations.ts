/**
 * Integrations (issue: "push every state to applications"): a ground's receivers of its events,
 * as the registry keeps them (engine/ports/integrationRegistry.ts) and the HTTP edge shows them
 * (adapters/http/routes/integrations/). The signing secret is never part of an Integration: it is
 * answered once, when created or rotated.
 */
import Type, { type Static } from 'typebox';
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
