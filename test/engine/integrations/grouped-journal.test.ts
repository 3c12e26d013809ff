/**
 * GroupedJournal (engine/integrations/GroupedJournal.ts): the saves and delivery marks of many
 * lanes become one write each, in group commit; each call resolves once its write is done, or
 * rejects with its error; a group refused for anything but an outage is written item by item, so
 * only the refused item's caller fails. A scripted port records the calls.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { groupedJournal } from '../../../engine/integrations/GroupedJournal.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { DeliveredBatch, DeliveryBatch, IntegrationDeliveries } from '../../../engine/ports/integrationDeliveries.ts';

// The system clock's timers do not hold the process open (a service's sockets do): this does.
const keepAlive = setInterval(() => undefined, 1000);
test.after(() => clearInterval(keepAlive));

const batch = (firstOffset: number, extra: Partial<DeliveryBatch> = {}): DeliveryBatch => ({
  integrationId: 'i1', partition: 0, firstOffset, lastOffset: firstOffset, messageId: `msg_${firstOffset}`, events: 1, attempts: 0, nextAttemptAt: 1, createdAt: 1, ...extra,
});

interface Scripted {
  port: IntegrationDeliveries;
  saves: number[][];
  marks: number[][];
  /** Resolves the write under way (when `hold`). */
  release(): void;
}

/** A port whose bulk writes are recorded; `refuse` decides a write's fate; `hold` keeps each write open until release(). */
function scripted(options: { refuse?: (offsets: number[]) => FleetError | undefined; hold?: boolean } = {}): Scripted {
  const s = { saves: [] as number[][], marks: [] as number[][], release: () => undefined as void } as Scripted;
  const write = (list: number[][], offsets: number[]) => {
    list.push(offsets);
    const refused = options.refuse?.(offsets);
    if (refused !== undefined) return Promise.reject(refused);
    if (!options.hold) return Promise.resolve();
    return new Promise<void>((resolve) => { s.release = resolve; });
  };
  const fail = () => Promise.reject(new Error('not grouped: called directly'));
  s.port = {
    saveBatch: fail,
    saveBatches: (batches: readonly DeliveryBatch[]) => write(s.saves, batches.map((b) => b.firstOffset)),
    batchDelivered: fail,
    batchesDelivered: (batches: readonly DeliveredBatch[]) => write(s.marks, batches.map((b) => b.firstOffset)),
    savedBatches: async () => [batch(7)],
    pruneBatches: async () => undefined,
    attemptFailed: async () => undefined,
    batchDropped: async () => undefined,
    addDropped: async () => undefined,
    disableIntegration: async () => undefined,
    deliveryStats: async () => ({ delivered: 3, failedAttempts: 0, dropped: 0, pending: { events: 0 } }),
  };
  return s;
}

test('the saves of one turn are one write; each call resolves once it is done', async () => {
  const s = scripted();
  const journal = groupedJournal(s.port, systemClock);
  const settled: number[] = [];
  await Promise.all([1, 2, 3].map((n) => journal.saveBatch(batch(n)).then(() => settled.push(n))));
  assert.equal(s.saves, [[1, 2, 3]]);
  assert.equal(settled, [1, 2, 3]);
  await Promise.all([journal.batchDelivered('i1', 0, 1, 5), journal.batchDelivered('i1', 1, 2, 5)]);
  assert.equal(s.marks, [[1, 2]], 'delivery marks likewise');
});

test('what comes while a write is under way goes together in the next (group commit)', async () => {
  const s = scripted({ hold: true });
  const journal = groupedJournal(s.port, systemClock);
  const first = journal.saveBatch(batch(1));
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(s.saves, [[1]], 'a lone save starts at once');
  let later = false;
  const rest = Promise.all([2, 3, 4].map((n) => journal.saveBatch(batch(n)))).then(() => { later = true; });
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(s.saves, [[1]], 'one write at a time');
  s.release();
  await first;
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(s.saves, [[1], [2, 3, 4]]);
  assert.not.ok(later, 'not resolved before their write');
  s.release();
  await rest;
  assert.ok(later);
});

test('an outage rejects every call of the write with its error; the next calls are written', async () => {
  let away = true;
  const s = scripted({ refuse: () => (away ? new FleetError('UNAVAILABLE', 'registry away', { retriable: true }) : undefined) });
  const journal = groupedJournal(s.port, systemClock);
  const outcomes = await Promise.allSettled([1, 2].map((n) => journal.saveBatch(batch(n))));
  assert.equal(outcomes.map((o) => o.status), ['rejected', 'rejected']);
  assert.equal(outcomes.map((o) => (o as PromiseRejectedResult).reason.code), ['UNAVAILABLE', 'UNAVAILABLE']);
  assert.equal(s.saves, [[1, 2]], 'not written alone: an outage is every item\'s');
  away = false;
  await journal.saveBatch(batch(1));
  assert.equal(s.saves, [[1, 2], [1]]);
});

test('a refused write is written item by item: only the refused item\'s caller fails', async () => {
  const s = scripted({ refuse: (offsets) => (offsets.includes(2) ? new FleetError('VALIDATION_FAILED', 'messageId: bad', { detail: { field: 'messageId' } }) : undefined) });
  const journal = groupedJournal(s.port, systemClock);
  const outcomes = await Promise.allSettled([1, 2, 3].map((n) => journal.saveBatch(batch(n))));
  assert.equal(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.is((outcomes[1] as PromiseRejectedResult).reason.code, 'VALIDATION_FAILED');
  assert.equal(s.saves, [[1, 2, 3], [1], [2], [3]]);
  const alone = await Promise.allSettled([journal.saveBatch(batch(2))]);
  assert.is((alone[0] as PromiseRejectedResult).reason.code, 'VALIDATION_FAILED', 'a lone refused save is refused once');
  assert.equal(s.saves.length, 5);
});

test('the other calls go to the port as they are', async () => {
  const s = scripted();
  const journal = groupedJournal(s.port, systemClock);
  assert.equal(await journal.savedBatches('i1', 0), [batch(7)]);
  assert.is((await journal.deliveryStats('i1')).delivered, 3);
  await journal.saveBatches([batch(8), batch(9)]);
  assert.equal(s.saves, [[8, 9]]);
});

test.run();
