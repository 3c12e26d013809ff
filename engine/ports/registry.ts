/**
 * Registry port: the relational, transactional store behind the HTTP edge (DESIGN.md §2, §5):
 * partners, users, grounds and their members, devices, assets, bearer tokens.
 * Implemented by adapters/pglite (embedded default) and adapters/postgres; both run the same SQL
 * (adapters/sql-registry) and pass test/contracts/registry.contract.ts.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing referenced entity, CONFLICT for a duplicate (device name in a ground, asset name on
 * a device), UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED after close().
 * Lookups never throw for a malformed id: such an id cannot exist, so they answer undefined/false
 * without querying.
 */
import type {
  ActivateRequest,
  Activation,
  Asset,
  AssetFields,
  ActivationPatch,
  ActivationQuery,
  Device,
  DevicePatch,
  DeviceQuery,
  DeviceType,
  DeviceTypeDefinition,
  DeviceTypeVersion,
  Ground,
  NewActivation,
  NewDevice,
  NewGround,
  Partner,
  Principal,
  TokenScope,
  User,
} from '../../schemas/registry.ts';
import type { DeviceDirectory, DeviceInfo } from './directory.ts';

export type {
  ActivateRequest,
  Activation,
  ActivationOption,
  ActivationPatch,
  ActivationQuery,
  Asset,
  AssetFields,
  Device,
  DevicePatch,
  DeviceQuery,
  DeviceType,
  DeviceTypeDefinition,
  DeviceTypeVersion,
  DeviceTypeVersionSummary,
  Ground,
  NewActivation,
  NewActivationOption,
  NewAsset,
  NewDevice,
  NewGround,
  Partner,
  Principal,
  TokenScope,
  User,
} from '../../schemas/registry.ts';

/** A device with its assets (ordered by name); structurally a DeviceInfo of the directory port. */
export interface DeviceWithAssets extends Device {
  assets: Asset[];
}

/** A created principal and its bearer token. The plaintext token is returned once and never stored. */
export interface WithToken<T> {
  entity: T;
  token: string;
}

export interface CreatedDevice {
  device: DeviceWithAssets;
  /** Device token (`fsd_…`), shown once. */
  token: string;
}

export interface UpsertedAsset {
  asset: Asset;
  /** True when this call created the asset, false when it updated an existing one. */
  created: boolean;
}

export interface SavedDeviceType {
  deviceType: DeviceType;
  /** True when this call created the type, false when it replaced the draft of an existing one. */
  created: boolean;
}

/** The result of redeeming an activation code (spec §4.6). */
export interface Activated {
  /** Now `used`, naming the device and the option chosen. */
  activation: Activation;
  device: CreatedDevice;
}

export interface Registry {
  // ---- principals ----
  /** Creates a partner and its first partner token (`fsp_…`). */
  createPartner(input: { name: string }): Promise<WithToken<Partner>>;
  getPartner(partnerId: string): Promise<Partner | undefined>;
  /** Creates a user and its first user token (`fsu_…`). */
  createUser(input: { name: string }): Promise<WithToken<User>>;
  getUser(userId: string): Promise<User | undefined>;

  // ---- grounds and membership ----
  /** Creates a ground; `userId`, when given, becomes its first member in the same transaction (NOT_FOUND if missing). */
  createGround(input: NewGround): Promise<Ground>;
  getGround(groundId: string): Promise<Ground | undefined>;
  /** Idempotent. NOT_FOUND when the ground or the user does not exist. */
  addMember(groundId: string, userId: string): Promise<void>;
  /** True when a membership was removed. */
  removeMember(groundId: string, userId: string): Promise<boolean>;
  isMember(groundId: string, userId: string): Promise<boolean>;
  /** Grounds the user belongs to, oldest first. */
  listGrounds(userId: string): Promise<Ground[]>;

  // ---- devices ----
  /**
   * Creates the device, its assets and a device token in one transaction. NOT_FOUND when the ground
   * does not exist; CONFLICT when the ground already has a device of that name or the network binding
   * (networkId + devEui) is taken; VALIDATION_FAILED for two assets of the same name.
   */
  createDevice(input: NewDevice): Promise<CreatedDevice>;
  /** The device with its assets; also the DeviceDirectory lookup (see registryDirectory). */
  getDevice(deviceId: string): Promise<DeviceWithAssets | undefined>;
  /** Devices of a ground, oldest first (created time, then id), without assets; a page when `query` says so. */
  listDevices(groundId: string, query?: DeviceQuery): Promise<Device[]>;
  /** Changes name/title/description. NOT_FOUND when missing; CONFLICT on a duplicate name in the ground. */
  updateDevice(deviceId: string, patch: DevicePatch): Promise<Device>;
  /** Deletes the device and its assets and revokes its tokens. False when it did not exist. */
  deleteDevice(deviceId: string): Promise<boolean>;
  /** The device bound to a LoRaWAN devEui on a network (any case, `-`/`:` separators ignored). */
  findDeviceByNetwork(networkId: string, devEui: string): Promise<Device | undefined>;

  // ---- assets ----
  getAsset(deviceId: string, name: string): Promise<Asset | undefined>;
  getAssetById(assetId: string): Promise<Asset | undefined>;
  /** Assets of a device ordered by name. */
  listAssets(deviceId: string): Promise<Asset[]>;
  /**
   * Creates the asset or updates the given fields of an existing one (the name never changes; `is`
   * may change). Creating requires `is` (VALIDATION_FAILED otherwise); NOT_FOUND when the device is
   * missing. Concurrent upserts of one name yield one asset: exactly one caller sees created = true.
   */
  upsertAsset(deviceId: string, name: string, fields: AssetFields): Promise<UpsertedAsset>;
  /** False when it did not exist. */
  deleteAsset(deviceId: string, name: string): Promise<boolean>;

  // ---- tokens ----
  /** Who the token speaks for; undefined for an unknown, malformed or revoked token. */
  authenticate(token: string): Promise<Principal | undefined>;
  /** Issues an additional token for an existing subject (rotation). NOT_FOUND when the subject is missing. */
  issueToken(scope: TokenScope, subjectId: string): Promise<string>;
  /** True when the token existed and was not revoked before. */
  revokeToken(token: string): Promise<boolean>;

  // ---- device types (spec §2.7, §9) ----
  /**
   * Creates the partner's device type with `draft`, or replaces the draft of an existing one;
   * published versions never change. NOT_FOUND when the partner does not exist; VALIDATION_FAILED
   * for a bad name or draft (detail.field relative to the draft, e.g. `assets.0.profile`,
   * `payload.conversion.sense[0].value.byte`: profiles and binary conversion scripts are checked).
   */
  saveDeviceTypeDraft(partnerId: string, name: string, draft: DeviceTypeDefinition): Promise<SavedDeviceType>;
  /** Publishes the type's current draft as its next version (1, 2, …). NOT_FOUND when the partner has no such type. */
  publishDeviceTypeDraft(partnerId: string, name: string): Promise<DeviceTypeVersion>;
  /**
   * Publishes `definition` as the next version (1, 2, …) of the partner's device type and makes it
   * the draft, creating the type on first use. NOT_FOUND when the partner does not exist;
   * VALIDATION_FAILED for a bad name or definition (fields prefixed `definition.`).
   */
  publishDeviceType(partnerId: string, name: string, definition: DeviceTypeDefinition): Promise<DeviceTypeVersion>;
  /** The partner's device type with its draft and versions. */
  getDeviceType(partnerId: string, name: string): Promise<DeviceType | undefined>;
  /** The partner's device types by name. */
  listDeviceTypes(partnerId: string): Promise<DeviceType[]>;
  /** A published version by `<partnerId>/<name>[:<n>|:latest]` (no suffix: the latest). */
  resolveDeviceType(ref: string): Promise<DeviceTypeVersion | undefined>;

  // ---- activations (spec §2.5–2.8, §4.5–4.7) ----
  /**
   * Creates an `unused` activation with a generated code and option ids (spec §4.5). Each option's
   * network goes through the networks table (engine/activation/networks.ts: aliases become ids, keys are
   * checked, LoRaWAN keys not supplied become null). Device types: another partner's is FORBIDDEN;
   * a type name the partner does not have, or a `:<n>` that is not published, is VALIDATION_FAILED;
   * `:latest` (or no suffix) of a type without a published version publishes its draft as version 1
   * first (spec §2.7). CONFLICT when the partner already has an activation for the hardware id.
   */
  createActivation(partnerId: string, input: NewActivation): Promise<Activation>;
  /** The partner's activation by code (any case, `-`/space grouping accepted); another partner's reads as undefined. */
  getActivation(partnerId: string, code: string): Promise<Activation | undefined>;
  /**
   * An unused activation by code alone, for the user about to redeem it (spec §4.6 asks for an
   * option id: the user must see the options to choose one). Undefined for an unknown or used code.
   */
  findUnusedActivation(code: string): Promise<Activation | undefined>;
  /** The partner's activation of a hardware id (spec §2.6: troubleshooting). */
  findActivationByHardware(partnerId: string, hardwareId: string): Promise<Activation | undefined>;
  /** A page of the partner's activations, oldest first; `after` continues from the last one seen. */
  listActivations(partnerId: string, query: ActivationQuery): Promise<Activation[]>;
  /**
   * Changes the description and/or replaces the options (new option ids; the same checks as
   * createActivation) of an unused activation. NOT_FOUND for an unknown code or another partner's;
   * CONFLICT once used (engine/activation/activationMachine.ts).
   */
  updateActivation(partnerId: string, code: string, patch: ActivationPatch): Promise<Activation>;
  /** Deletes an unused activation; false when there is none. CONFLICT once used. */
  deleteActivation(partnerId: string, code: string): Promise<boolean>;
  /**
   * Redeems a code in one transaction (spec §4.6): the device, named after the hardware id, is
   * created in the ground from the option's device type version (resolved now) and network, and the
   * activation becomes `used`. FORBIDDEN when the user is not a member of the ground; NOT_FOUND for
   * an unknown code; VALIDATION_FAILED (field `option`) for an option of another activation;
   * CONFLICT when the code was already used or the device name / devEui is taken (the code then
   * stays unused).
   */
  activate(request: ActivateRequest): Promise<Activated>;

  close(): Promise<void>;
}

/** The registry seen as the device actors' DeviceDirectory (engine/ports/directory.ts). */
export function registryDirectory(registry: Pick<Registry, 'getDevice'>): DeviceDirectory {
  return {
    async getDevice(deviceId: string): Promise<DeviceInfo | undefined> {
      return registry.getDevice(deviceId);
    },
  };
}
