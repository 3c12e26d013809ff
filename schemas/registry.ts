/**
 * Registry entities (DESIGN.md §2 "registry"): partners, users, grounds, devices, assets, tokens.
 * Row types of engine/ports/registry.ts derive from these schemas; the HTTP edge reuses the id and
 * name schemas to validate path parameters before anything reaches the registry.
 */
import Type, { type Static } from 'typebox';

/** Ids the registry generates: 22 base62 characters from 16 random bytes (engine/kernel/ids.ts). */
export const ID_PATTERN = '^[0-9A-Za-z]{22}$';
export const Id = Type.String({ pattern: ID_PATTERN, description: 'registry id (22 base62 characters)' });
export type Id = Static<typeof Id>;

/** Epoch milliseconds. */
export const EpochMs = Type.Integer({ minimum: 0 });

/** Free text without control characters (PostgreSQL rejects NUL; the rest breaks logs and CLIs). */
const Text = (maxLength: number, minLength = 0) =>
  Type.String({ minLength, maxLength, pattern: '^[^\\u0000-\\u001f\\u007f]*$' });
const Description = Type.String({ maxLength: 4096, pattern: '^[^\\u0000]*$' });

/** Display name of a partner, user or ground. */
export const EntityName = Text(128, 1);

/**
 * Device name: free text (an activated device is named after its hardware id, spec §2.6, e.g. a MAC
 * address or an IMSI); unique within its ground.
 */
export const DeviceName = Text(128, 1);

/**
 * Asset name: unique per device and immutable. It appears in URL paths and MQTT topics
 * (`device/<id>/asset/<name>/state`, spec §4.1), so no `/`, `+`, `#`, spaces or `%`.
 */
export const ASSET_NAME_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$';
export const AssetName = Type.String({ pattern: ASSET_NAME_PATTERN });

export const AssetKind = Type.Union([Type.Literal('sensor'), Type.Literal('actuator'), Type.Literal('virtual')]);
export type AssetKind = Static<typeof AssetKind>;

/** Asset profile: a JSON Schema object (engine/ports/directory.ts AssetProfile). */
export const AssetProfile = Type.Record(Type.String(), Type.Unknown());

/** Device type reference `<partner>/<device_type_name>[:<version>|:latest]` (spec §2.7, §9). */
export const DEVICE_TYPE_REF_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}/[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(:([0-9]{1,9}|latest))?$';
export const DeviceTypeRef = Type.String({ pattern: DEVICE_TYPE_REF_PATTERN });

/** Network identifier (DESIGN.md §6, e.g. `thethingsnetwork`). Known ids are checked by the networks table, not here. */
export const NetworkId = Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,31}$' });

/** LoRaWAN device EUI: 16 hex digits; stored upper case without separators. */
export const DEV_EUI_PATTERN = '^[0-9A-Fa-f]{16}$';

/** LPWAN binding of a device (spec §2.7 `network`): `data` holds the network's keys, e.g. `devEui`. */
export const NetworkBinding = Type.Object({
  networkId: NetworkId,
  data: Type.Record(Type.String(), Type.Unknown()),
});
export type NetworkBinding = Static<typeof NetworkBinding>;

/** How uplinks of a device are decoded (engine/ports/directory.ts PayloadSettings). */
export const PayloadSettings = Type.Object({
  format: Type.Union([Type.Literal('json'), Type.Literal('cbor'), Type.Literal('binary'), Type.Literal('cayenne')]),
  conversion: Type.Optional(Type.Unknown()),
});
export type PayloadSettings = Static<typeof PayloadSettings>;

export const Partner = Type.Object({ id: Id, name: EntityName, createdAt: EpochMs });
export type Partner = Static<typeof Partner>;

export const User = Type.Object({ id: Id, name: EntityName, createdAt: EpochMs });
export type User = Static<typeof User>;

export const Ground = Type.Object({ id: Id, name: EntityName, createdAt: EpochMs });
export type Ground = Static<typeof Ground>;

/**
 * What a member may do in its ground, each role including the one below it: a viewer reads and
 * follows live data, an editor also changes devices, assets, commands, rules and integrations, an
 * owner also manages the members and the ground itself (engine/access/groundRoles.ts).
 */
export const GROUND_ROLES = ['viewer', 'editor', 'owner'] as const;
export const GroundRole = Type.Union([Type.Literal('viewer'), Type.Literal('editor'), Type.Literal('owner')], { description: 'owner, editor or viewer' });
export type GroundRole = Static<typeof GroundRole>;

export const Device = Type.Object({
  id: Id,
  groundId: Id,
  name: DeviceName,
  title: Text(256),
  description: Description,
  deviceType: Type.Optional(DeviceTypeRef),
  network: Type.Optional(NetworkBinding),
  payload: Type.Optional(PayloadSettings),
  createdAt: EpochMs,
});
export type Device = Static<typeof Device>;

export const Asset = Type.Object({
  /** Global asset id (spec §4.1 `asset/<AssetID>/state`). */
  id: Id,
  deviceId: Id,
  name: AssetName,
  title: Text(256),
  description: Description,
  is: AssetKind,
  profile: AssetProfile,
  createdAt: EpochMs,
});
export type Asset = Static<typeof Asset>;

export const TokenScope = Type.Union([Type.Literal('device'), Type.Literal('user'), Type.Literal('partner'), Type.Literal('key')]);
export type TokenScope = Static<typeof TokenScope>;

/** The roles a ground's API key may hold: never owner (an owner's powers stay with people). */
export const KeyRole = Type.Union([Type.Literal('viewer'), Type.Literal('editor')], { description: 'viewer or editor' });
export type KeyRole = Static<typeof KeyRole>;

/** What an API key's token reaches (docs/grounds.md "API keys"): one ground, with one role, until it expires. */
export const KeyGrant = Type.Object({ groundId: Id, role: KeyRole, expiresAt: Type.Optional(EpochMs) });
export type KeyGrant = Static<typeof KeyGrant>;

/**
 * Who a bearer token speaks for (DESIGN.md §5). A key token (`scope: 'key'`, subjectId the key's id)
 * carries its grant; no other scope has one.
 */
export const Principal = Type.Object({ scope: TokenScope, subjectId: Id, key: Type.Optional(KeyGrant) });
export type Principal = Static<typeof Principal>;

// ---- inputs ----

export const NewAsset = Type.Object({
  name: AssetName,
  is: AssetKind,
  /** Defaults to the name. */
  title: Type.Optional(Text(256)),
  description: Type.Optional(Description),
  /** Defaults to `{}` (any value). */
  profile: Type.Optional(AssetProfile),
});
export type NewAsset = Static<typeof NewAsset>;

/** Fields of an asset upsert; omitted fields keep their value (or take the creation default). */
export const AssetFields = Type.Object({
  /** Required when the asset does not exist yet. */
  is: Type.Optional(AssetKind),
  title: Type.Optional(Text(256)),
  description: Type.Optional(Description),
  profile: Type.Optional(AssetProfile),
});
export type AssetFields = Static<typeof AssetFields>;

export const NewDevice = Type.Object({
  groundId: Id,
  name: DeviceName,
  /** Defaults to the name. */
  title: Type.Optional(Text(256)),
  description: Type.Optional(Description),
  deviceType: Type.Optional(DeviceTypeRef),
  network: Type.Optional(NetworkBinding),
  payload: Type.Optional(PayloadSettings),
  assets: Type.Optional(Type.Array(NewAsset, { maxItems: 256 })),
});
export type NewDevice = Static<typeof NewDevice>;

export const DevicePatch = Type.Object({
  name: Type.Optional(DeviceName),
  title: Type.Optional(Text(256)),
  description: Type.Optional(Description),
});
export type DevicePatch = Static<typeof DevicePatch>;

/** A page of a ground's devices, oldest first (created time, then id). */
export const DeviceQuery = Type.Object({
  /** Default: every device. */
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1001 })),
  /** Only devices after this one in the order. */
  after: Type.Optional(Type.Object({ createdAt: EpochMs, id: Id })),
});
export type DeviceQuery = Static<typeof DeviceQuery>;

export const NewGround = Type.Object({
  name: EntityName,
  /** Made the first member in the same transaction. */
  userId: Type.Optional(Id),
  /** The first member's role; default owner. */
  role: Type.Optional(GroundRole),
});
export type NewGround = Static<typeof NewGround>;

// ---- activation service (spec §2.5–2.8, §4.5–4.6) ----

/** Device type name: the second part of `<partner>/<device_type_name>` (spec §2.7). */
export const DEVICE_TYPE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
export const DeviceTypeName = Type.String({ pattern: DEVICE_TYPE_NAME_PATTERN });

/** What a published device type version gives every device activated with it (also the shape of a draft). */
export const DeviceTypeDefinition = Type.Object({
  title: Type.Optional(Text(256)),
  description: Type.Optional(Description),
  assets: Type.Array(NewAsset, { maxItems: 256 }),
  payload: Type.Optional(PayloadSettings),
});
export type DeviceTypeDefinition = Static<typeof DeviceTypeDefinition>;

/** One immutable, published version of a partner's device type (spec §9). */
export const DeviceTypeVersion = Type.Object({
  partnerId: Id,
  name: DeviceTypeName,
  version: Type.Integer({ minimum: 1 }),
  /** `<partnerId>/<name>:<version>`. */
  ref: DeviceTypeRef,
  definition: DeviceTypeDefinition,
  publishedAt: EpochMs,
});
export type DeviceTypeVersion = Static<typeof DeviceTypeVersion>;

/** A published version as listed with its device type (the definition is read by number). */
export const DeviceTypeVersionSummary = Type.Object({
  version: Type.Integer({ minimum: 1 }),
  ref: DeviceTypeRef,
  publishedAt: EpochMs,
});
export type DeviceTypeVersionSummary = Static<typeof DeviceTypeVersionSummary>;

/**
 * A partner's device type: the draft being edited and the immutable versions published from it
 * (spec §9). A type without versions cannot be pinned (`:<n>`); `:latest` publishes its draft
 * as version 1 when an activation first names it (spec §2.7).
 */
export const DeviceType = Type.Object({
  partnerId: Id,
  name: DeviceTypeName,
  /** `<partnerId>/<name>`: resolves to the latest version. */
  ref: DeviceTypeRef,
  draft: DeviceTypeDefinition,
  /** Oldest first. */
  versions: Type.Array(DeviceTypeVersionSummary),
  /** The latest version number, null while nothing is published. */
  latest: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
  createdAt: EpochMs,
  /** When the draft last changed. */
  updatedAt: EpochMs,
});
export type DeviceType = Static<typeof DeviceType>;

/**
 * Activation code: 16 Crockford base32 characters (80 random bits), upper case. People type these
 * from a label, so lookups also accept lower case, `-`/space grouping and I/L/O for 1/1/0.
 */
export const ACTIVATION_CODE_PATTERN = '^[0-9A-HJKMNP-TV-Z]{16}$';
export const ActivationCode = Type.String({ pattern: ACTIVATION_CODE_PATTERN });

export const ActivationStatus = Type.Union([Type.Literal('unused'), Type.Literal('used')]);
export type ActivationStatus = Static<typeof ActivationStatus>;

export const NewActivationOption = Type.Object({
  description: Type.Optional(Description),
  /** `<partner>/<device_type_name>[:<version>|:latest]`; the partner must be the activation's partner. */
  device: Type.Object({ type: DeviceTypeRef }),
  network: NetworkBinding,
});
export type NewActivationOption = Static<typeof NewActivationOption>;

/** Spec §4.5 request body. */
export const NewActivation = Type.Object({
  description: Type.Optional(Description),
  hardware: Type.Object({ id: DeviceName }),
  options: Type.Array(NewActivationOption, { minItems: 1, maxItems: 32 }),
});
export type NewActivation = Static<typeof NewActivation>;

export const ActivationOption = Type.Object({
  id: Id,
  description: Type.String(),
  /** As requested, with `:latest` appended when the request named no version (spec §2.7); resolved at activation. */
  device: Type.Object({ type: DeviceTypeRef }),
  network: NetworkBinding,
});
export type ActivationOption = Static<typeof ActivationOption>;

/** Spec §2.5. */
export const Activation = Type.Object({
  code: ActivationCode,
  partnerId: Id,
  description: Type.String(),
  status: ActivationStatus,
  activatedDeviceId: Type.Union([Id, Type.Null()]),
  activatedOptionId: Type.Union([Id, Type.Null()]),
  hardware: Type.Object({ id: DeviceName }),
  options: Type.Array(ActivationOption),
  createdAt: EpochMs,
});
export type Activation = Static<typeof Activation>;

/** What may change while an activation is unused; the hardware id never changes (delete and create instead). */
export const ActivationPatch = Type.Object({
  description: Type.Optional(Description),
  /** Replaces every option; the new options get new ids. */
  options: Type.Optional(Type.Array(NewActivationOption, { minItems: 1, maxItems: 32 })),
});
export type ActivationPatch = Static<typeof ActivationPatch>;

/** A page of a partner's activations, oldest first (created time, then code). */
export const ActivationQuery = Type.Object({
  status: Type.Optional(ActivationStatus),
  hardwareId: Type.Optional(DeviceName),
  /** Default 100. */
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1001 })),
  /** Only activations after this one in the order. */
  after: Type.Optional(Type.Object({ createdAt: EpochMs, code: ActivationCode })),
});
export type ActivationQuery = Static<typeof ActivationQuery>;

/** Spec §4.6 request body, plus the user the bearer token named. */
export const ActivateRequest = Type.Object({
  code: Type.String({ maxLength: 64 }),
  option: Id,
  groundId: Id,
  /** Who redeems it: a member of the ground (userId), or one of its API keys (keyId); exactly one. */
  userId: Type.Optional(Id),
  keyId: Type.Optional(Id),
});
export type ActivateRequest = Static<typeof ActivateRequest>;
