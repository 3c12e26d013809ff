/**
 * Registry: the relational, transactional store behind the HTTP edge (DESIGN.md §2, §5), as
 * ports that a feature depends on one at a time: principals and tokens (principalRegistry.ts),
 * grounds, devices and assets (fleetRegistry.ts), device types (deviceTypeRegistry.ts),
 * activations (activationRegistry.ts), integrations (integrationRegistry.ts) and their
 * deliveries (integrationDeliveries.ts), rules (ruleRegistry.ts) and their alarms
 * (alarmRegistry.ts), the devices' connectivity (connectivityRegistry.ts), the roles of grounds'
 * members and the grounds' own changes (groundRegistry.ts), the grounds' API keys
 * (groundKeyRegistry.ts), the grounds' quotas (quotaRegistry.ts), usage (usageRegistry.ts) and audit log (auditLog.ts). A new feature's methods
 * go in a port of their own.
 * Implemented by adapters/pglite (embedded default) and adapters/postgres; both run the same SQL
 * (adapters/sql-registry, a module per port) and pass each port's contract suite.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing referenced entity, CONFLICT for a duplicate (device name in a ground, asset name on
 * a device), UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED after close().
 * Lookups never throw for a malformed id: such an id cannot exist, so they answer undefined/false
 * without querying.
 */
import type { DeviceDirectory, DeviceInfo } from './directory.ts';
import type { ActivationRegistry } from './activationRegistry.ts';
import type { AuditLog } from './auditLog.ts';
import type { AlarmRegistry } from './alarmRegistry.ts';
import type { ConnectivityRegistry } from './connectivityRegistry.ts';
import type { DeviceTypeRegistry } from './deviceTypeRegistry.ts';
import type { FleetRegistry } from './fleetRegistry.ts';
import type { GroundKeyRegistry } from './groundKeyRegistry.ts';
import type { GroundRegistry } from './groundRegistry.ts';
import type { IntegrationDeliveries } from './integrationDeliveries.ts';
import type { IntegrationRegistry } from './integrationRegistry.ts';
import type { PrincipalRegistry } from './principalRegistry.ts';
import type { QuotaRegistry } from './quotaRegistry.ts';
import type { UsageRegistry } from './usageRegistry.ts';
import type { RuleRegistry } from './ruleRegistry.ts';

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
  KeyGrant,
  KeyRole,
  Partner,
  Principal,
  TokenScope,
  User,
} from '../../schemas/registry.ts';

export type { ActivationRegistry, Activated } from './activationRegistry.ts';
export type { DeviceTypeRegistry, SavedDeviceType } from './deviceTypeRegistry.ts';
export type { CreatedDevice, DeviceWithAssets, FleetRegistry, UpsertedAsset } from './fleetRegistry.ts';
export type { CreatedGroundKey, GroundKey, GroundKeyRegistry, KeyQuery, NewGroundKey, RevokedGroundKey } from './groundKeyRegistry.ts';
export type { DeletedGround, GroundPatch, GroundRegistry, GroundRole, Member, MemberQuery, SetMember } from './groundRegistry.ts';
export type { PrincipalRegistry, WithToken } from './principalRegistry.ts';
export type { GroundQuota, QuotaLimits, QuotaPatch, QuotaRegistry } from './quotaRegistry.ts';
export type { DeviceUsage, GroundUsageCounts, UsageRegistry } from './usageRegistry.ts';
export type { AuditActor, AuditEntry, AuditLog, AuditQuery, AuditResult, ListedAuditEntry } from './auditLog.ts';
export type { Integration, IntegrationPatch, IntegrationQuery, IntegrationRegistry, NewIntegration, WithSecret } from './integrationRegistry.ts';
export type { DeliveredBatch, DeliveryBatch, DeliveryError, DeliveryStats, IntegrationDeliveries } from './integrationDeliveries.ts';
export type { AssetDeclaration, NewRule, Rule, RulePatch, RuleQuery, RuleRegistry } from './ruleRegistry.ts';
export type { ConnectivityRegistry, DeviceActivity, DeviceConnectivity, OpenedSession, SilentDevice, SilentDeviceQuery } from './connectivityRegistry.ts';
export type { Alarm, AlarmQuery, AlarmRegistry, AlarmStatus, EvaluationChange, EvaluationOutcome, EvaluationStanding, RuleEvaluation } from './alarmRegistry.ts';

/** The whole registry, as one database holds it: what the composition root opens and closes. */
export interface Registry extends PrincipalRegistry, FleetRegistry, GroundRegistry, GroundKeyRegistry, DeviceTypeRegistry, ActivationRegistry, IntegrationRegistry, IntegrationDeliveries, RuleRegistry, AlarmRegistry, ConnectivityRegistry, QuotaRegistry, UsageRegistry, AuditLog {
  close(): Promise<void>;
}

/** The registry seen as the device actors' DeviceDirectory (engine/ports/directory.ts). */
export function registryDirectory(registry: Pick<FleetRegistry, 'getDevice'>): DeviceDirectory {
  return {
    async getDevice(deviceId: string): Promise<DeviceInfo | undefined> {
      return registry.getDevice(deviceId);
    },
  };
}
