/**
 * Request and response schemas of the HTTP edge for devices, assets and states (DESIGN.md §5).
 * The same objects validate requests (typebox/compile) and make up the OpenAPI document served at
 * `/openapi.json`: TypeBox schemas are JSON Schema, which OpenAPI 3.1 embeds as is.
 */
import Type, { type Static } from 'typebox';
import { Channel } from './messages.ts';
import { Page, PageLimit, pageCursor } from './page.ts';
import { Asset, AssetKind, AssetName, AssetProfile, Device, DevicePatch, Ground, ID_PATTERN, Id, KeyGrant, NewDevice, TokenScope } from './registry.ts';

// ---- errors ----

/** RFC 9457 problem details, plus a stable `code` (engine/kernel/errors.ts ErrorCodes). */
export const Problem = Type.Object({
  type: Type.String({ description: 'URI reference naming the problem type' }),
  title: Type.String(),
  status: Type.Integer(),
  code: Type.String({ description: 'stable error code (engine/kernel/errors.ts)' }),
  detail: Type.String(),
  instance: Type.Optional(Type.String({ description: 'the request path' })),
  errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  uplinkId: Type.Optional(Type.String({ description: 'a refused uplink: the id its rejections are listed under (GET /device/{id}/rejections)' })),
  requiredRole: Type.Optional(Type.String({ description: '403 FORBIDDEN by role: the role in the ground the request needs (viewer, editor or owner)' })),
  allowed: Type.Optional(Type.Array(Type.String(), { description: '406 NOT_ACCEPTABLE: the formats (or media types) the resource has' })),
});
export type Problem = Static<typeof Problem>;

// ---- path parameters ----

export const GroundParams = Type.Object({ groundId: Id });
export const DeviceParams = Type.Object({ id: Id });
export const DeviceAssetParams = Type.Object({ id: Id, name: AssetName });
export const AssetIdParams = Type.Object({ assetId: Id });

// ---- query parameters ----

/** Epoch milliseconds or an RFC 3339 date-time. */
export const TimeParam = Type.Union([
  Type.Integer({ minimum: 0, maximum: 8_640_000_000_000_000 }),
  Type.String({ format: 'date-time' }),
], { description: 'epoch milliseconds or ISO 8601 date-time' });

export const Resolution = Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')]);

export const HistoryQuery = Type.Object({
  from: Type.Optional(TimeParam),
  to: Type.Optional(TimeParam),
  limit: PageLimit,
  cursor: pageCursor(256),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { description: 'by measurement time, default desc' })),
  resolution: Type.Optional(Resolution),
  format: Type.Optional(Type.String({ maxLength: 64, description: 'csv, ndjson or parquet: the states of [from, to) as a file (docs/analytics.md "Export"); default: this JSON page. Or by `Accept`' })),
}, { additionalProperties: false });
export type HistoryQuery = Static<typeof HistoryQuery>;

/** GET /ground/{groundId}/export (docs/analytics.md "Export"). */
export const ExportQuery = Type.Object({
  from: Type.Optional(TimeParam),
  to: Type.Optional(TimeParam),
  devices: Type.Optional(Type.String({ maxLength: 16_384, description: 'comma-separated device ids of the ground, at most 500; default: every device of the ground (at most 500)' })),
  assets: Type.Optional(Type.String({ maxLength: 8_192, description: 'comma-separated asset names, at most 100; default: every asset' })),
  format: Type.Optional(Type.String({ maxLength: 64, description: 'csv, ndjson or parquet; default: by `Accept`, else csv' })),
}, { additionalProperties: false });
export type ExportQuery = Static<typeof ExportQuery>;

/** Where a rejection came from: an uplink channel, or `command` for a refused command record. */
export const RejectionChannel = Type.Union([...Channel.anyOf, Type.Literal('command')]);
export type RejectionChannel = Static<typeof RejectionChannel>;

export const RejectionsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'default 100' })),
  before: Type.Optional(TimeParam),
  channel: Type.Optional(Type.Union([...RejectionChannel.anyOf], {
    description: 'refusals of one channel only; `command`: refused command records. Default: uplink refusals of every channel (http, mqtt, lpwan)',
  })),
}, { additionalProperties: false });
export type RejectionsQuery = Static<typeof RejectionsQuery>;

// ---- devices ----

const { groundId: _groundId, assets: _assets, ...newDeviceFields } = NewDevice.properties;

/** Asset in a create request: the AllThingsTalk SDKs' capitalised keys are mapped before this check. */
export const AssetCreateBody = Type.Object({
  name: AssetName,
  is: AssetKind,
  title: Type.Optional(Asset.properties.title),
  description: Type.Optional(Asset.properties.description),
  profile: Type.Optional(AssetProfile),
}, { additionalProperties: false });
export type AssetCreateBody = Static<typeof AssetCreateBody>;

/** `PUT /device/{id}/asset/{name}`: creates (then `is` is required) or updates. `name`, when sent, must equal the path's. */
export const AssetPutBody = Type.Object({
  name: Type.Optional(AssetName),
  is: Type.Optional(AssetKind),
  title: Type.Optional(Asset.properties.title),
  description: Type.Optional(Asset.properties.description),
  profile: Type.Optional(AssetProfile),
}, { additionalProperties: false });
export type AssetPutBody = Static<typeof AssetPutBody>;

export const DeviceCreateBody = Type.Object({
  ...newDeviceFields,
  assets: Type.Optional(Type.Array(AssetCreateBody, { maxItems: 256 })),
}, { additionalProperties: false });
export type DeviceCreateBody = Static<typeof DeviceCreateBody>;

export const DevicePatchBody = Type.Object({ ...DevicePatch.properties }, { additionalProperties: false });
export type DevicePatchBody = Static<typeof DevicePatchBody>;

export const DeviceWithAssets = Type.Object({ ...Device.properties, assets: Type.Array(Asset) });

const lastSeenAt = Type.Optional(Type.Integer({ minimum: 0, description: 'receive time of its last uplink processed by an engine (up to a second behind); absent: never seen' }));

/** GET /device/{id}: the device with its assets and its connectivity (engine/ports/connectivityRegistry.ts). */
export const DeviceView = Type.Object({
  ...DeviceWithAssets.properties,
  lastSeenAt,
  connected: Type.Optional(Type.Boolean({ description: 'an MQTT session of the device is open now; absent with an external MQTT broker' })),
});
export type DeviceView = Static<typeof DeviceView>;

/** `201` of device creation: the device token is shown once and never again. */
export const CreatedDevice = Type.Object({
  ...Device.properties,
  assets: Type.Array(Asset),
  token: Type.String({ description: 'device token (fsd_…), shown once' }),
});

/** `GET /ground/{groundId}/devices`: pages like the other lists (limit + opaque cursor). */
export const DeviceListQuery = Type.Object({
  limit: PageLimit,
  cursor: pageCursor(128),
  silentFor: Type.Optional(Type.String({ maxLength: 64, description: 'ISO 8601 duration (PT1H, P1D): only devices whose last uplink (else their creation) is at least that long ago, longest silent first' })),
}, { additionalProperties: false });
export type DeviceListQuery = Static<typeof DeviceListQuery>;

export const DevicePage = Page(Type.Object({ ...Device.properties, lastSeenAt }));
export const AssetList = Type.Array(Asset);

// ---- states ----

/** Spec §2.1 asset state message. */
export const AssetStateBody = Type.Object({
  value: Type.Unknown({ description: 'any JSON value, checked against the asset profile' }),
  at: Type.Optional(Type.String({ description: 'ISO 8601 measurement time; default: receive time' })),
});

/**
 * Spec §2.2 device state message (JSON): asset name → asset state. CBOR also takes the simplified
 * form (asset → bare value). A batch is an array of device states (at most 1000), each with its own
 * `at`s: readings a device buffered while offline, admitted item by item.
 */
export const DeviceStateBody = Type.Union([
  Type.Record(Type.String(), AssetStateBody),
  Type.Array(Type.Record(Type.String(), AssetStateBody), { maxItems: 1000 }),
]);

/**
 * A gateway's states for several devices of its ground (POST /ground/{groundId}/states): device id →
 * a device state, or a batch (array) of them. At most 1000 devices per request.
 */
export const GatewayStatesBody = Type.Record(Type.String({ pattern: ID_PATTERN }), Type.Union([
  Type.Record(Type.String(), AssetStateBody),
  Type.Array(Type.Record(Type.String(), AssetStateBody), { maxItems: 1000 }),
]), { maxProperties: 1000 });

/** One result per device of a gateway request, in the order of the request. */
export const GatewayResults = Type.Object({
  results: Type.Array(Type.Object({
    deviceId: Type.String(),
    status: Type.Union([Type.Literal('accepted'), Type.Literal('refused'), Type.Literal('unavailable')], {
      description: 'accepted: durable in the log (its `rejected` entries dropped); refused: nothing stored, recorded in the device\'s rejections (none for a device outside the ground); unavailable: not taken, retry this device later',
    }),
    uplinkId: Type.Optional(Type.String()),
    code: Type.Optional(Type.String()),
    reason: Type.Optional(Type.String()),
    rejected: Type.Optional(Type.Array(Type.Object({
      asset: Type.Optional(Type.String()),
      item: Type.Optional(Type.Integer()),
      code: Type.String(),
      reason: Type.String(),
    }))),
  })),
});
export type GatewayResults = Static<typeof GatewayResults>;

/** `202`: the uplink is durable in the log; its states are processed asynchronously (see /device/{id}/rejections). */
export const Accepted = Type.Object({
  uplinkId: Type.Optional(Type.String()),
  receivedAt: Type.Optional(Type.String({ format: 'date-time' })),
  /** Entries of a device state (or items of a batch) that are dropped; the others are stored. */
  rejected: Type.Optional(Type.Array(Type.Object({
    asset: Type.Optional(Type.String()),
    item: Type.Optional(Type.Integer({ description: 'index of the device state in a batch' })),
    code: Type.String(),
    reason: Type.String(),
  }))),
});

export const StateValue = Type.Object({
  value: Type.Unknown(),
  at: Type.String({ format: 'date-time', description: 'measurement time' }),
});

/** Latest state of every asset of a device, by asset name (the shape of a device state message). */
export const DeviceStateOut = Type.Record(Type.String(), StateValue);

/** AllThingsTalk's asset state answer; `state` is null before the first value. */
export const AssetStateOut = Type.Object({ id: Id, state: Type.Union([StateValue, Type.Null()]) });

export const HistoryPage = Page(StateValue);

export const AggregatePage = Type.Object({
  resolution: Resolution,
  from: Type.String({ format: 'date-time' }),
  to: Type.String({ format: 'date-time' }),
  items: Type.Array(Type.Object({
    at: Type.String({ format: 'date-time', description: 'bucket start' }),
    count: Type.Integer(),
    min: Type.Union([Type.Number(), Type.Null()]),
    max: Type.Union([Type.Number(), Type.Null()]),
    avg: Type.Union([Type.Number(), Type.Null()]),
  })),
});

export const RejectionList = Type.Object({
  items: Type.Array(Type.Object({
    at: Type.String({ format: 'date-time' }),
    code: Type.String(),
    reason: Type.String(),
    asset: Type.Optional(Type.String()),
    item: Type.Optional(Type.Integer({ minimum: 0, description: 'the batch item (index in the array of device states) refused; absent when the rejection concerns no item' })),
    uplinkId: Type.String(),
    channel: Type.String(),
  })),
});

export const Health = Type.Object({ status: Type.Union([Type.Literal('ok'), Type.Literal('starting')]) });

// ---- principals ----

/** `GET /me`: who the bearer token speaks for; a device has no name here. */
/** `key`: what a ground's API key reaches (its ground, its role, when it expires). */
export const Me = Type.Object({ scope: TokenScope, id: Id, name: Type.Optional(Type.String()), key: Type.Optional(KeyGrant) });
export type Me = Static<typeof Me>;

/** `GET /grounds`: the grounds of the user (few per user, so no pages). */
export const GroundList = Type.Object({ items: Type.Array(Ground) });
