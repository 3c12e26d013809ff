/**
 * fsync of a directory, so that the entries of files created or renamed in it survive a crash: the
 * local log's segments and journal, its atomic file replacements, the registry snapshot's files.
 */
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';

/** Platforms that cannot fsync a directory answer with one of these; there is nothing more to do there. */
const DIR_SYNC_UNSUPPORTED = new Set(['EISDIR', 'EINVAL', 'EPERM', 'ENOTSUP']);

function unsupported(error: unknown): boolean {
  return DIR_SYNC_UNSUPPORTED.has((error as NodeJS.ErrnoException).code ?? '');
}

export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch (error) {
    if (!unsupported(error)) throw error;
  } finally {
    await handle.close();
  }
}

export function syncDirSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } catch (error) {
    if (!unsupported(error)) throw error;
  } finally {
    closeSync(fd);
  }
}
