/**
 * Durable file replacement: write a temporary file, fsync it, rename it over the target, fsync the
 * directory. A crash leaves either the old or the new content, never a mix.
 */
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

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

export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = `${path}.tmp`;
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(data, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, path);
  await syncDir(dirname(path));
}

export function writeFileAtomicSync(path: string, data: string): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, data, 0, 'utf8');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  syncDirSync(dirname(path));
}
