/**
 * A store's refreshes of its rollups (stateRollups.ts). Rollup rows are ReplacingMergeTree on a
 * version: each refresh writes a greater one than the last, and the refreshes after appends run one
 * after another, so the row kept was computed from the latest (never smaller) set of raw rows.
 */
import type { StateRow } from '../../schemas/messages.ts';
import type { SqlExecutor } from './SqlExecutor.ts';
import { refreshCoarserSql, refreshMinutesSql, ROLLUPS, touchedBy, type Touched } from './stateRollups.ts';
import type { StateTableNames } from './stateTable.ts';

export interface RollupRefresh {
  /** Recomputes the buckets these appended rows touched, after the refreshes already asked for. */
  touched(rows: readonly StateRow[]): Promise<void>;
  /** Recomputes every bucket: rollups made beside states already stored start from all of them. */
  all(): Promise<void>;
}

/** `compact`: whether the states table has the compact layout. */
export function createRollupRefresh(executor: Pick<SqlExecutor, 'command'>, names: StateTableNames, compact: boolean): RollupRefresh {
  let refreshing: Promise<void> = Promise.resolve();
  let lastVersion = 0;
  const nextVersion = () => (lastVersion = Math.max(Date.now() * 1000, lastVersion + 1));
  // In order: hours read minutes, days read hours.
  async function refresh(touched: Touched | undefined): Promise<void> {
    await executor.command(refreshMinutesSql(names, touched, nextVersion(), compact));
    for (const rollup of ROLLUPS.slice(1)) await executor.command(refreshCoarserSql(names, rollup, touched, nextVersion()));
  }

  return {
    touched(rows) {
      const touched = touchedBy(rows);
      const run = refreshing.catch(() => {}).then(() => refresh(touched));
      refreshing = run;
      return run;
    },
    all() {
      const run = refreshing.catch(() => {}).then(() => refresh(undefined));
      refreshing = run;
      return run;
    },
  };
}
