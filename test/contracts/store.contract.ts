/**
 * Contract of the state store port (engine/ports/store.ts). Every adapter runs this suite:
 *
 *   storeContract('chdb', async () => ({ store, cleanup })).run();
 *
 * The factory returns a fresh, empty, not yet initialised store and a cleanup that closes it and
 * removes what it created. Decisions the port leaves open and this suite fixes:
 * - latest() is sorted by asset; ties on ts go to the greater receivedAt, then the greater uplinkId.
 * - history() ties on ts are ordered by receivedAt, then uplinkId, then seq, in the query's
 *   direction: the newest of history() is the entry of latest(). Rows of one uplink that differ only
 *   in seq (a batch's readings sent without `at`) are all kept; StoredState.seq is 0 for a row
 *   appended without one.
 * - aggregate() returns only buckets that hold states, oldest first, aligned to the epoch (UTC),
 *   floor also for negative ts. count counts every state; min/max/avg cover numbers only and are
 *   null when a bucket holds none (booleans are not numbers).
 * - Bad rows fail the whole append call with INVALID_STATE and store nothing of it; bad queries fail
 *   VALIDATION_FAILED. Neither is retriable.
 */
import { suite } from '../support/suite.ts';
import * as assert from 'uvu/assert';
import { FleetError } from '../../engine/kernel/errors.ts';
import { newUplinkId } from '../../engine/kernel/ids.ts';
import type { StateStore, StoredState } from '../../engine/ports/store.ts';
import type { JsonValue, StateRow } from '../../schemas/messages.ts';

export interface StoreFixture {
  store: StateStore;
  cleanup(): Promise<void>;
}

interface Context {
  fixture?: StoreFixture;
}

const T0 = Date.UTC(2024, 0, 1); // a minute, hour and day boundary
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

export function row(deviceId: string, asset: string, ts: number, value: JsonValue, uplinkId = `u-${ts}`, receivedAt = ts + 5): StateRow {
  return { deviceId, asset, ts, receivedAt, value, uplinkId };
}

export async function rejectsWith(promise: Promise<unknown>, code: string): Promise<FleetError> {
  try {
    await promise;
  } catch (error) {
    assert.instance(error, FleetError);
    assert.is((error as FleetError).code, code, (error as Error).message);
    return error as FleetError;
  }
  assert.unreachable(`expected a ${code} rejection`);
  throw new Error('unreachable');
}

const values = (states: StoredState[]) => states.map((s) => s.value);

/** Finite doubles from random bit patterns (every exponent, subnormals included), reproducible by seed. */
export function randomDoubles(count: number, seed: number): number[] {
  const view = new DataView(new ArrayBuffer(8));
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const numbers: number[] = [];
  while (numbers.length < count) {
    view.setUint32(0, next());
    view.setUint32(4, next());
    const x = view.getFloat64(0);
    if (Number.isFinite(x)) numbers.push(x);
  }
  return numbers;
}

export function storeContract(name: string, factory: () => Promise<StoreFixture>) {
  const test = suite<Context>(`store contract: ${name}`);

  test.before.each(async (ctx) => {
    ctx.fixture = await factory();
    await ctx.fixture.store.init();
  });
  test.after.each(async (ctx) => {
    await ctx.fixture?.cleanup();
    ctx.fixture = undefined;
  });

  const store = (ctx: Context) => ctx.fixture!.store;

  test('init is idempotent and an empty store answers empty', async (ctx) => {
    await store(ctx).init();
    assert.equal(await store(ctx).latest('d1'), []);
    assert.equal(await store(ctx).history({ deviceId: 'd1', asset: 'a' }), []);
    assert.equal(await store(ctx).aggregate({ deviceId: 'd1', asset: 'a', from: T0, to: T0 + DAY, resolution: 'hour' }), []);
    await store(ctx).append([]);
    assert.equal(await store(ctx).latest('d1'), []);
  });

  test('latest gives one state per asset, the one with the greatest ts, whatever the append order', async (ctx) => {
    const s = store(ctx);
    await s.append([row('d1', 'temp', T0 + 2000, 21.5), row('d1', 'hum', T0 + 1000, 40)]);
    await s.append([row('d1', 'temp', T0 + 3000, 22), row('d1', 'temp', T0 + 1000, 20)]);
    await s.append([row('d1', 'hum', T0 + 500, 45)]);
    assert.equal(await s.latest('d1'), [
      { asset: 'hum', ts: T0 + 1000, receivedAt: T0 + 1005, value: 40, uplinkId: `u-${T0 + 1000}`, seq: 0 },
      { asset: 'temp', ts: T0 + 3000, receivedAt: T0 + 3005, value: 22, uplinkId: `u-${T0 + 3000}`, seq: 0 },
    ]);
  });

  test('latest breaks ts ties by receivedAt, then uplinkId', async (ctx) => {
    const s = store(ctx);
    await s.append([row('d1', 'a', T0, 'older receive', 'u-b', T0 + 1), row('d1', 'a', T0, 'newer receive', 'u-a', T0 + 2)]);
    assert.equal(values(await s.latest('d1')), ['newer receive']);
    await s.append([row('d1', 'b', T0, 'first id', 'u-1', T0), row('d1', 'b', T0, 'last id', 'u-2', T0)]);
    assert.equal(values(await s.latest('d1')), ['newer receive', 'last id']);
  });

  test('history is newest first with a default limit of 100', async (ctx) => {
    const s = store(ctx);
    await s.append(Array.from({ length: 150 }, (_, i) => row('d1', 'a', T0 + i * 1000, i)));
    const states = await s.history({ deviceId: 'd1', asset: 'a' });
    assert.is(states.length, 100);
    assert.is(states[0].value, 149);
    assert.is(states[99].value, 50);
    assert.equal(states[0], { asset: 'a', ts: T0 + 149_000, receivedAt: T0 + 149_005, value: 149, uplinkId: `u-${T0 + 149_000}`, seq: 0 });
  });

  test('history: from inclusive, to exclusive, limit and order', async (ctx) => {
    const s = store(ctx);
    await s.append(Array.from({ length: 10 }, (_, i) => row('d1', 'a', T0 + i * 1000, i)));
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', from: T0 + 2000, to: T0 + 5000, order: 'asc' })), [2, 3, 4]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', from: T0 + 2000, to: T0 + 5000 })), [4, 3, 2]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', from: T0 + 7000 })), [9, 8, 7]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', to: T0 + 2000, order: 'asc' })), [0, 1]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', limit: 3, order: 'asc' })), [0, 1, 2]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', limit: 3, order: 'desc' })), [9, 8, 7]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', from: T0 + 5000, to: T0 + 5000 })), []);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', from: T0 + 6000, to: T0 + 5000 })), []);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', limit: 0 })), []);
  });

  test('history orders ts ties by uplinkId and keeps states of different uplinks', async (ctx) => {
    const s = store(ctx);
    await s.append([row('d1', 'a', T0, 'y', 'u-2'), row('d1', 'a', T0, 'x', 'u-1'), row('d1', 'a', T0, 'z', 'u-3')]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', order: 'asc' })), ['x', 'y', 'z']);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a' })), ['z', 'y', 'x']);
  });

  test('ties on ts: history orders them by receivedAt, then uplinkId, and its newest is the latest', async (ctx) => {
    const s = store(ctx);
    // uplink ids against receive times: the receive time decides first.
    await s.append([
      row('d1', 'a', T0, 'received 3rd', 'u-1', T0 + 30),
      row('d1', 'a', T0, 'received 1st', 'u-9', T0 + 10),
      row('d1', 'a', T0, 'received 2nd, id b', 'u-b', T0 + 20),
      row('d1', 'a', T0, 'received 2nd, id a', 'u-a', T0 + 20),
      row('d1', 'a', T0 - 1, 'older', 'u-z', T0 + 99),
    ]);
    const asc = ['older', 'received 1st', 'received 2nd, id a', 'received 2nd, id b', 'received 3rd'];
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', order: 'asc' })), asc);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', order: 'desc' })), [...asc].reverse());
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', limit: 1 })), ['received 3rd']);
    assert.equal(values(await s.latest('d1')), ['received 3rd']);
  });

  test('every value kind round-trips exactly', async (ctx) => {
    const s = store(ctx);
    const cases: JsonValue[] = [
      0, 1, -1, 42, -273.15, 0.1, 0.1 + 0.2, 1 / 3, -1.2345678e-7, 123456789.12345679, 1e21, 1.7976931348623157e308,
      5e-324, 2.2250738585072014e-308, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 60, -(2 ** 63),
      '', 'plain', '42', 'null', 'true', "it's", '"double"', 'back\\slash \\n not a newline', 'line1\nline2\r\nline3',
      'tab\there', 'nul\0byte', 'unicode: héllo ☃ 漢字 😀 \u200b', "'); DROP TABLE states; --",
      true, false, null,
      { latitude: 50.85, longitude: 4.35 }, { nested: { deep: [1, 'two', { three: null }] }, 'key "q"': 'v\\' },
      [], {}, [1, 2.5, 'x', false, null, [], {}], 'x'.repeat(100_000),
    ];
    await s.append(cases.map((value, i) => row('d1', 'v', T0 + i, value)));
    const back = await s.history({ deviceId: 'd1', asset: 'v', order: 'asc', limit: 1000 });
    assert.is(back.length, cases.length);
    back.forEach((state, i) => {
      assert.equal(state.value, cases[i], `value #${i}`);
      if (typeof cases[i] === 'number') assert.ok(Object.is(state.value, cases[i]), `number #${i}: ${state.value} vs ${cases[i]}`);
    });
    // -0 kept its sign; dequal treats -0 and 0 alike, so check it alone.
    await s.append([row('d1', 'z', T0, -0)]);
    const [negZero] = await s.latest('d1').then((all) => all.filter((st) => st.asset === 'z'));
    assert.ok(Object.is(negZero.value, -0));
  });

  test('random doubles round-trip bit for bit', async (ctx) => {
    const s = store(ctx);
    const numbers = randomDoubles(500, 12345);
    await s.append(numbers.map((x, i) => row('d1', 'r', T0 + i, x)));
    const back = await s.history({ deviceId: 'd1', asset: 'r', order: 'asc', limit: 1000 });
    assert.is(back.length, numbers.length);
    back.forEach((state, i) => assert.ok(Object.is(state.value, numbers[i]), `${state.value} vs ${numbers[i]}`));
  });

  test('decimal readings round-trip bit for bit, and aggregate to the same doubles', async (ctx) => {
    const s = store(ctx);
    const numbers = [21.37, -21.37, 0.1, 0.2, 0.1 + 0.2, 1013.2, 99.99, -0.001, 123456789012345, 999999999999999.9, 1e15, 2 ** 53,
      0.000001, 1.5e-7, 12.345678901234, 3.141592653589793, 100, -7, 0, 1e21, 5e-324];
    for (let i = 0; i < 200; i++) numbers.push(Math.round(Math.sin(i) * 10 ** (i % 7)) / 10 ** (i % 5));
    await s.append(numbers.map((x, i) => row('d1', 'dec', T0 + i, x)));
    const back = await s.history({ deviceId: 'd1', asset: 'dec', order: 'asc', limit: 1000 });
    back.forEach((state, i) => assert.ok(Object.is(state.value, numbers[i]), `${state.value} vs ${numbers[i]}`));
    const [bucket] = await s.aggregate({ deviceId: 'd1', asset: 'dec', from: T0, to: T0 + MIN, resolution: 'minute' });
    assert.is(bucket.min, Math.min(...numbers));
    assert.is(bucket.max, Math.max(...numbers));
  });

  test('aggregates per minute, hour and day over numbers', async (ctx) => {
    const s = store(ctx);
    await s.append([
      row('d1', 't', T0 + 1_000, 10),
      row('d1', 't', T0 + 59_999, 20),
      row('d1', 't', T0 + MIN, -4),
      row('d1', 't', T0 + MIN + 30_000, 'n/a'),
      row('d1', 't', T0 + HOUR + 5, 1.5),
      row('d1', 't', T0 + DAY + 1, 100),
    ]);
    const q = { deviceId: 'd1', asset: 't', from: T0, to: T0 + 2 * DAY };
    assert.equal(await s.aggregate({ ...q, resolution: 'minute' }), [
      { start: T0, count: 2, min: 10, max: 20, avg: 15 },
      { start: T0 + MIN, count: 2, min: -4, max: -4, avg: -4 },
      { start: T0 + HOUR, count: 1, min: 1.5, max: 1.5, avg: 1.5 },
      { start: T0 + DAY, count: 1, min: 100, max: 100, avg: 100 },
    ]);
    assert.equal(await s.aggregate({ ...q, resolution: 'hour' }), [
      { start: T0, count: 4, min: -4, max: 20, avg: 26 / 3 },
      { start: T0 + HOUR, count: 1, min: 1.5, max: 1.5, avg: 1.5 },
      { start: T0 + DAY, count: 1, min: 100, max: 100, avg: 100 },
    ]);
    assert.equal(await s.aggregate({ ...q, resolution: 'day' }), [
      { start: T0, count: 5, min: -4, max: 20, avg: 27.5 / 4 },
      { start: T0 + DAY, count: 1, min: 100, max: 100, avg: 100 },
    ]);
    // from inclusive, to exclusive
    assert.equal(await s.aggregate({ deviceId: 'd1', asset: 't', from: T0 + 59_999, to: T0 + DAY + 1, resolution: 'day' }), [
      { start: T0, count: 4, min: -4, max: 20, avg: 17.5 / 3 },
    ]);
  });

  test('aggregate buckets with no numbers count states and give null statistics', async (ctx) => {
    const s = store(ctx);
    await s.append([
      row('d1', 'mixed', T0, 'text'),
      row('d1', 'mixed', T0 + 1, true),
      row('d1', 'mixed', T0 + 2, { a: 1 }),
      row('d1', 'mixed', T0 + 3, null),
      row('d1', 'mixed', T0 + 4, [1, 2]),
    ]);
    assert.equal(await s.aggregate({ deviceId: 'd1', asset: 'mixed', from: T0, to: T0 + MIN, resolution: 'minute' }), [
      { start: T0, count: 5, min: null, max: null, avg: null },
    ]);
  });

  test('aggregate buckets floor negative timestamps', async (ctx) => {
    const s = store(ctx);
    await s.append([row('d1', 'old', -61_000, 1), row('d1', 'old', -1, 2), row('d1', 'old', 0, 3), row('d1', 'old', -DAY - 1, 4)]);
    assert.equal(await s.aggregate({ deviceId: 'd1', asset: 'old', from: -2 * DAY, to: DAY, resolution: 'minute' }), [
      { start: -DAY - MIN, count: 1, min: 4, max: 4, avg: 4 },
      { start: -2 * MIN, count: 1, min: 1, max: 1, avg: 1 },
      { start: -MIN, count: 1, min: 2, max: 2, avg: 2 },
      { start: 0, count: 1, min: 3, max: 3, avg: 3 },
    ]);
    assert.equal((await s.aggregate({ deviceId: 'd1', asset: 'old', from: -2 * DAY, to: DAY, resolution: 'day' })).map((b) => [b.start, b.count]), [
      [-2 * DAY, 1],
      [-DAY, 2],
      [0, 1],
    ]);
  });

  test('re-appending the rows of an uplink shows no duplicates anywhere', async (ctx) => {
    const s = store(ctx);
    const uplink = [row('d1', 'a', T0, 1, 'up-1'), row('d1', 'b', T0, 'x', 'up-1'), row('d1', 'a', T0 + 1000, 2, 'up-2')];
    await s.append(uplink);
    await s.append(uplink);
    await s.append([uplink[0], uplink[0]]);
    await s.append(uplink.slice(1));
    assert.equal(values(await s.latest('d1')), [2, 'x']);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', order: 'asc' })), [1, 2]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'b' })), ['x']);
    assert.equal(await s.aggregate({ deviceId: 'd1', asset: 'a', from: T0, to: T0 + MIN, resolution: 'minute' }), [
      { start: T0, count: 2, min: 1, max: 2, avg: 1.5 },
    ]);
  });

  test('readings of one uplink at one ts are kept apart by seq, read in seq order, and fold on replay', async (ctx) => {
    const s = store(ctx);
    const id = newUplinkId(T0 + 5);
    const readings = [3, 1, 2].map((value, seq): StateRow => ({ ...row('d1', 'a', T0, value, id), ...(seq === 0 ? {} : { seq }) }));
    await s.append(readings);
    await s.append([readings[2], readings[0]]);
    assert.equal((await s.history({ deviceId: 'd1', asset: 'a', order: 'asc' })).map((st) => [st.value, st.seq]), [[3, 0], [1, 1], [2, 2]]);
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a' })), [2, 1, 3]);
    assert.equal((await s.latest('d1')).map((st) => [st.value, st.seq, st.uplinkId]), [[2, 2, id]]);
    const [bucket] = await s.aggregate({ deviceId: 'd1', asset: 'a', from: T0, to: T0 + MIN, resolution: 'minute' });
    assert.equal(bucket, { start: T0, count: 3, min: 1, max: 3, avg: 2 });
    // A later uplink at the same ts still comes after every reading of the earlier one.
    await s.append([row('d1', 'a', T0, 'later', newUplinkId(T0 + 6), T0 + 6)]);
    assert.equal(values(await s.latest('d1')), ['later']);
  });

  test('1000 readings of one asset in one uplink at one ts (a batch without at): all kept, in order; a replay folds', async (ctx) => {
    const s = store(ctx);
    const id = newUplinkId(T0);
    const rows = Array.from({ length: 1000 }, (_, seq): StateRow => ({ deviceId: 'd1', asset: 'a', ts: T0, receivedAt: T0, value: (seq * 37) % 1000, uplinkId: id, seq }));
    await s.append(rows);
    await s.append(rows.slice(500));
    const asc = await s.history({ deviceId: 'd1', asset: 'a', order: 'asc', limit: 2000 });
    assert.equal(asc.map((st) => st.value), rows.map((r) => r.value));
    assert.equal(asc.map((st) => st.seq), rows.map((r) => r.seq));
    assert.equal(values(await s.history({ deviceId: 'd1', asset: 'a', limit: 2000 })), rows.map((r) => r.value).reverse());
    assert.equal(values(await s.latest('d1')), [rows[999].value]);
    const [bucket] = await s.aggregate({ deviceId: 'd1', asset: 'a', from: T0, to: T0 + MIN, resolution: 'minute' });
    assert.is(bucket.count, 1000);
  });

  test('time-ordered uplink ids round-trip, sort among other ids as strings and fold on replay', async (ctx) => {
    const s = store(ctx);
    const received = T0 + 7;
    const ordered = [newUplinkId(received), newUplinkId(received), newUplinkId(received + 1)];
    // Shaped like an ordered id but not made from this receive time: kept verbatim.
    const lookalike = newUplinkId(received + 99);
    const ids = [...ordered, lookalike, 'u-text', '0000000000000001'];
    const rows = ids.map((id, i) => row('d1', 'a', T0, i, id, i === 2 ? received + 1 : received));
    await s.append(rows);
    await s.append(rows.slice(0, 3));
    await s.append([rows[3], rows[0]]);
    const asc = await s.history({ deviceId: 'd1', asset: 'a', order: 'asc' });
    // Ties on ts read in one order everywhere: receive time, then uplink id (as a string).
    const receivedOf = (id: string) => (id === ordered[2] ? received + 1 : received);
    const expected = [...ids].sort((a, b) => receivedOf(a) - receivedOf(b) || (a < b ? -1 : a > b ? 1 : 0));
    assert.equal(asc.map((st) => st.uplinkId), expected);
    assert.equal(asc.map((st) => st.value), expected.map((id) => ids.indexOf(id)));
    assert.equal(asc.map((st) => st.receivedAt), expected.map(receivedOf));
    // Greatest receivedAt first, then the greatest id.
    assert.equal((await s.latest('d1'))[0].uplinkId, ordered[2]);
    await s.append([row('d1', 'a', T0, 'last', 'zz', received + 1)]);
    assert.equal((await s.latest('d1'))[0].uplinkId, 'zz');
    const [bucket] = await s.aggregate({ deviceId: 'd1', asset: 'a', from: T0, to: T0 + MIN, resolution: 'minute' });
    assert.is(bucket.count, ids.length + 1);
  });

  test('devices are isolated, including ids that share a prefix', async (ctx) => {
    const s = store(ctx);
    await s.append([row('dev', 'a', T0, 'dev'), row('dev1', 'a', T0, 'dev1'), row('dev1', 'a', T0 + 1, 'dev1 later'), row('Dev', 'a', T0, 'Dev')]);
    assert.equal(values(await s.latest('dev')), ['dev']);
    assert.equal(values(await s.latest('Dev')), ['Dev']);
    assert.equal(values(await s.history({ deviceId: 'dev1', asset: 'a', order: 'asc' })), ['dev1', 'dev1 later']);
    assert.equal(values(await s.history({ deviceId: 'dev', asset: 'a' })), ['dev']);
    assert.equal(await s.latest('de'), []);
    assert.equal((await s.aggregate({ deviceId: 'dev', asset: 'a', from: T0, to: T0 + MIN, resolution: 'minute' }))[0].count, 1);
  });

  test('injection-shaped ids and asset names are stored and queried verbatim', async (ctx) => {
    const s = store(ctx);
    const nasty = [
      "x'); DROP TABLE states; --",
      "a' OR '1'='1",
      'back\\slash\\',
      "trailing backslash\\'",
      'quote"double`back`tick',
      'new\nline\rcr\ttab',
      'nul\0inside',
      '😀 ☃ 漢字',
      '{deviceId:String}',
      '%27 %00 \\x27',
    ];
    await s.append(nasty.flatMap((id, i) => [row(id, id, T0 + i, `dev ${i}`), row('plain', id, T0 + i, `asset ${i}`)]));
    for (const [i, id] of nasty.entries()) {
      assert.equal(await s.latest(id), [{ asset: id, ts: T0 + i, receivedAt: T0 + i + 5, value: `dev ${i}`, uplinkId: `u-${T0 + i}`, seq: 0 }], id);
      assert.equal(values(await s.history({ deviceId: 'plain', asset: id })), [`asset ${i}`], id);
      assert.equal((await s.aggregate({ deviceId: id, asset: id, from: T0, to: T0 + MIN, resolution: 'minute' }))[0].count, 1, id);
    }
    assert.equal((await s.latest('plain')).map((st) => st.asset).sort(), [...nasty].sort());
    assert.equal(await s.latest("' OR 1=1 --"), []);
  });

  test('bad rows fail the whole append with INVALID_STATE and store nothing', async (ctx) => {
    const s = store(ctx);
    const good = row('d1', 'a', T0, 1);
    const bad: Array<[string, unknown]> = [
      ['NaN', { ...good, value: Number.NaN }],
      ['Infinity', { ...good, value: Number.POSITIVE_INFINITY }],
      ['nested NaN', { ...good, value: { x: [Number.NaN] } }],
      ['bigint', { ...good, value: 10n }],
      ['undefined value', { ...good, value: undefined }],
      ['bytes', { ...good, value: new Uint8Array([1, 2]) }],
      ['date', { ...good, value: new Date(0) }],
      ['fractional ts', { ...good, ts: T0 + 0.5 }],
      ['string ts', { ...good, ts: String(T0) }],
      ['huge ts', { ...good, ts: 2 ** 60 }],
      ['missing receivedAt', { ...good, receivedAt: undefined }],
      ['empty device', { ...good, deviceId: '' }],
      ['numeric device', { ...good, deviceId: 7 }],
      ['empty asset', { ...good, asset: '' }],
      ['no uplink id', { ...good, uplinkId: undefined }],
      ['negative seq', { ...good, seq: -1 }],
      ['seq past UInt16', { ...good, seq: 65_536 }],
      ['fractional seq', { ...good, seq: 1.5 }],
      ['null row', null],
    ];
    for (const [label, badRow] of bad) {
      const error = await rejectsWith(s.append([good, badRow as StateRow]), 'INVALID_STATE');
      assert.is(error.retriable, false, label);
      assert.is(error.detail?.index, 1, label);
    }
    const deep: Record<string, unknown> = {};
    let cursor = deep;
    for (let i = 0; i < 100; i++) cursor = (cursor.next = {}) as Record<string, unknown>;
    await rejectsWith(s.append([{ ...good, value: deep as JsonValue }]), 'INVALID_STATE');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await rejectsWith(s.append([{ ...good, value: cyclic as JsonValue }]), 'INVALID_STATE');
    await rejectsWith(s.append('not rows' as unknown as StateRow[]), 'INVALID_STATE');
    assert.equal(await s.latest('d1'), []);
    await s.append([good]);
    assert.equal(values(await s.latest('d1')), [1]);
  });

  test('bad queries fail VALIDATION_FAILED', async (ctx) => {
    const s = store(ctx);
    const h = { deviceId: 'd1', asset: 'a' };
    const badHistory: unknown[] = [
      { ...h, limit: -1 },
      { ...h, limit: 1.5 },
      { ...h, limit: 1e9 },
      { ...h, limit: '10' },
      { ...h, from: Number.NaN },
      { ...h, to: '2024-01-01' },
      { ...h, order: 'sideways' },
      { ...h, deviceId: undefined },
      { deviceId: 'd1', asset: 42 },
    ];
    for (const q of badHistory) await rejectsWith(s.history(q as never), 'VALIDATION_FAILED');
    const a = { deviceId: 'd1', asset: 'a', from: T0, to: T0 + HOUR, resolution: 'minute' };
    const badAggregate: unknown[] = [
      { ...a, resolution: 'week' },
      { ...a, resolution: 'constructor' },
      { ...a, from: undefined },
      { ...a, to: 1.5 },
      { ...a, from: 0, to: 8.64e15 },
      { ...a, deviceId: null },
    ];
    for (const q of badAggregate) await rejectsWith(s.aggregate(q as never), 'VALIDATION_FAILED');
    await rejectsWith(s.latest(undefined as never), 'VALIDATION_FAILED');
  });

  test('a large batch lands whole', async (ctx) => {
    const s = store(ctx);
    const rows = Array.from({ length: 5000 }, (_, i) => row(`d${i % 10}`, `a${i % 7}`, T0 + i, i % 3 === 0 ? i : `s${i}`));
    await s.append(rows);
    const buckets = await s.aggregate({ deviceId: 'd3', asset: 'a2', from: T0, to: T0 + DAY, resolution: 'day' });
    assert.is(buckets[0].count, rows.filter((r) => r.deviceId === 'd3' && r.asset === 'a2').length);
    assert.is((await s.latest('d9')).length, 7);
  });

  test('an append spanning hundreds of days lands whole, and folds on replay', async (ctx) => {
    const s = store(ctx);
    const rows = Array.from({ length: 250 }, (_, i) => row('d1', 'a', T0 + i * DAY + i, i));
    await s.append(rows);
    await s.append(rows);
    const all = await s.history({ deviceId: 'd1', asset: 'a', order: 'asc', limit: 1000 });
    assert.equal(all.map((st) => st.value), rows.map((r) => r.value));
  });

  test('concurrent appends and queries all complete and nothing is lost', async (ctx) => {
    const s = store(ctx);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 20; i++) {
      work.push(s.append(Array.from({ length: 50 }, (_, j) => row(`c${i % 4}`, `a${j % 5}`, T0 + i * 100 + j, i * 100 + j, `u-${i}-${j}`))));
      work.push(s.latest(`c${i % 4}`), s.history({ deviceId: `c${i % 4}`, asset: 'a0' }));
    }
    await Promise.all(work);
    let total = 0;
    for (let d = 0; d < 4; d++) {
      for (let a = 0; a < 5; a++) {
        const [bucket] = await s.aggregate({ deviceId: `c${d}`, asset: `a${a}`, from: T0, to: T0 + DAY, resolution: 'day' });
        total += bucket.count;
      }
    }
    assert.is(total, 1000);
  });

  test('a closed store refuses work with CLOSED; close is idempotent', async (ctx) => {
    const s = store(ctx);
    await s.append([row('d1', 'a', T0, 1)]);
    await s.close();
    await s.close();
    const error = await rejectsWith(s.append([row('d1', 'a', T0 + 1, 2)]), 'CLOSED');
    assert.is(error.retriable, false);
    await rejectsWith(s.latest('d1'), 'CLOSED');
    await rejectsWith(s.history({ deviceId: 'd1', asset: 'a' }), 'CLOSED');
    await rejectsWith(s.aggregate({ deviceId: 'd1', asset: 'a', from: 0, to: 1, resolution: 'day' }), 'CLOSED');
  });

  return test;
}
