/**
 * Parts of the HTTP edge on a simulated clock, without a server: the token buckets behind 429, the
 * access cache, and the keyset paging over the store port.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { historyPage, encodeCursor } from '../../../adapters/http/routes/states/historyPage.ts';
import { TokenBuckets } from '../../../adapters/http/TokenBuckets.ts';
import { TtlCache } from '../../../engine/kernel/TtlCache.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { HistoryQuery, StoredState } from '../../../engine/ports/store.ts';

test('token buckets: burst, then perSecond refill; the wait is reported; buckets are bounded', () => {
  const clock = new SimulatedClock(0);
  const buckets = new TokenBuckets({ clock, perSecond: 4, burst: 2, maxKeys: 2 });
  assert.is(buckets.take('a'), 0);
  assert.is(buckets.take('a'), 0);
  assert.is(buckets.take('a'), 0.25, 'a quarter second until the next token');
  clock.advance(100);
  assert.ok(Math.abs(buckets.take('a') - 0.15) < 1e-9);
  clock.advance(150);
  assert.is(buckets.take('a'), 0);
  clock.advance(60_000);
  assert.is(buckets.take('a'), 0);
  assert.is(buckets.take('a'), 0);
  assert.ok(buckets.take('a') > 0, 'never more than burst after idling');
  assert.is(buckets.take('b'), 0);
  assert.is(buckets.take('c'), 0, 'a third key evicts the least recently used');
  assert.is(buckets.size, 2);
  assert.throws(() => new TokenBuckets({ clock, perSecond: 0, burst: 1 }), /perSecond/);
});

test('ttl cache: expires by the clock, one load per key at a time, failures and undefined not kept', async () => {
  const clock = new SimulatedClock(0);
  const cache = new TtlCache<string, number>({ clock, ttlMs: 1000 });
  let loads = 0;
  let release!: (v: number | undefined) => void;
  const load = () => { loads++; return new Promise<number | undefined>((r) => { release = r; }); };
  const a = cache.getOrLoad('k', load);
  const b = cache.getOrLoad('k', load);
  assert.is(loads, 1, 'concurrent misses share one load');
  release(7);
  assert.equal(await Promise.all([a, b]), [7, 7]);
  assert.is(await cache.getOrLoad('k', load), 7);
  assert.is(loads, 1);
  clock.advance(1000);
  const c = cache.getOrLoad('k', load);
  assert.is(loads, 2, 'expired');
  release(undefined);
  assert.is(await c, undefined);
  const d = cache.getOrLoad('k', load);
  assert.is(loads, 3, 'undefined is not kept');
  release(8);
  await d;

  const failing = cache.getOrLoad('f', () => Promise.reject(new FleetError('UNAVAILABLE', 'down')));
  await failing.then(() => assert.unreachable(), (e: FleetError) => assert.is(e.code, 'UNAVAILABLE'));
  assert.is(await cache.getOrLoad('f', async () => 1), 1, 'a failure is not kept');

  // A change while a load runs: the loaded value may predate it and is not kept.
  clock.advance(1000);
  const stale = cache.getOrLoad('k', load);
  cache.delete('k');
  release(9);
  assert.is(await stale, 9);
  assert.is(cache.get('k'), undefined);

  const none = new TtlCache<string, number>({ clock, ttlMs: 0 });
  none.set('x', 1);
  assert.is(none.get('x'), undefined, 'ttl 0 keeps nothing');
  const small = new TtlCache<string, number>({ clock, ttlMs: 1000, maxEntries: 2 });
  small.set('a', 1);
  small.set('b', 2);
  small.set('c', 3);
  assert.equal([small.get('a'), small.get('b'), small.get('c')], [undefined, 2, 3]);
  small.deleteWhere((v) => v === 2);
  assert.is(small.size, 1);
});

/** A store of one asset following the port contract: ties on ts by receivedAt, then uplinkId, then seq, in the query's direction. */
function memoryHistory(states: StoredState[]) {
  const queries: HistoryQuery[] = [];
  return {
    queries,
    async history(q: HistoryQuery): Promise<StoredState[]> {
      queries.push(q);
      const sign = q.order === 'asc' ? 1 : -1;
      return states
        .filter((s) => (q.from === undefined || s.ts >= q.from) && (q.to === undefined || s.ts < q.to))
        .sort((a, b) => sign * (a.ts - b.ts || a.receivedAt - b.receivedAt || (a.uplinkId < b.uplinkId ? -1 : a.uplinkId > b.uplinkId ? 1 : 0) || a.seq - b.seq))
        .slice(0, q.limit ?? 100);
    },
  };
}

test('history paging: every state exactly once across pages, also when many share one ts', async () => {
  const states: StoredState[] = [];
  for (let i = 0; i < 40; i++) {
    // 30 states at ts 1000, the rest spread out: a page boundary falls inside the tie more than once.
    // Within the tie, receive times run against the uplink ids (and repeat), so both tie-breaks count;
    // and ten readings of one uplink (a batch without at) tie on all three, kept apart by seq.
    const ts = i < 30 ? 1000 : 1000 + i;
    const batch = i >= 10 && i < 20;
    states.push({ asset: 'a', ts, receivedAt: batch ? 1005 : ts + 10 - (i % 7), value: i, uplinkId: batch ? 'u10' : `u${String(i).padStart(2, '0')}`, seq: batch ? i - 10 : 0 });
  }
  for (const order of ['asc', 'desc'] as const) {
    for (const limit of [1, 7, 30, 40, 100]) {
      const store = memoryHistory(states);
      const seen: number[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await historyPage(store, { deviceId: 'd', asset: 'a', limit, order, cursor });
        seen.push(...page.items.map((s) => s.value as number));
        assert.ok(page.items.length <= limit);
        cursor = page.next;
        pages++;
      } while (cursor !== undefined && pages < 100);
      const expected = [...states].sort((a, b) => (order === 'asc' ? 1 : -1) * (a.ts - b.ts || a.receivedAt - b.receivedAt || (a.uplinkId < b.uplinkId ? -1 : a.uplinkId > b.uplinkId ? 1 : 0) || a.seq - b.seq)).map((s) => s.value);
      assert.equal(seen, expected, `${order} limit ${limit}`);
      assert.is(pages, Math.max(1, Math.ceil(40 / limit)), `${order} limit ${limit}: no empty last page`);
    }
  }
});

test('history paging: range bounds hold with a cursor; a cursor of the other order or a forged one → 422', async () => {
  const states: StoredState[] = Array.from({ length: 10 }, (_, i) => ({ asset: 'a', ts: i * 10, receivedAt: 0, value: i, uplinkId: `u${i}`, seq: 0 }));
  const store = memoryHistory(states);
  const first = await historyPage(store, { deviceId: 'd', asset: 'a', from: 20, to: 70, limit: 2, order: 'asc' });
  assert.equal(first.items.map((s) => s.value), [2, 3]);
  const second = await historyPage(store, { deviceId: 'd', asset: 'a', from: 20, to: 70, limit: 10, order: 'asc', cursor: first.next });
  assert.equal(second.items.map((s) => s.value), [4, 5, 6]);
  assert.is(second.next, undefined);
  // A cursor of four items (no seq) was made before seq joined the order: it stands for seq 0.
  const withoutSeq = Buffer.from(JSON.stringify([20, 0, 'u2', 'asc'])).toString('base64url');
  assert.equal((await historyPage(store, { deviceId: 'd', asset: 'a', from: 20, to: 70, limit: 10, order: 'asc', cursor: withoutSeq })).items.map((s) => s.value), [3, 4, 5, 6]);
  // A cursor of three items (ts, uplinkId, order) was made before the receive time joined the order.
  for (const cursor of [encodeCursor({ ts: 30, receivedAt: 0, uplinkId: 'u3', seq: 0 }, 'desc'), Buffer.from('[30,0,"u3",-1,"asc"]').toString('base64url'), Buffer.from('[30,"u3","asc"]').toString('base64url'), 'bm9wZQ', Buffer.from('[1.5,"x","asc"]').toString('base64url'), Buffer.from('{"a":1}').toString('base64url')]) {
    try {
      await historyPage(store, { deviceId: 'd', asset: 'a', limit: 2, order: 'asc', cursor });
      assert.unreachable(cursor);
    } catch (error) {
      assert.instance(error, FleetError);
      assert.is((error as FleetError).code, 'VALIDATION_FAILED');
    }
  }
});

test.run();
