/**
 * Distributed registry (DESIGN.md §2): a PostgreSQL server through a node-postgres Pool. Several
 * Fleetstream processes may share one database; migrations serialise on an advisory lock.
 */
import pg from 'pg';
import type { Clock } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { createSqlRegistry, type SqlRegistry } from '../sql-registry/createSqlRegistry.ts';
import { mapSqlError } from '../sql-registry/sqlErrors.ts';
import { pgExecutor } from './pgExecutor.ts';
import type { QuotaLimits } from '../../engine/ports/quotaRegistry.ts';

export interface PostgresRegistryOptions {
  /** Connection string, e.g. `postgres://user@host:5432/db`. */
  url: string;
  /**
   * PostgreSQL schema holding the registry's tables (created when missing; becomes the
   * connections' search_path). Default: the server's search_path (normally `public`). Lets
   * several registries (tests, tenants) share one database.
   */
  schema?: string;
  /** Maximum connections of the pool. Default 10. */
  poolSize?: number;
  /** Milliseconds to wait for a connection before failing with UNAVAILABLE. Default 5000. */
  connectTimeoutMs?: number;
  /** Milliseconds a statement may run before the server cancels it (TIMEOUT). Default 10000. */
  statementTimeoutMs?: number;
  /** Stamps createdAt and revocation times. Default: the system clock. */
  clock?: Clock;
  /**
   * Names this process in the registry changes its transactions announce (migration 4's triggers
   * read it as the connections' `fleetstream.origin`): PostgresRegistryChanges with the same origin
   * skips them, having delivered them here already. Unset: announced as from 'database'.
   */
  origin?: string;
  /** Errors of idle pooled connections (server restart, network); they are otherwise dropped. */
  onIdleError?: (error: Error) => void;
  /** The limits a new ground starts with (the configuration's `quotas`). */
  quotaDefaults?: QuotaLimits;
}

/** Lower-case identifier, so it needs no quoting rules beyond the double quotes added here. */
const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;
/** schemas/registryChanges.ts RegistryChangeNotification's origin. */
const ORIGIN_RE = /^[0-9A-Za-z]{1,32}$/;

export async function createPostgresRegistry(options: PostgresRegistryOptions): Promise<SqlRegistry> {
  if (typeof options.url !== 'string' || options.url.length === 0) {
    throw new FleetError('VALIDATION_FAILED', 'url: a PostgreSQL connection string is required', { detail: { field: 'url' } });
  }
  if (options.schema !== undefined && !SCHEMA_RE.test(options.schema)) {
    throw new FleetError('VALIDATION_FAILED', 'schema: lower-case letters, digits and _ (at most 63), not starting with a digit', { detail: { field: 'schema' } });
  }
  if (options.origin !== undefined && !ORIGIN_RE.test(options.origin)) {
    throw new FleetError('VALIDATION_FAILED', 'origin: 1 to 32 letters and digits', { detail: { field: 'origin' } });
  }
  // Startup parameters: every pooled connection starts with the schema on its search_path and
  // the process's origin for the changes its transactions announce.
  const startup = [
    ...(options.schema === undefined ? [] : [`-c search_path=${options.schema}`]),
    ...(options.origin === undefined ? [] : [`-c fleetstream.origin=${options.origin}`]),
  ];
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    ...(startup.length === 0 ? {} : { options: startup.join(' ') }),
  });
  // Without a listener an idle client's error (e.g. the server restarting) would crash the process;
  // the pool drops that client and the next call connects anew.
  pool.on('error', (error) => options.onIdleError?.(error));
  const executor = pgExecutor(pool);
  try {
    if (options.schema !== undefined) await executor.exec(`CREATE SCHEMA IF NOT EXISTS "${options.schema}"`);
    return await createSqlRegistry(executor, { ...(options.clock ? { clock: options.clock } : {}), ...(options.quotaDefaults ? { quotaDefaults: options.quotaDefaults } : {}) });
  } catch (error) {
    await executor.close().catch(() => {});
    throw mapSqlError(error);
  }
}
