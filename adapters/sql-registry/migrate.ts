/**
 * Applies pending migrations in order, in one transaction, recording each in schema_migrations.
 * A transaction-scoped advisory lock serialises registries starting at once on one database
 * (PostgreSQL: several Fleetstream processes; the lock is per schema so isolated test schemas
 * do not wait on each other).
 */
import { createHash } from 'node:crypto';
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { SqlExecutor } from './executor.ts';
import { migrations as defaultMigrations, type Migration } from './migrations.ts';

function checksum(sql: string): string {
  return createHash('sha256').update(sql, 'utf8').digest('hex');
}

export interface MigrationReport {
  /** Versions applied by this call, in order. */
  applied: number[];
  /** Highest version now in the database. */
  version: number;
}

export interface MigrateOptions {
  /** Stamps applied_at; default the system clock. */
  clock?: Clock;
  /** Default: migrations.ts. */
  migrations?: readonly Migration[];
}

export async function migrate(db: SqlExecutor, options: MigrateOptions = {}): Promise<MigrationReport> {
  const migrations = options.migrations ?? defaultMigrations;
  const clock = options.clock ?? systemClock;
  for (let i = 0; i < migrations.length; i++) {
    if (migrations[i].version !== i + 1) throw new FleetError('INTERNAL', `registry migrations must be numbered 1..n, found ${migrations[i].version} at ${i + 1}`);
  }
  return db.transaction(async (tx) => {
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at bigint NOT NULL
)`);
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('fleetstream.registry.migrate:' || current_schema()))`);
    const { rows } = await tx.query<{ version: number; checksum: string }>('SELECT version, checksum FROM schema_migrations ORDER BY version');
    const known = new Map(migrations.map((m) => [m.version, m]));
    for (const row of rows) {
      const version = Number(row.version);
      const migration = known.get(version);
      if (!migration) {
        throw new FleetError('INTERNAL', `registry database is at migration ${version}, newer than this build knows (${migrations.length}); refusing to run an older build against it`);
      }
      if (checksum(migration.sql) !== row.checksum) {
        throw new FleetError('INTERNAL', `registry migration ${version} (${migration.name}) differs from the one applied to this database`);
      }
    }
    const done = new Set(rows.map((r) => Number(r.version)));
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)', [
        migration.version,
        migration.name,
        checksum(migration.sql),
        clock.now(),
      ]);
      applied.push(migration.version);
    }
    return { applied, version: migrations.length };
  });
}
