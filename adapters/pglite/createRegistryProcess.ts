/**
 * Runs as a child process (createPgliteRegistry.ts): creates a registry database in the directory
 * given as its argument — PostgreSQL's initdb, then the registry's schema — closes it and exits.
 * With the process goes every byte initdb needed: its WebAssembly instances, their memory and
 * compiled code, and the allocator's arenas (a worker thread would hand those back to the service's
 * process, which keeps most of them).
 *
 *   node createRegistryProcess.ts <dir> <postgresql.conf text>
 */
import { PGlite } from '@electric-sql/pglite';
import { createSqlRegistry } from '../sql-registry/createSqlRegistry.ts';
import { pgliteExecutor } from './pgliteExecutor.ts';

const [dir, postgresqlconf] = process.argv.slice(2);
const db = await PGlite.create({ dataDir: dir, postgresqlconf });
const registry = await createSqlRegistry(pgliteExecutor(db));
await registry.close();
