/**
 * Device types port, a part of the registry (engine/ports/registry.ts): a partner's device types,
 * their draft and published versions (spec §2.7, §9). SQL in adapters/sql-registry/deviceTypes.ts;
 * contract in test/contracts/deviceTypes.contract.ts.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing referenced entity, CONFLICT for a duplicate, UNAVAILABLE/TIMEOUT (retriable) when
 * the database cannot be reached, CLOSED after close() (engine/ports/registry.ts).
 */
import type { DeviceType, DeviceTypeDefinition, DeviceTypeVersion } from '../../schemas/registry.ts';

export interface SavedDeviceType {
  deviceType: DeviceType;
  /** True when this call created the type, false when it replaced the draft of an existing one. */
  created: boolean;
}

export interface DeviceTypeRegistry {
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
}
