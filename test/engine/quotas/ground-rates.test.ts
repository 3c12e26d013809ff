/**
 * GroundRates (engine/quotas/GroundRates.ts) on a simulated clock: a burst of twice the rate, the
 * refill, a batch larger than the burst, the rate shared by the live edges (and re-shared when they
 * change), a changed or removed quota applied on its registry change, grounds apart from each other.
 */
import * as assert from 'uvu/assert';
import { test } from '../../support/suite.ts';
import { SimulatedClock } from '../../../engine/kernel/clock.ts';
import { GroundRates } from '../../../engine/quotas/GroundRates.ts';
import type { GroundQuota } from '../../../engine/ports/quotaRegistry.ts';

const G = 'g'.repeat(22);
const H = 'h'.repeat(22);

function fixture(quotas: GroundQuota[], edges = 1) {
  const clock = new SimulatedClock(1_000_000);
  const state = { quotas, edges };
  const rates = new GroundRates({
    clock,
    refreshMs: 1000,
    registry: {
      listQuotas: async () => state.quotas,
      getQuota: async (groundId) => state.quotas.find((q) => q.groundId === groundId),
      liveEdges: async () => state.edges,
    },
  });
  return { clock, rates, state };
}

/** How many single states pass in a row now. */
function drain(rates: GroundRates, groundId: string, max = 10_000): number {
  let n = 0;
  while (n < max && rates.take(groundId, 1) === 0) n++;
  return n;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('a burst of twice the rate, then the rate; a refusal says when a state could pass; other grounds are not limited', async () => {
  const { clock, rates } = fixture([{ groundId: G, statesPerSecond: 10, updatedAt: 0 }]);
  await rates.start();
  assert.is(drain(rates, G), 20);
  assert.ok(Math.abs(rates.take(G, 1) - 0.1) < 1e-9, 'a tenth of a second for one state');
  clock.advance(500);
  assert.is(drain(rates, G), 5);
  clock.advance(10_000);
  assert.is(drain(rates, G), 20, 'never more than the burst');
  assert.is(drain(rates, H, 50), 50, 'a ground without a rate');
  rates.stop();
});

test('a batch larger than the burst passes once the bucket is full and leaves it in debt', async () => {
  const { clock, rates } = fixture([{ groundId: G, statesPerSecond: 2, updatedAt: 0 }]);
  await rates.start();
  assert.is(rates.take(G, 10), 0);
  assert.ok(rates.take(G, 1) > 0);
  clock.advance(3000);
  assert.ok(rates.take(G, 1) > 0, '6 of 10 states repaid: still in debt');
  clock.advance(1000);
  assert.is(rates.take(G, 1), 0);
  rates.stop();
});

test('shared by the live edges: each edge takes its share, re-shared as edges come and go', async () => {
  const { clock, rates, state } = fixture([{ groundId: G, statesPerSecond: 100, updatedAt: 0 }], 4);
  await rates.start();
  assert.is(rates.edges, 4);
  assert.is(drain(rates, G), 50, 'twice a quarter of the rate');
  clock.advance(1000);
  assert.is(drain(rates, G), 25);
  state.edges = 0;
  await settle();
  clock.advance(1000);
  await settle();
  assert.is(rates.edges, 1, 'no lease counted: this edge alone');
  assert.is(drain(rates, G), 100, 'a second of the whole rate refilled');
  clock.advance(1000);
  assert.is(drain(rates, G), 100);
  rates.stop();
});

test('a quota changed or removed applies on its change; resync reads them all again', async () => {
  const { rates, state } = fixture([{ groundId: G, statesPerSecond: 5, updatedAt: 0 }]);
  await rates.start();
  assert.is(drain(rates, G), 10);
  state.quotas = [{ groundId: G, statesPerSecond: 1, updatedAt: 1 }, { groundId: H, statesPerSecond: 1, updatedAt: 1 }];
  rates.apply({ kind: 'quota-changed', groundId: G });
  await settle();
  assert.ok(rates.take(G, 1) > 0, 'lowered: the bucket kept at most the new burst');
  assert.is(rates.limits(H), false, 'H changed without a change heard');
  rates.apply({ kind: 'resync' });
  await settle();
  assert.is(rates.limits(H), true);
  state.quotas = [];
  rates.apply({ kind: 'quota-changed', groundId: G });
  await settle();
  assert.is(rates.limits(G), false);
  assert.is(drain(rates, G, 100), 100);
  rates.stop();
});

test.run();
