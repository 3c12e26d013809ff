/**
 * A new registry's database as it is after initdb and every migration (scripts/registry-snapshot.ts
 * writes it; test/pglite-registry.test.ts checks that it is current). Loading it takes ~1.5 s where
 * initdb takes ~4 s and a second PostgreSQL instance. It holds no data and no secret: the schema
 * only, as every new registry has it.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { createSqlRegistry, type SqlRegistry } from '../sql-registry/createSqlRegistry.ts';
import type { Clock } from '../../engine/kernel/clock.ts';
import { LOCK_FILE } from './dataDirLock.ts';
import { pgliteExecutor } from './pgliteExecutor.ts';

export const REGISTRY_SNAPSHOT = fileURLToPath(new URL('./registry-snapshot.tar.gz', import.meta.url));

/** Only our lock file in it (or nothing): a directory a snapshot may be loaded into and, should that fail, emptied again. */
function emptyButLock(dir: string): boolean {
  return readdirSync(dir).every((name) => name === LOCK_FILE);
}

export interface SnapshotOptions {
  /** The tarball. */
  file: string;
  /** Where the database goes; undefined: in memory. */
  dir?: string;
  postgresqlconf: string;
  clock?: Clock;
  /** Runs after the database closed (a data-dir lock's release). */
  onClose?: () => Promise<void>;
}

/**
 * A new registry opened from the snapshot and migrated to this build; undefined when there is no
 * snapshot, `dir` is not empty, or the snapshot does not load or migrate (another PGlite, an edited
 * migration) — then `dir` is emptied again and the caller runs initdb as without one.
 */
export async function openFromSnapshot(options: SnapshotOptions): Promise<SqlRegistry | undefined> {
  const { dir } = options;
  if (dir !== undefined && !emptyButLock(dir)) return undefined;
  let snapshot: Buffer;
  try {
    snapshot = readFileSync(options.file);
  } catch {
    return undefined;
  }
  let db: PGlite | undefined;
  try {
    db = await PGlite.create({ ...(dir === undefined ? {} : { dataDir: dir }), loadDataDir: new Blob([snapshot]), postgresqlconf: options.postgresqlconf });
    return await createSqlRegistry(pgliteExecutor(db, options.onClose), options.clock ? { clock: options.clock } : {});
  } catch {
    await db?.close().catch(() => undefined);
    if (dir !== undefined) {
      for (const name of readdirSync(dir)) if (name !== LOCK_FILE) rmSync(join(dir, name), { recursive: true, force: true });
    }
    return undefined;
  }
}
