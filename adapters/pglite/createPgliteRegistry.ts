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
import { createSqlRegistry, type SqlRegistry } from '../sql-registry/createSqlRegistry.ts';
import { mapSqlError } from '../sql-registry/sqlErrors.ts';
import { lockDataDir } from './dataDirLock.ts';
import { pgliteExecutor } from './pgliteExecutor.ts';
import { openFromSnapshot, REGISTRY_SNAPSHOT } from './registrySnapshot.ts';

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
 * Creates the database of a new registry in a child process, which exits once it is done: from
 * `snapshot` (registrySnapshot.ts) when it loads, else by initdb. Run in this process, either leaves
 * about 150 MB of memory behind for as long as the service lives (WebAssembly memory never shrinks;
 * compiled code and allocator arenas: bench/start.bench.ts, fresh against restart); a worker thread
 * keeps most of it too. The service loads meanwhile on the other core. The caller holds the data
 * dir's lock throughout. An in-memory registry (tests) loads the snapshot in this process.
 */
function createInChildProcess(dir: string, snapshot: string | null): Promise<void> {
  return new Promise((resolve, reject) => {
    // Baseline tier only: the child runs the database for a moment, not worth optimising compiles.
    const child = spawn(process.execPath, ['--liftoff-only', fileURLToPath(new URL('./createRegistryProcess.ts', import.meta.url)), dir, POSTGRESQL_CONF, snapshot ?? ''], {
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

export async function createPgliteRegistry(options: PgliteRegistryOptions = {}): Promise<SqlRegistry> {
  if (options.dir !== undefined && options.create === false && !pgliteRegistryExists(options.dir)) {
    throw new FleetError('NOT_FOUND', `no registry in ${options.dir}`, { detail: { dir: options.dir } });
  }
  const release = options.dir === undefined ? async () => {} : lockDataDir(options.dir);
  const snapshot = options.snapshot === undefined ? REGISTRY_SNAPSHOT : options.snapshot;
  if (options.dir === undefined && snapshot !== null) {
    const loaded = await openFromSnapshot({ file: snapshot, postgresqlconf: POSTGRESQL_CONF, clock: options.clock });
    if (loaded) return loaded;
  }
  let db: PGlite;
  try {
    if (options.dir !== undefined && !pgliteRegistryExists(options.dir)) await createInChildProcess(options.dir, snapshot);
    db = await PGlite.create({ ...(options.dir === undefined ? {} : { dataDir: options.dir }), postgresqlconf: POSTGRESQL_CONF });
  } catch (error) {
    await release();
    throw mapSqlError(error);
  }
  const executor = pgliteExecutor(db, release);
  try {
    return await createSqlRegistry(executor, options.clock ? { clock: options.clock } : {});
  } catch (error) {
    await executor.close();
    throw error;
  }
}
