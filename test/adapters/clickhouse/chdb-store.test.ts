import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import { randomDoubles, row, storeContract } from '../../contracts/store.contract.ts';
import { newUplinkId } from '../../../engine/kernel/ids.ts';
import type { JsonValue, StateRow } from '../../../schemas/messages.ts';
import { rejectionsContract } from '../../contracts/rejections.contract.ts';
import { chdbStoreFixture } from '../../support/chdbFixture.ts';
import { checkMigrated, earlierStateTable } from '../../support/earlierStateTables.ts';
import { checkRejectionsMigrated, earlierRejectionsTable } from '../../support/earlierRejectionsTable.ts';

const fixture = chdbStoreFixture;

storeContract('chdb', fixture(false)).run();
// The 18.16 layout on chDB: the same suite, the same answers, whatever the server's types.
storeContract('chdb, 18.16 layout', fixture(true)).run();
// Aggregates answered from rollups wherever the range allows.
storeContract('chdb, rollups', fixture(false, true)).run();
storeContract('chdb, 18.16 layout, rollups', fixture(true, true)).run();

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

/** Large enough to go as RowBinary: random doubles, readings, every kind, both uplink id forms, two days. */
function binaryBatch(): StateRow[] {
  const values: JsonValue[] = [...randomDoubles(3000, 7), ...Array.from({ length: 3000 }, (_, i) => Math.round(Math.sin(i) * 4000) / 100)];
  values.push(-0, 1e21, 5e-324, 'tab\tnew\nline back\\slash nul\0 é 😀', '', true, false, null, { nested: [1, 'x', { deep: null }] }, [1, 2.5]);
  const t = Date.UTC(2026, 0, 1, 23);
  return values.map((value, i) => {
    const receivedAt = t + i * 1000;
    return { deviceId: `dévice-${i % 7}`, asset: i % 3 ? 'a' : 'b\tc', ts: receivedAt - (i % 5), receivedAt, value, uplinkId: i % 2 ? newUplinkId(receivedAt) : `up ${i}` };
  });
}

for (const legacyLayout of [false, true]) {
  test(`a batch that goes as RowBinary stores what TabSeparated stores (${legacyLayout ? '18.16' : 'compact'} layout)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
    const text = createChdbStore({ dir, database: 'text', legacyLayout, textInsert: true });
    const binary = createChdbStore({ dir, database: 'binary', legacyLayout });
    try {
      await text.init();
      await binary.init();
      const rows = binaryBatch();
      await text.append(rows);
      await binary.append(rows);
      const devices = [...new Set(rows.map((r) => r.deviceId))];
      for (const deviceId of devices) {
        for (const asset of ['a', 'b\tc']) {
          const expected = rows.filter((r) => r.deviceId === deviceId && r.asset === asset).sort((x, y) => x.ts - y.ts || x.receivedAt - y.receivedAt);
          const back = await binary.history({ deviceId, asset, order: 'asc', limit: 10_000 });
          assert.equal(back, await text.history({ deviceId, asset, order: 'asc', limit: 10_000 }));
          assert.is(back.length, expected.length);
          back.forEach((state, i) => {
            const want = expected[i];
            assert.ok(Object.is(state.value, want.value) || JSON.stringify(state.value) === JSON.stringify(want.value), `${state.value} vs ${want.value}`);
            assert.equal([state.ts, state.receivedAt, state.uplinkId], [want.ts, want.receivedAt, want.uplinkId]);
          });
        }
      }
      if (!legacyLayout) {
        // The compact table's own columns, bit for bit (the 18.16 table's binary rows leave out
        // the decimal copy of numbers, which the exact Float64 makes unneeded).
        const columns = (db: string) => `SELECT device_id, asset, ts, received_lag, uplink_low, uplink_text, value_kind, value_mantissa, value_scale,
          toString(reinterpretAsUInt64(value_float)) AS float_bits, value_string, value_bool FROM ${db}.states ORDER BY ALL`;
        assert.equal(await binary.query(columns('binary')), await text.query(columns('text')));
      }
      // A replay of the same batch folds away, as over text.
      await binary.append(rows);
      assert.equal(await binary.query('SELECT count() AS n FROM binary.states FINAL'), [{ n: rows.length }]);
    } finally {
      await text.close();
      await binary.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

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

for (const layout of ['compact', 'legacy'] as const) {
  test(`a ${layout} states table made before seq is migrated at init: old rows read, a batch's readings at one time kept, replays fold`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
    try {
      const earlier = createChdbStore({ dir });
      for (const sql of earlierStateTable('fleetstream', layout)) await earlier.query(sql);
      await earlier.close();
      await checkMigrated(() => createChdbStore({ dir }), 'fleetstream', layout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('a rejections table made before item is migrated at init: old rows read, replays fold, refusals in different items of one uplink are each kept', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-chdb-'));
  try {
    const earlier = createChdbStore({ dir });
    for (const sql of earlierRejectionsTable('fleetstream')) await earlier.query(sql);
    await earlier.close();
    await checkRejectionsMigrated(() => createChdbStore({ dir }), 'fleetstream');
  } finally {
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
