/** A chDB store in a fresh directory, removed by `cleanup` (the store and retention contracts' fixture). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChdbStore } from '../../adapters/chdb/createChdbStore.ts';

export function chdbStoreFixture(legacyLayout: boolean, rollups = false) {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
    const store = createChdbStore({ dir, legacyLayout, rollups });
    return {
      store,
      async cleanup() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  };
}
