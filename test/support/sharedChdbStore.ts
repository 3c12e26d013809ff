/**
 * One chDB store for every stack of a test process that stores states: chDB allows one data dir
 * per process, so stacks alive at once share it (their devices' ids differ). Opened by the first
 * stack that asks, closed and removed when the last one lets go.
 */
import { createChdbStore } from '../../adapters/chdb/createChdbStore.ts';
import type { ServiceStore } from '../../app/openPorts.ts';
import { tempDir } from './tmp.ts';

let shared: { store: Promise<ServiceStore>; holders: number; tmp: { dir: string; remove(): void } } | undefined;

/** The process's chDB store, initialised; give it back with releaseChdbStore once. */
export function acquireChdbStore(): Promise<ServiceStore> {
  if (shared === undefined) {
    const tmp = tempDir('chdb');
    const store = createChdbStore({ dir: `${tmp.dir}/chdb` });
    const opened = shared = { store: store.init().then(() => store), holders: 0, tmp };
    // A store that failed to open is forgotten: the next stack tries again.
    opened.store.catch(async () => {
      if (shared === opened) shared = undefined;
      await store.close().catch(() => undefined);
      tmp.remove();
    });
  }
  shared.holders++;
  return shared.store;
}

export async function releaseChdbStore(): Promise<void> {
  const held = shared;
  if (held === undefined || --held.holders > 0) return;
  shared = undefined;
  try {
    await (await held.store).close();
  } finally {
    held.tmp.remove();
  }
}
