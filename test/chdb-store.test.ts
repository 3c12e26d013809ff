import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { FleetError } from '../engine/kernel/errors.ts';
import { row, storeContract } from './contracts/store.contract.ts';
import { rejectionsContract } from './contracts/rejections.contract.ts';

function fixture(legacyLayout: boolean, rollups = false) {
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

storeContract('chdb', fixture(false)).run();
// The 18.16 layout on chDB: the same suite, the same answers, whatever the server's types.
storeContract('chdb, 18.16 layout', fixture(true)).run();
// Aggregates answered from rollups wherever the range allows.
storeContract('chdb, rollups', fixture(false, true)).run();

rejectionsContract('chdb', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
  const store = createChdbStore({ dir });
  await store.init();
  return {
    rejections: store.rejections,
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}).run();

test('states survive closing and reopening the data directory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
  try {
    const first = createChdbStore({ dir, database: 'reopen', table: 'st' });
    await first.init();
    await first.append([row('d1', 'a', 1000, 'kept'), row('d1', 'a', 2000, { n: 1 })]);
    await first.close();
    const second = createChdbStore({ dir, database: 'reopen', table: 'st' });
    await second.init();
    assert.equal((await second.history({ deviceId: 'd1', asset: 'a', order: 'asc' })).map((s) => s.value), ['kept', { n: 1 }]);
    await second.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a second data directory in the same process is refused while the first is open', async () => {
  const a = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
  const b = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
  let first: ReturnType<typeof createChdbStore> | undefined;
  try {
    first = createChdbStore({ dir: a });
    let error: unknown;
    try {
      createChdbStore({ dir: b });
    } catch (e) {
      error = e;
    }
    assert.instance(error, FleetError);
    assert.is((error as FleetError).code, 'UNAVAILABLE');
    assert.is((error as FleetError).retriable, false);
  } finally {
    await first?.close();
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  }
});

test('retentionDays drops states older than that many days (TTL, applied as parts merge)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
  const store = createChdbStore({ dir, retentionDays: 30 });
  try {
    await store.init();
    assert.is(store.layout.kind, 'compact');
    const now = Date.now();
    await store.append([row('d1', 'a', now - 400 * 86_400_000, 'old'), row('d1', 'a', now - 1000, 'recent')]);
    await store.query('OPTIMIZE TABLE fleetstream.states FINAL');
    assert.equal((await store.history({ deviceId: 'd1', asset: 'a' })).map((s) => s.value), ['recent']);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad options are refused before anything opens', () => {
  assert.throws(() => createChdbStore({ dir: '' }), /dir is required/);
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
  try {
    assert.throws(() => createChdbStore({ dir, database: 'x`; DROP' }), /database must match/);
    assert.throws(() => createChdbStore({ dir, table: 'a.b' }), /table must match/);
    assert.throws(() => createChdbStore({ dir, retentionDays: 0 }), /retentionDays must be a positive integer/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
