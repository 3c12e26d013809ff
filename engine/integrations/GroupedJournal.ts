/**
 * The integration deliveries port as the lanes of one process share it: each lane saves a batch
 * before its first attempt and marks it once delivered, and those two writes, from every lane of
 * every integration, are grouped into one write each (saveBatches, batchesDelivered) by a kernel
 * Batcher in group commit: a write starts in the next turn when none is under way, and what comes
 * while one is goes with the next. On the embedded registry each statement costs its process about
 * half a millisecond, whatever rows it carries: one per batch of 100 events weighed as much as
 * storing them (bench/integrations.bench.ts).
 *
 * A lane's call resolves once its write is durable, or rejects with that write's error, as the
 * port's own call would (DeliveryLane retries it). When a grouped write is refused for anything
 * but an outage (a malformed batch), each of its items is written alone, so a refusal is the
 * refused lane's only. The other calls go to the port as they are.
 */
import { Batcher } from '../kernel/Batcher.ts';
import type { Clock } from '../kernel/clock.ts';
import { toFleetError, type FleetError } from '../kernel/errors.ts';
import type { DeliveredBatch, DeliveryBatch, IntegrationDeliveries } from '../ports/integrationDeliveries.ts';

/** Items of one write at most. */
const MAX_GROUP = 500;

interface Item<T> {
  value: T;
  /** Set when the item failed alone after its group was refused. */
  error?: FleetError;
}

export function groupedJournal(journal: IntegrationDeliveries, clock: Clock): IntegrationDeliveries {
  const saves = grouped<DeliveryBatch>('delivery batches saved', clock, (batches) => journal.saveBatches(batches), (batch) => journal.saveBatches([batch]));
  const delivered = grouped<DeliveredBatch>('delivery batches delivered', clock, (batches) => journal.batchesDelivered(batches), (batch) => journal.batchesDelivered([batch]));
  return {
    saveBatch: (batch) => saves(batch),
    saveBatches: (batches) => journal.saveBatches(batches),
    batchDelivered: (integrationId, partition, firstOffset, at) => delivered({ integrationId, partition, firstOffset, at }),
    batchesDelivered: (batches) => journal.batchesDelivered(batches),
    savedBatches: (integrationId, partition) => journal.savedBatches(integrationId, partition),
    pruneBatches: (integrationId, partition, offset) => journal.pruneBatches(integrationId, partition, offset),
    attemptFailed: (integrationId, partition, firstOffset, update) => journal.attemptFailed(integrationId, partition, firstOffset, update),
    batchDropped: (integrationId, partition, firstOffset, outcome) => journal.batchDropped(integrationId, partition, firstOffset, outcome),
    addDropped: (integrationId, count) => journal.addDropped(integrationId, count),
    disableIntegration: (integrationId, reason) => journal.disableIntegration(integrationId, reason),
    deliveryStats: (integrationId) => journal.deliveryStats(integrationId),
  };
}

function grouped<T>(name: string, clock: Clock, writeAll: (values: T[]) => Promise<void>, writeOne: (value: T) => Promise<void>): (value: T) => Promise<void> {
  const batcher = new Batcher<Item<T>>({
    name,
    clock,
    write: async (items) => {
      try {
        await writeAll(items.map((item) => item.value));
      } catch (error) {
        const refused = toFleetError(error);
        if (items.length === 1 || refused.retriable) throw refused;
        await Promise.all(items.map(async (item) => {
          try {
            await writeOne(item.value);
          } catch (alone) {
            item.error = toFleetError(alone);
          }
        }));
      }
    },
    maxItems: MAX_GROUP,
    // Every group lighter than MAX_GROUP starts in the next turn, or once the write under way is done.
    maxDelayMs: 10,
    immediateBelow: MAX_GROUP,
    maxPending: Number.MAX_SAFE_INTEGER,
    overflow: 'wait',
  });
  return async (value) => {
    const item: Item<T> = { value };
    await batcher.add(item);
    if (item.error !== undefined) throw item.error;
  };
}
