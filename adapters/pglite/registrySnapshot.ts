/**
 * A new registry's database as it is after initdb and every migration (scripts/registry-snapshot.ts
 * writes it; test/adapters/registry/pglite-registry.test.ts checks that it is current), where initdb takes ~4 s and a
 * second PostgreSQL instance. It holds no data and no secret: the schema only, as every new
 * registry has it. A data dir gets it unpacked (unpackSnapshot); an in-memory registry loads it
 * through PGlite (openFromSnapshot).
 */
import { closeSync, createReadStream, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { createSqlRegistry, type SqlRegistry, type SqlRegistryOptions } from '../sql-registry/createSqlRegistry.ts';
import type { Clock } from '../../engine/kernel/clock.ts';
import { syncDirSync } from '../syncDir.ts';
import { LOCK_FILE } from './dataDirLock.ts';
import { pgliteExecutor } from './pgliteExecutor.ts';

export const REGISTRY_SNAPSHOT = fileURLToPath(new URL('./registry-snapshot.tar.gz', import.meta.url));

/** Only our lock file in it (or nothing): a directory a snapshot may be loaded into and, should that fail, emptied again. */
function emptyButLock(dir: string): boolean {
  return readdirSync(dir).every((name) => name === LOCK_FILE);
}

/** Removes everything but the lock file: what a failed load or unpack left in a new registry's directory. */
export function clearNewDir(dir: string): void {
  for (const name of readdirSync(dir)) if (name !== LOCK_FILE) rmSync(join(dir, name), { recursive: true, force: true });
}

const BLOCK = 512;

function tarField(block: Buffer, at: number, length: number): string {
  const end = block.indexOf(0, at);
  return block.toString('latin1', at, end < 0 || end > at + length ? at + length : end);
}

function tarNumber(block: Buffer, at: number, length: number, what: string): number {
  const text = tarField(block, at, length).trim();
  if (!/^[0-7]+$/.test(text)) throw new Error(`registry snapshot: bad ${what} "${text}"`);
  return parseInt(text, 8);
}

/**
 * Writes the snapshot's files into `dir` (empty but for our lock file) and syncs them, in this
 * process and without PostgreSQL: the tarball PGlite's dumpDataDir writes is plain ustar, regular
 * files and directories only, which is all this reads; anything else (another entry type, a name
 * leaving `dir`, a truncated archive) refuses the snapshot. Resolves false, `dir` emptied again, when
 * it cannot be used; the caller then runs initdb. Read as a stream, 64 KiB at a time: decompressed
 * whole (40 MB) the buffers stay with the allocator for good (~16 MB of idle RSS, measured); loaded
 * through PGlite the WebAssembly memory grows for good (~150 MB); opening the unpacked database
 * afterwards costs the process what a restart costs.
 */
export async function unpackSnapshot(file: string, dir: string): Promise<boolean> {
  if (!emptyButLock(dir)) return false;
  const written: string[] = [];
  let fd: number | undefined;
  try {
    let header = Buffer.alloc(0);
    let remaining = 0;
    let padding = 0;
    let ended = false;
    for await (const piece of createReadStream(file).pipe(createGunzip())) {
      let chunk = piece as Buffer;
      while (chunk.length > 0 && !ended) {
        if (fd !== undefined) {
          const n = Math.min(remaining, chunk.length);
          for (let done = 0; done < n;) done += writeSync(fd, chunk, done, n - done);
          remaining -= n;
          chunk = chunk.subarray(n);
          if (remaining === 0) {
            fsyncSync(fd);
            closeSync(fd);
            fd = undefined;
          }
        } else if (padding > 0) {
          const n = Math.min(padding, chunk.length);
          padding -= n;
          chunk = chunk.subarray(n);
        } else {
          const n = Math.min(BLOCK - header.length, chunk.length);
          header = Buffer.concat([header, chunk.subarray(0, n)]);
          chunk = chunk.subarray(n);
          if (header.length < BLOCK) continue;
          const entry = readTarEntry(header, dir);
          header = Buffer.alloc(0);
          if (entry === undefined) ended = true;
          else if (entry.type === 'dir') mkdirSync(entry.path, { recursive: true, mode: entry.mode | 0o700 });
          else {
            mkdirSync(join(entry.path, '..'), { recursive: true });
            fd = openSync(entry.path, 'wx', entry.mode | 0o600);
            written.push(entry.path);
            remaining = entry.size;
            padding = (BLOCK - (entry.size % BLOCK)) % BLOCK;
            if (remaining === 0) {
              closeSync(fd);
              fd = undefined;
            }
          }
        }
      }
    }
    if (!ended || fd !== undefined) throw new Error('registry snapshot: truncated archive');
    // The files' directory entries too, deepest first.
    const dirs = [...new Set(written.map((path) => join(path, '..')))].sort((x, y) => y.length - x.length);
    for (const each of [...dirs, dir]) syncDirSync(each);
    return written.length > 0;
  } catch {
    if (fd !== undefined) closeSync(fd);
    clearNewDir(dir);
    return false;
  }
}

/** One ustar header: a directory or a regular file inside `dir`, or undefined at the end-of-archive block. */
function readTarEntry(header: Buffer, dir: string): { type: 'dir' | 'file'; path: string; mode: number; size: number } | undefined {
  if (header.every((byte) => byte === 0)) return undefined;
  if (tarField(header, 257, 6) !== 'ustar') throw new Error('registry snapshot: not a ustar archive');
  const prefix = tarField(header, 345, 155);
  const name = (prefix ? `${prefix}/` : '') + tarField(header, 0, 100);
  const parts = name.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.length === 0 || parts.some((part) => part === '..')) throw new Error(`registry snapshot: entry ${JSON.stringify(name)} leaves the directory`);
  const type = String.fromCharCode(header[156]);
  const mode = tarNumber(header, 100, 8, 'mode') & 0o777;
  const size = tarNumber(header, 124, 12, 'size');
  if (type === '5') return { type: 'dir', path: join(dir, ...parts), mode, size: 0 };
  if (type === '0' || type === '\0') return { type: 'file', path: join(dir, ...parts), mode, size };
  throw new Error(`registry snapshot: entry type ${JSON.stringify(type)} of ${name} is not a file or directory`);
}

export interface SnapshotOptions {
  /** The tarball. */
  file: string;
  postgresqlconf: string;
  clock?: Clock;
  /** The registry's own options (clock, quota defaults). */
  registry?: SqlRegistryOptions;
}

/**
 * A new in-memory registry loaded from the snapshot through PGlite and migrated to this build;
 * undefined when there is no snapshot or it does not load or migrate (another PGlite, an edited
 * migration): the caller then runs initdb as without one.
 */
export async function openFromSnapshot(options: SnapshotOptions): Promise<SqlRegistry | undefined> {
  let snapshot: Buffer;
  try {
    snapshot = readFileSync(options.file);
  } catch {
    return undefined;
  }
  let db: PGlite | undefined;
  try {
    db = await PGlite.create({ loadDataDir: new Blob([snapshot]), postgresqlconf: options.postgresqlconf });
    return await createSqlRegistry(pgliteExecutor(db), { ...options.registry, ...(options.clock ? { clock: options.clock } : {}) });
  } catch {
    await db?.close().catch(() => undefined);
    return undefined;
  }
}
