/**
 * The registry port over a SqlExecutor: one implementation, one SQL dialect, shared by the PGlite
 * and PostgreSQL adapters. Each port of the registry has its SQL module (principals.ts, grounds.ts,
 * groundRoles.ts, groundKeys.ts, devices.ts, assets.ts, deviceTypes.ts, activations.ts, integrations.ts, deliveries.ts, rules.ts,
 * alarms.ts, connectivity.ts, quotas.ts, usage.ts, audit.ts) over one SqlContext. Inputs are validated before any query; every driver error leaves
 * through mapSqlError.
 */
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import type { QuotaLimits } from '../../engine/ports/quotaRegistry.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import { activationOperations } from './activations.ts';
import { alarmOperations } from './alarms.ts';
import { assetOperations } from './assets.ts';
import { auditOperations } from './audit.ts';
import { connectivityOperations } from './connectivity.ts';
import { deliveryOperations } from './deliveries.ts';
import { deviceOperations } from './devices.ts';
import { deviceTypeOperations } from './deviceTypes.ts';
import type { SqlExecutor } from './executor.ts';
import { groundOperations } from './grounds.ts';
import { groundKeyOperations } from './groundKeys.ts';
import { groundRoleOperations } from './groundRoles.ts';
import { integrationOperations } from './integrations.ts';
import { migrate } from './migrate.ts';
import { principalOperations } from './principals.ts';
import { quotaOperations } from './quotas.ts';
import { usageOperations } from './usage.ts';
import { ruleOperations } from './rules.ts';
import { sqlContext } from './SqlContext.ts';
import { mapSqlError } from './sqlErrors.ts';

export interface SqlRegistryOptions {
  /** Stamps createdAt and revocation times. Default: the system clock. */
  clock?: Clock;
  /** The limits a new ground starts with (the configuration's `quotas`). Default: none. */
  quotaDefaults?: QuotaLimits;
}

export interface SqlRegistry extends Registry {
  /** The executor underneath, for features that add their own tables (activations) and diagnostics. */
  readonly executor: SqlExecutor;
}

/** Migrates the database, then returns the registry over it. */
export async function createSqlRegistry(executor: SqlExecutor, options: SqlRegistryOptions = {}): Promise<SqlRegistry> {
  const clock = options.clock ?? systemClock;
  try {
    await migrate(executor, { clock });
  } catch (error) {
    throw mapSqlError(error);
  }
  let closed = false;
  const ctx = sqlContext(executor, clock, () => closed);
  return {
    executor,
    ...principalOperations(ctx),
    ...groundOperations(ctx, options.quotaDefaults),
    ...groundRoleOperations(ctx),
    ...groundKeyOperations(ctx),
    ...deviceOperations(ctx),
    ...assetOperations(ctx),
    ...deviceTypeOperations(ctx),
    ...activationOperations(ctx),
    ...integrationOperations(ctx),
    ...deliveryOperations(ctx),
    ...ruleOperations(ctx),
    ...alarmOperations(ctx),
    ...connectivityOperations(ctx),
    ...quotaOperations(ctx),
    ...usageOperations(ctx),
    ...auditOperations(ctx),
    async close() {
      if (closed) return;
      closed = true;
      await executor.close();
    },
  };
}
