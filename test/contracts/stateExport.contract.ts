/**
 * Contract of the state export port (engine/ports/stateExport.ts), run on chDB (both layouts) and
 * on the ClickHouse server of CLICKHOUSE_URL (18.16): CSV and NDJSON written by the engine, each
 * state once, values exact and typed, the selection's devices, assets and window only; string
 * values that a spreadsheet would run guarded; Parquet where the engine writes it, NOT_ACCEPTABLE
 * where not; hostile selections refused; at most `maxConcurrent` at once; a reader that leaves
 * stops the query and frees its slot.
 */
import { suite } from '../support/suite.ts';
import * as assert from 'uvu/assert';
import type { ExportSelection, StateExport } from '../../engine/ports/stateExport.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { JsonValue } from '../../schemas/messages.ts';
import { rejectsWith, row } from './store.contract.ts';

export interface ExportFixture {
  /** Its maxConcurrent is 2. */
  store: StateStore & StateExport;
  /** Whether the engine writes Parquet; then how its rows read back (as JSON objects). */
  parquet: boolean;
  parquetRows?(bytes: Buffer): Promise<Record<string, unknown>[]>;
  /** Export queries of this store running now in its engine. */
  running(): Promise<number>;
  cleanup(): Promise<void>;
}

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0, 7);

export async function readAll(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

/** RFC 4180 fields of one CSV text (quotes doubled inside quoted fields). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let field = '';
  let fields: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { fields.push(field); field = ''; } else if (c === '\n') { fields.push(field); rows.push(fields); fields = []; field = ''; } else field += c;
  }
  if (field !== '' || fields.length > 0) { fields.push(field); rows.push(fields); }
  return rows;
}

const VALUES: Record<string, JsonValue> = {
  num: 21.37,
  neg: -5,
  tiny: 5e-324,
  big: 1e21,
  text: 'a "quoted", back\\slash\nnew line\ttab \u0001 ünïcødé 🚀',
  formula: '=HYPERLINK("http://x")',
  plus: '+1',
  at: '@SUM(A1)',
  flag: true,
  off: false,
  obj: { a: [1, 'x'], b: null },
  nothing: null,
};

export function stateExportContract(name: string, factory: () => Promise<ExportFixture>) {
  const test = suite<{ fixture?: ExportFixture }>(`state export contract: ${name}`);
  test.before.each(async (ctx) => {
    ctx.fixture = await factory();
    await ctx.fixture.store.init();
  });
  test.after.each(async (ctx) => {
    await ctx.fixture?.cleanup();
    ctx.fixture = undefined;
  });

  async function seed(s: StateStore): Promise<void> {
    const rows = Object.entries(VALUES).map(([asset, value], i) => row('d1', asset, T0 + i, value));
    // A replay: the same uplink again (exported once), and another device, another time.
    await s.append([...rows, rows[0], row('d2', 'num', T0, 1), row('d1', 'num', T0 + 3_600_000, 2)]);
    await s.append([rows[0]]);
  }
  const ndjson = async (s: StateExport, q: Omit<ExportSelection, 'format'>) =>
    (await readAll(await s.exportStates({ ...q, format: 'ndjson' }))).toString('utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);

  test('NDJSON: one JSON object per state, each once, values typed and exact, times RFC 3339', async (ctx) => {
    const s = ctx.fixture!.store;
    await seed(s);
    const lines = await ndjson(s, { devices: ['d1'], to: T0 + 1000 });
    assert.is(lines.length, Object.keys(VALUES).length, 'the replayed uplink once, the later state and d2 left out');
    const byAsset = new Map(lines.map((l) => [l.asset as string, l]));
    for (const [asset, value] of Object.entries(VALUES)) assert.equal(byAsset.get(asset)?.value, value, asset);
    const num = byAsset.get('num')!;
    assert.equal(num, { device: 'd1', asset: 'num', at: new Date(T0).toISOString(), receivedAt: new Date(T0 + 5).toISOString(), kind: 'number', value: 21.37, uplinkId: `u-${T0}`, seq: 0 });
    assert.is(byAsset.get('formula')!.value, VALUES.formula, 'NDJSON carries strings as they are');
  });

  test('CSV: a header, RFC 4180 quoting, exact numbers, formula-like strings guarded, negative numbers not', async (ctx) => {
    const s = ctx.fixture!.store;
    await seed(s);
    const text = (await readAll(await s.exportStates({ devices: ['d1'], to: T0 + 1000, format: 'csv' }))).toString('utf8');
    const [head, ...rows] = parseCsv(text);
    assert.equal(head, ['device', 'asset', 'at', 'received_at', 'kind', 'value', 'uplink_id', 'seq']);
    assert.is(rows.length, Object.keys(VALUES).length);
    const value = new Map(rows.map((r) => [r[1], r[5]]));
    assert.is(value.get('num'), '21.37');
    assert.is(value.get('neg'), '-5');
    assert.is(value.get('tiny'), '5e-324');
    assert.is(value.get('text'), VALUES.text);
    assert.is(value.get('formula'), `'${VALUES.formula}`);
    assert.is(value.get('plus'), "'+1");
    assert.is(value.get('at'), "'@SUM(A1)");
    assert.is(value.get('flag'), 'true');
    assert.equal(JSON.parse(value.get('obj')!), VALUES.obj);
    assert.is(value.get('nothing'), '');
    assert.is(rows.find((r) => r[1] === 'num')![2], new Date(T0).toISOString());
  });

  test('the selection: devices, assets and [from, to) only', async (ctx) => {
    const s = ctx.fixture!.store;
    await seed(s);
    const nums = await ndjson(s, { devices: ['d1', 'd2'], assets: ['num'] });
    assert.equal(nums.map((l) => `${l.device}:${l.value}`).sort(), ['d1:2', 'd1:21.37', 'd2:1']);
    const window = await ndjson(s, { devices: ['d1', 'd2'], assets: ['num'], from: T0 + 1, to: T0 + 3_600_001 });
    assert.equal(window.map((l) => l.value), [2]);
    assert.equal(await ndjson(s, { devices: ['nobody'] }), []);
  });

  test('Parquet where the engine writes it; NOT_ACCEPTABLE naming what it writes where not', async (ctx) => {
    const { store: s, parquet } = ctx.fixture!;
    await seed(s);
    const formats = await s.exportFormats();
    assert.equal(formats, parquet ? ['csv', 'ndjson', 'parquet'] : ['csv', 'ndjson']);
    if (!parquet) {
      const error = await rejectsWith(s.exportStates({ devices: ['d1'], format: 'parquet' }), 'NOT_ACCEPTABLE');
      assert.equal(error.detail?.allowed, ['csv', 'ndjson']);
      return;
    }
    const bytes = await readAll(await s.exportStates({ devices: ['d1'], format: 'parquet' }));
    assert.is(bytes.subarray(0, 4).toString('latin1'), 'PAR1');
    assert.is(bytes.subarray(bytes.length - 4).toString('latin1'), 'PAR1');
    const rows = await ctx.fixture!.parquetRows!(bytes);
    assert.is(rows.length, Object.keys(VALUES).length + 1, 'one file holding every state once');
    const num = rows.find((r) => r.asset === 'num' && Number(r.number) === 21.37)!;
    assert.is(num.device, 'd1');
    assert.is(num.kind, 'number');
    assert.is(num.value, '21.37');
    assert.is(String(num.at), '2026-01-01 12:00:00.007');
    const text = rows.find((r) => r.asset === 'text')!;
    assert.is(text.value, VALUES.text, 'Parquet carries strings as they are');
    assert.is(text.number, null);
    const none = await readAll(await s.exportStates({ devices: ['nobody'], format: 'parquet' }));
    assert.is(none.subarray(0, 4).toString('latin1'), 'PAR1', 'no rows: still a Parquet file');
    assert.equal(await ctx.fixture!.parquetRows!(none), []);
    // Left before reading a byte, with rows and without: the file goes, nothing fails later.
    for (const devices of [['d1'], ['nobody']]) await (await s.exportStates({ devices, format: 'parquet' }))[Symbol.asyncIterator]().return?.();
  });

  test('hostile selections are refused before the engine sees them', async (ctx) => {
    const s = ctx.fixture!.store;
    await seed(s);
    await rejectsWith(s.exportStates({ devices: ["d1') OR 1=1 --"], format: 'csv' }), 'VALIDATION_FAILED');
    await rejectsWith(s.exportStates({ devices: ['d1'], assets: ["num' OR '1'='1"], format: 'csv' }), 'VALIDATION_FAILED');
    await rejectsWith(s.exportStates({ devices: ['d\u00e9'], format: 'csv' }), 'VALIDATION_FAILED');
    await rejectsWith(s.exportStates({ devices: [], format: 'csv' }), 'VALIDATION_FAILED');
    await rejectsWith(s.exportStates({ devices: Array.from({ length: 501 }, (_, i) => `d${i}`), format: 'csv' }), 'VALIDATION_FAILED');
    await rejectsWith(s.exportStates({ devices: ['d1'], from: 5, to: 5, format: 'csv' }), 'VALIDATION_FAILED');
    await rejectsWith(s.exportStates({ devices: ['d1'], from: Number.NaN, format: 'csv' }), 'VALIDATION_FAILED');
    await rejectsWith(s.exportStates({ devices: ['d1'], format: 'xlsx' as 'csv' }), 'VALIDATION_FAILED');
    // 500 devices is the most, and works.
    const many = Array.from({ length: 499 }, (_, i) => `other-${i}`);
    assert.is((await ndjson(s, { devices: [...many, 'd1'], assets: ['num'] })).length, 2);
  });

  test('at most maxConcurrent exports at once (BACKPRESSURE), a slot freed when a stream ends or its reader leaves; the query stops', async (ctx) => {
    const { store: s, running } = ctx.fixture!;
    const rows = Array.from({ length: 50_000 }, (_, i) => row('big', 'num', T0 + i, i));
    await s.append(rows);
    const a = await s.exportStates({ devices: ['big'], format: 'csv' });
    const controller = new AbortController();
    const b = await s.exportStates({ devices: ['big'], format: 'csv', signal: controller.signal });
    const busy = await rejectsWith(s.exportStates({ devices: ['big'], format: 'csv' }), 'BACKPRESSURE');
    assert.ok(busy.retriable);
    assert.ok((await readAll(a)).length > 50_000 * 10, 'the first export read to its end');
    const reader = b[Symbol.asyncIterator]();
    assert.ok(!(await reader.next()).done);
    controller.abort();
    // The reader leaves: the rest of its stream ends (or fails) at once.
    await reader.return?.(undefined);
    const again = await s.exportStates({ devices: ['big'], format: 'ndjson' });
    const third = await s.exportStates({ devices: ['big'], assets: ['none'], format: 'csv' });
    assert.is((await readAll(again)).toString('utf8').split('\n').filter(Boolean).length, 50_000);
    assert.is((await readAll(third)).toString('utf8'), 'device,asset,at,received_at,kind,value,uplink_id,seq\n', 'the header alone');
    const deadline = Date.now() + 10_000;
    while ((await running()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.is(await running(), 0, 'no export query left running');
  });

  return test;
}
