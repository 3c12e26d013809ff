/**
 * Embedded registry (DESIGN.md §2): PGlite, PostgreSQL in WASM inside this process, files in a data
 * directory. The default deployment needs nothing installed.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { Clock } from '../../engine/kernel/clock.ts';
import { createSqlRegistry, type SqlRegistry, type SqlRegistryOptions } from '../sql-registry/createSqlRegistry.ts';
import type { QuotaLimits } from '../../engine/ports/quotaRegistry.ts';
import { mapSqlError } from '../sql-registry/sqlErrors.ts';
import { lockDataDir } from './dataDirLock.ts';
import { pgliteExecutor } from './pgliteExecutor.ts';
import { clearNewDir, openFromSnapshot, REGISTRY_SNAPSHOT, unpackSnapshot } from './registrySnapshot.ts';

export { REGISTRY_SNAPSHOT };

export interface PgliteRegistryOptions {
  /**
   * Directory of the database files (created when missing), used by one process at a time (a lock
   * file enforces it). Undefined: an in-memory database, gone on close (tests).
   */
  dir?: string;
  /** Stamps createdAt and revocation times. Default: the system clock. */
  clock?: Clock;
  /**
   * false: fail NOT_FOUND (touching nothing) when `dir` holds no database yet, so that an admin
   * command pointed at the wrong directory does not start a second, empty registry. Default true.
   */
  create?: boolean;
  /** Tarball a new registry's database is loaded from instead of running initdb; null: always initdb. Default REGISTRY_SNAPSHOT. */
  snapshot?: string | null;
  /** The limits a new ground starts with (the configuration's `quotas`). */
  quotaDefaults?: QuotaLimits;
}

/**
 * PostgreSQL's memory settings for a registry inside the service's own process. PGlite starts with
 * 128 MB of shared buffers, which a service idling with a registry of a few thousand rows keeps
 * resident (about 130 MB of its RSS, bench/start.bench.ts). The registry's hot rows are cached by the
 * edges' lookups (engine/access/RegistryLookups.ts) and its files by the operating system, as for a
 * PostgreSQL server with small shared buffers; sorts and index builds of a large registry get work
 * memory of their own.
 */
const POSTGRESQL_CONF = ['shared_buffers = 16MB', 'wal_buffers = 1MB', 'temp_buffers = 2MB', 'work_mem = 4MB', 'maintenance_work_mem = 16MB'].join('\n');

/** Whether `dir` holds a database: every PostgreSQL data directory has a PG_VERSION file. */
export function pgliteRegistryExists(dir: string): boolean {
  return existsSync(join(dir, 'PG_VERSION'));
}

/**
 * Creates the database of a new registry by initdb in a child process, which exits once it is done:
 * when the snapshot (registrySnapshot.ts) cannot be unpacked or opened. Run in this process, initdb
 * leaves about 150 MB of memory behind for as long as the service lives (WebAssembly memory never
 * shrinks; compiled code and allocator arenas); a worker thread keeps most of it too. The caller
 * holds the data dir's lock throughout. An in-memory registry (tests) loads the snapshot through
 * PGlite, in this process.
 */
function createInChildProcess(dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    // Baseline tier only: the child runs the database for a moment, not worth optimising compiles.
    const child = spawn(process.execPath, ['--liftoff-only', fileURLToPath(new URL('./createRegistryProcess.ts', import.meta.url)), dir, POSTGRESQL_CONF], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => { if (stderr.length < 4096) stderr += text; });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new FleetError('UNAVAILABLE', `creating the registry in ${dir} failed (${signal ?? `exit code ${code}`}): ${stderr.trim().split('\n').slice(-3).join(' ')}`, { detail: { dir }, retriable: false }));
    });
  });
}

/** Opens the database in `dir` (or in memory) as a registry; on failure closes it, leaving the lock to the caller. */
async function openRegistry(dir: string | undefined, sqlOptions: SqlRegistryOptions, release: () => Promise<void>): Promise<SqlRegistry> {
  const db = await PGlite.create({ ...(dir === undefined ? {} : { dataDir: dir }), postgresqlconf: POSTGRESQL_CONF });
  try {
    return await createSqlRegistry(pgliteExecutor(db, release), sqlOptions);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
}

export async function createPgliteRegistry(options: PgliteRegistryOptions = {}): Promise<SqlRegistry> {
  const { dir, clock } = options;
  const sqlOptions: SqlRegistryOptions = { ...(clock ? { clock } : {}), ...(options.quotaDefaults ? { quotaDefaults: options.quotaDefaults } : {}) };
  if (dir !== undefined && options.create === false && !pgliteRegistryExists(dir)) {
    throw new FleetError('NOT_FOUND', `no registry in ${dir}`, { detail: { dir } });
  }
  const snapshot = options.snapshot === undefined ? REGISTRY_SNAPSHOT : options.snapshot;
  if (dir === undefined) {
    const loaded = snapshot === null ? undefined : await openFromSnapshot({ file: snapshot, postgresqlconf: POSTGRESQL_CONF, clock, registry: sqlOptions });
    return loaded ?? openRegistry(undefined, sqlOptions, async () => {}).catch((error: unknown) => Promise.reject(mapSqlError(error)));
  }
  const release = lockDataDir(dir);
  try {
    if (!pgliteRegistryExists(dir)) {
      if (snapshot !== null && await unpackSnapshot(snapshot, dir)) {
        try {
          return await openRegistry(dir, sqlOptions, release);
        } catch {
          // Unpacked but not usable (a migration edited since the snapshot was made): initdb instead.
          clearNewDir(dir);
        }
      }
      await createInChildProcess(dir);
    }
    return await openRegistry(dir, sqlOptions, release);
  } catch (error) {
    await release();
    throw mapSqlError(error);
  }
}
