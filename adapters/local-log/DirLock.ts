/**
 * Exclusive use of a data dir. The local log keeps its state (offsets being assigned, group
 * membership, retention) in one process's memory, so two processes writing one dir would corrupt
 * it: the second open must fail. A LOCK file names the owning pid and host; a lock whose process is
 * gone (a crash) is taken over. Within one process a registry catches a second open of the same dir.
 */
import { openSync, readFileSync, realpathSync, unlinkSync, writeFileSync, closeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { FleetError } from '../../engine/kernel/errors.ts';
import { processAlive } from '../processAlive.ts';

const heldHere = new Set<string>();


export class DirLock {
  readonly file: string;
  #key: string;
  #content: string;

  private constructor(file: string, key: string, content: string) {
    this.file = file;
    this.#key = key;
    this.#content = content;
  }

  static acquire(dir: string): DirLock {
    const key = realpathSync(dir);
    const file = join(dir, 'LOCK');
    if (heldHere.has(key)) {
      throw new FleetError('CONFLICT', `local log dir ${dir} is already open in this process; close it first`, { detail: { dir } });
    }
    const content = `${process.pid}\n${hostname()}\n`;
    try {
      const fd = openSync(file, 'wx');
      try { writeFileSync(fd, content); } finally { closeSync(fd); }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const [pidText = '', host = ''] = readFileSync(file, 'utf8').split('\n');
      const pid = Number(pidText);
      // Same pid as ours but not in heldHere: left by an earlier run that reused our pid (containers).
      const stale = host === hostname() && Number.isSafeInteger(pid) && (pid === process.pid || !processAlive(pid));
      if (!stale) {
        throw new FleetError('CONFLICT', `local log dir ${dir} is in use by process ${pidText} on ${host || 'an unknown host'}; ` +
          `only one process may open it (delete ${file} if that process is gone)`, { detail: { dir, pid: pidText, host } });
      }
      writeFileSync(file, content);
    }
    heldHere.add(key);
    return new DirLock(file, key, content);
  }

  release(): void {
    if (!heldHere.delete(this.#key)) return;
    try {
      if (readFileSync(this.file, 'utf8') === this.#content) unlinkSync(this.file);
    } catch {
      // already gone: nothing to release
    }
  }
}
