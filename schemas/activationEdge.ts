/**
 * Request and response schemas of the activation edge (spec §2.5–2.8, §4.5–4.7, §9): device types
 * and activations under `/partner/{partner}/…` (partner token), and `POST /activate` (user token).
 * Like schemas/edge.ts, the same objects validate requests and make up the OpenAPI document.
 */
import Type, { type Static } from 'typebox';
import { Page, PageLimit, pageCursor } from './page.ts';
import {
  ActivationStatus,
  Asset,
  AssetKind,
  AssetName,
  AssetProfile,
  DEVICE_TYPE_NAME_PATTERN,
  DeviceTypeName,
  DeviceTypeRef,
  Id,
  PayloadSettings,
} from './registry.ts';

const Description = Type.String({ maxLength: 4096, pattern: '^[^\\u0000]*$' });

/**
 * Spec §2.6 hardware id: 1–128 characters, no control characters, no leading or trailing space
 * (it names the device and is matched exactly: ` 00:11` and `00:11` would be two units).
 */
export const HardwareId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[^\\u0000-\\u0020\\u007f](?:[^\\u0000-\\u001f\\u007f]*[^\\u0000-\\u0020\\u007f])?$',
  description: 'hardware id in the partner\'s own reference system (MAC address, devEui, IMSI, …)',
});

// ---- path parameters ----

export const PartnerParams = Type.Object({ partner: Id });
export const DeviceTypeParams = Type.Object({ partner: Id, name: DeviceTypeName });
export const DeviceTypeVersionParams = Type.Object({
  partner: Id,
  name: Type.String({ pattern: DEVICE_TYPE_NAME_PATTERN }),
  version: Type.String({ pattern: '^([1-9][0-9]{0,8}|latest)$', description: 'a version number or `latest`' }),
});
/** Codes are typed by people: any case, `-` or space grouping, I/L/O for 1/1/0 are accepted. */
export const ActivationCodeParam = Type.String({ minLength: 1, maxLength: 64, description: 'activation code' });
export const ActivationParams = Type.Object({ partner: Id, code: ActivationCodeParam });
export const HardwareParams = Type.Object({ partner: Id, hardwareId: HardwareId });

// ---- device types (spec §2.7, §9) ----

export const DeviceTypeAssetBody = Type.Object({
  name: AssetName,
  title: Type.Optional(Asset.properties.title),
  description: Type.Optional(Asset.properties.description),
  is: AssetKind,
  /** JSON Schema of the asset's values (the subset engine/uplink/admission/profile.ts supports). */
  profile: AssetProfile,
}, { additionalProperties: false });

/** `PUT /partner/{partner}/device-types/{name}`: the draft, replaced whole. */
export const DeviceTypeDraftBody = Type.Object({
  title: Type.Optional(Asset.properties.title),
  description: Type.Optional(Description),
  assets: Type.Array(DeviceTypeAssetBody, { maxItems: 256 }),
  payload: Type.Optional(Type.Object({
    format: PayloadSettings.properties.format,
    /** Binary conversion script (DESIGN.md §7); with format `binary` only, and required there. */
    conversion: Type.Optional(Type.Unknown()),
  }, { additionalProperties: false })),
}, { additionalProperties: false });
export type DeviceTypeDraftBody = Static<typeof DeviceTypeDraftBody>;

const Definition = Type.Object({
  title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  assets: Type.Array(Type.Object({
    name: Type.String(),
    title: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    is: AssetKind,
    profile: Type.Optional(AssetProfile),
  })),
  payload: Type.Optional(PayloadSettings),
});

export const DeviceTypeVersionOut = Type.Object({
  partnerId: Id,
  name: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  ref: Type.String({ description: '`<partner>/<name>:<version>`' }),
  definition: Definition,
  publishedAt: Type.Integer({ description: 'epoch milliseconds' }),
});

export const DeviceTypeOut = Type.Object({
  partnerId: Id,
  name: Type.String(),
  ref: Type.String({ description: '`<partner>/<name>`: the latest published version' }),
  draft: Definition,
  versions: Type.Array(Type.Object({ version: Type.Integer({ minimum: 1 }), ref: Type.String(), publishedAt: Type.Integer() })),
  latest: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'null while nothing is published' }),
  createdAt: Type.Integer({ description: 'epoch milliseconds' }),
  updatedAt: Type.Integer({ description: 'epoch milliseconds: the draft\'s last change' }),
});
export const DeviceTypeList = Type.Array(DeviceTypeOut);

// ---- activations (spec §2.5, §2.7, §4.5) ----

export const OptionBody = Type.Object({
  description: Type.Optional(Description),
  device: Type.Object({
    type: Type.String({ ...DeviceTypeRef, description: '`<partner>/<device_type_name>`, optionally `:latest` or `:<version>`' }),
  }, { additionalProperties: false }),
  network: Type.Object({
    networkId: Type.String({ minLength: 1, maxLength: 64, description: 'a network id or its spec alias net1…net8 (GET /networks)' }),
    data: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'the network\'s keys (GET /networks); default {}' })),
  }, { additionalProperties: false }),
}, { additionalProperties: false });

/** Spec §4.5 request body. */
export const ActivationCreateBody = Type.Object({
  description: Type.Optional(Description),
  hardware: Type.Object({ id: HardwareId }, { additionalProperties: false }),
  options: Type.Array(OptionBody, { minItems: 1, maxItems: 32 }),
}, { additionalProperties: false });
export type ActivationCreateBody = Static<typeof ActivationCreateBody>;

/** Spec §4.7 change: while unused; `options` replaces every option (new ids). */
export const ActivationPatchBody = Type.Object({
  description: Type.Optional(Description),
  options: Type.Optional(Type.Array(OptionBody, { minItems: 1, maxItems: 32 })),
}, { additionalProperties: false, minProperties: 1 });
export type ActivationPatchBody = Static<typeof ActivationPatchBody>;

/** Spec §2.5 activation, exactly its fields. */
export const ActivationOut = Type.Object({
  code: Type.String({ description: '16 characters of Crockford base32; case-insensitive, may be typed in groups' }),
  description: Type.String(),
  /** `unused` until redeemed, then `used`. */
  status: ActivationStatus,
  activatedDeviceId: Type.Union([Id, Type.Null()]),
  activatedOptionId: Type.Union([Id, Type.Null()]),
  hardware: Type.Object({ id: Type.String() }),
  options: Type.Array(Type.Object({
    id: Id,
    description: Type.String(),
    device: Type.Object({ type: Type.String({ description: 'with a version suffix: `:latest` or `:<n>`' }) }),
    network: Type.Object({
      networkId: Type.String({ description: 'the network\'s id (aliases are answered by id)' }),
      data: Type.Record(Type.String(), Type.Unknown()),
    }),
  })),
});
export type ActivationOut = Static<typeof ActivationOut>;

export const ActivationListQuery = Type.Object({
  status: Type.Optional(ActivationStatus),
  hardwareId: Type.Optional(HardwareId),
  limit: PageLimit,
  cursor: pageCursor(128),
}, { additionalProperties: false });
export type ActivationListQuery = Static<typeof ActivationListQuery>;

export const ActivationPage = Page(ActivationOut);

// ---- activate (spec §4.6) ----

export const ActivateBody = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 64, description: 'activation code (any case, `-` or space grouping)' }),
  option: Id,
  groundId: Id,
}, { additionalProperties: false });
export type ActivateBody = Static<typeof ActivateBody>;

/**
 * `GET /activate/{code}`: what a user may choose from before redeeming (spec §4.6 asks for an
 * option id). Network data is left out: it may hold session keys only the partner should read.
 */
export const ActivationOffer = Type.Object({
  code: Type.String(),
  description: Type.String(),
  hardware: Type.Object({ id: Type.String() }),
  options: Type.Array(Type.Object({
    id: Id,
    description: Type.String(),
    device: Type.Object({ type: Type.String() }),
    network: Type.Object({ networkId: Type.String() }),
  })),
});
export type ActivationOffer = Static<typeof ActivationOffer>;

export const ActivationCodeParams = Type.Object({ code: ActivationCodeParam });

// ---- networks (spec §2.8) ----

export const NetworkList = Type.Array(Type.Object({
  id: Type.String(),
  alias: Type.String({ description: 'the spec\'s placeholder, accepted in requests' }),
  kind: Type.String(),
  title: Type.String(),
  downlink: Type.Boolean(),
  required: Type.Array(Type.String()),
  optional: Type.Array(Type.String()),
}));
