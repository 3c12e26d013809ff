/**
 * PGlite has no postmaster: two processes opening one data dir would both write to it and corrupt
 * it. A lock file holding the owner's pid keeps a second process (or a second open in this one)
 * out; a lock left by a process that is gone is taken over.
 */
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FleetError } from '../../engine/kernel/errors.ts';
import { processAlive } from '../processAlive.ts';

export const LOCK_FILE = 'fleetstream-registry.lock';

/** Lock files this process holds: a lock with our own pid that is not here was left by an earlier process that had the same pid (containers reuse pid 1). */
const held = new Set<string>();


function tryCreate(path: string): boolean {
  try {
    writeFileSync(path, `${process.pid}\n`, { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Takes the lock of `dir` (created if missing); resolves to its release function. */
export function lockDataDir(dir: string): () => Promise<void> {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  if (held.has(path)) throw new FleetError('CONFLICT', `registry data dir ${dir} is already open in this process`, { detail: { dir } });
  for (let attempt = 0; attempt < 2; attempt++) {
    if (tryCreate(path)) {
      held.add(path);
      return async () => {
        held.delete(path);
        try {
          unlinkSync(path);
        } catch {
          // already gone: nothing to release
        }
      };
    }
    let pid = Number.NaN;
    try {
      pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    } catch {
      // unreadable or vanished: treat as stale
    }
    const stale = !Number.isInteger(pid) || pid <= 0 || pid === process.pid || !processAlive(pid);
    if (!stale) {
      throw new FleetError('CONFLICT', `registry data dir ${dir} is in use by process ${pid} (remove ${path} if no Fleetstream process runs)`, { detail: { dir, pid } });
    }
    try {
      unlinkSync(path);
    } catch {
      // another process took it over first; the next attempt finds out
    }
  }
  throw new FleetError('CONFLICT', `registry data dir ${dir} is being opened by another process`, { detail: { dir } });
}
