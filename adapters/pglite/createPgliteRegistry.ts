/**
 * Embedded registry (DESIGN.md §2): PGlite, PostgreSQL in WASM inside this process, files in a data
 * directory. The default deployment needs nothing installed.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { Clock } from '../../engine/kernel/clock.ts';
import { createSqlRegistry, type SqlRegistry } from '../sql-registry/createSqlRegistry.ts';
import { mapSqlError } from '../sql-registry/sqlErrors.ts';
import { lockDataDir } from './dataDirLock.ts';
import { pgliteExecutor } from './pgliteExecutor.ts';

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
}

/** Whether `dir` holds a database: every PostgreSQL data directory has a PG_VERSION file. */
export function pgliteRegistryExists(dir: string): boolean {
  return existsSync(join(dir, 'PG_VERSION'));
}

export async function createPgliteRegistry(options: PgliteRegistryOptions = {}): Promise<SqlRegistry> {
  if (options.dir !== undefined && options.create === false && !pgliteRegistryExists(options.dir)) {
    throw new FleetError('NOT_FOUND', `no registry in ${options.dir}`, { detail: { dir: options.dir } });
  }
  const release = options.dir === undefined ? async () => {} : lockDataDir(options.dir);
  let db: PGlite;
  try {
    db = options.dir === undefined ? await PGlite.create() : await PGlite.create({ dataDir: options.dir });
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
