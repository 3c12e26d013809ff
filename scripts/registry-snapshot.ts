/**
 * Writes adapters/pglite/registry-snapshot.tar.gz: the database of a new embedded registry (initdb,
 * then every migration of adapters/sql-registry/migrations.ts), which createPgliteRegistry loads
 * instead of running initdb. Run it after adding a migration or upgrading @electric-sql/pglite;
 * test/adapters/registry/pglite-registry.test.ts fails while the snapshot is not current.
 *
 *   npx node scripts/registry-snapshot.ts
 */
import { writeFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { REGISTRY_SNAPSHOT } from '../adapters/pglite/createPgliteRegistry.ts';
import { pgliteExecutor } from '../adapters/pglite/pgliteExecutor.ts';
import { migrate } from '../adapters/sql-registry/migrate.ts';

const db = await PGlite.create();
const { version } = await migrate(pgliteExecutor(db));
const tarball = await db.dumpDataDir('gzip');
await db.close();
writeFileSync(REGISTRY_SNAPSHOT, Buffer.from(await tarball.arrayBuffer()));
console.log(`${REGISTRY_SNAPSHOT}: migration ${version}, ${tarball.size} bytes`);
