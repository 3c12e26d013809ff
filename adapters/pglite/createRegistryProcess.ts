/**
 * Runs as a child process (createPgliteRegistry.ts): creates a registry database in the directory
 * given as its argument — loaded from the registry snapshot when one is given and loads
 * (registrySnapshot.ts), else PostgreSQL's initdb and the registry's schema — closes it and exits.
 * With the process goes every byte that needed: its WebAssembly instances, their memory (which
 * never shrinks: unpacking the snapshot alone grows it by ~150 MB) and compiled code, and the
 * allocator's arenas (a worker thread would hand those back to the service's process, which keeps
 * most of them).
 *
 *   node createRegistryProcess.ts <dir> <postgresql.conf text> <snapshot file, or ''>
 */
import { PGlite } from '@electric-sql/pglite';
import { createSqlRegistry } from '../sql-registry/createSqlRegistry.ts';
import { pgliteExecutor } from './pgliteExecutor.ts';
import { openFromSnapshot } from './registrySnapshot.ts';

const [dir, postgresqlconf, snapshot] = process.argv.slice(2);
const loaded = snapshot ? await openFromSnapshot({ file: snapshot, dir, postgresqlconf }) : undefined;
const registry = loaded ?? await createSqlRegistry(pgliteExecutor(await PGlite.create({ dataDir: dir, postgresqlconf })));
await registry.close();
