/**
 * Every SQL block of docs/analytics.md runs as written and answers: on chDB in the compact layout,
 * on chDB in the 18.16 layout and, when CLICKHOUSE_URL is set, on the ClickHouse server (18.16 in
 * CI), each a store opened with rollups on. Only the database is renamed on the
 * server, which other runs share. The answers are the same on every engine and layout.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createChdbStore } from '../../../adapters/chdb/createChdbStore.ts';
import { createClickHouseStore } from '../../../adapters/clickhouse/createClickHouseStore.ts';
import type { SqlStateStore } from '../../../adapters/clickhouse-sql/createSqlStateStore.ts';
import { newUplinkId } from '../../../engine/kernel/ids.ts';
import type { JsonValue, StateRow } from '../../../schemas/messages.ts';

const url = process.env.CLICKHOUSE_URL;
const doc = readFileSync(new URL('../../../docs/analytics.md', import.meta.url), 'utf8');
const blocks = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1].trim());

const T0 = Date.UTC(2026, 0, 1); // 1767225600000, the doc's `from`

/** 5 devices: temperature and battery every minute for 3 hours, then hourly for 3 days; a status string now and then. */
function rows(): StateRow[] {
  const out: StateRow[] = [];
  for (let d = 0; d < 5; d++) {
    const times = [...Array.from({ length: 180 }, (_, m) => T0 + m * 60_000), ...Array.from({ length: 72 }, (_, h) => T0 + 3 * 3_600_000 + h * 3_600_000)];
    times.forEach((t, i) => {
      const ts = t + d * 1000;
      const receivedAt = ts + 150 + (i % 7);
      const uplinkId = newUplinkId(receivedAt);
      const values: Array<[string, JsonValue]> = [['temperature', Math.round((20 + d + Math.sin(i / 10) * 3) * 100) / 100], ['battery', 100 - d * 20 - i / 100]];
      if (i % 50 === 0) values.push(['status', i % 100 === 0 ? 'ok' : { code: i }]);
      if (i % 60 === 0) values.push(['door', i % 120 === 0]);
      for (const [asset, value] of values) out.push({ deviceId: `device-${d}`, asset, ts, receivedAt, value, uplinkId });
    });
  }
  return out;
}

function normalise(result: Record<string, unknown>[]): unknown[] {
  // 64-bit integers come quoted from 18.16's JSON and bare from chDB's.
  return result.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v])));
}

/**
 * Deep equality, with averages allowed to differ in the last bits: engines add Float64 in different
 * orders (threads, versions). Everything else, counts included, must match exactly.
 */
function same(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a === b || Math.abs(a - b) <= 1e-12 * Math.max(Math.abs(a), Math.abs(b));
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return a === b;
}

async function answers(store: SqlStateStore, database: string): Promise<Map<string, unknown[]>> {
  await store.init();
  const all = rows();
  await store.append(all);
  await store.append(all.filter((_, i) => i % 4 === 0)); // a replay must not show
  // The rejections block reads what admission refused: one whole uplink, two items of one batch.
  const refused = newUplinkId(T0 + 5_000);
  const rejections = [
    { deviceId: 'device-1', rejectedAt: T0 + 1_000, uplinkId: newUplinkId(T0 + 1_000), code: 'MALFORMED_JSON', reason: 'body is not valid JSON', asset: '', channel: 'http' },
    { deviceId: 'device-1', rejectedAt: T0 + 5_000, uplinkId: refused, code: 'DUPLICATE_READING', reason: 'item 1: …', asset: 'temperature', channel: 'mqtt', item: 1 },
    { deviceId: 'device-1', rejectedAt: T0 + 5_000, uplinkId: refused, code: 'DUPLICATE_READING', reason: 'item 2: …', asset: 'temperature', channel: 'mqtt', item: 2 },
  ];
  await store.rejections.append(rejections);
  await store.rejections.append(rejections); // a replay must not show
  await store.rollupsCaughtUp();
  const out = new Map<string, unknown[]>();
  for (const block of blocks) {
    const sql = block.replaceAll('fleetstream.', `${database}.`).replaceAll("'fleetstream'", `'${database}'`);
    const result = await store.query(sql);
    assert.ok(result.length > 0, `no rows from:\n${sql}`);
    out.set(block, normalise(result));
  }
  return out;
}

test('the doc has queries for the views and every rollup', () => {
  assert.ok(blocks.filter((b) => /state_rows|latest_states/.test(b)).length >= 4);
  for (const rollup of ['states_minute', 'states_hour', 'states_day']) assert.ok(blocks.some((b) => b.includes(`fleetstream.${rollup} FINAL`)), rollup);
});

test('every query of docs/analytics.md runs and answers the same on every engine and layout', async () => {
  const results: Array<[string, Map<string, unknown[]>]> = [];
  for (const legacyLayout of [false, true]) {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-docs-'));
    const store = createChdbStore({ dir, legacyLayout, rollups: true });
    try {
      results.push([`chDB ${legacyLayout ? '18.16' : 'compact'} layout`, await answers(store, 'fleetstream')]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (url) {
    const database = `fleetstream_docs_${process.pid}`;
    const store = createClickHouseStore({ url, database, rollups: true });
    try {
      await store.init();
      results.push([`server ${store.layout.capabilities?.version}`, await answers(store, database)]);
    } finally {
      await store.close();
      await fetch(`${url}/?query=${encodeURIComponent(`DROP DATABASE IF EXISTS ${database}`)}`, { method: 'POST' });
    }
  } else {
    console.log('analytics-docs: CLICKHOUSE_URL not set; the doc queries ran on chDB only');
  }
  const [reference, first] = results[0];
  for (const [label, other] of results.slice(1)) {
    for (const [sql, answer] of other) {
      if (sql.includes('system.')) continue; // the layout itself differs, by design
      assert.ok(same(answer, first.get(sql)), `${label} vs ${reference}:\n${sql}\n${JSON.stringify(answer)}\n${JSON.stringify(first.get(sql))}`);
    }
  }
});

test.run();
