/**
 * Contract of the integration deliveries port (engine/ports/integrationDeliveries.ts): batches
 * saved before their first attempt and read back per partition, attempts and outcomes counted,
 * delivered batches kept until pruned, the figures GET /integrations/{id} shows, disabling, what an
 * unknown or deleted integration does (nothing), and refusals of malformed input. Runs on the
 * harness of registry.contract.ts.
 */
import * as assert from 'uvu/assert';
import type { DeliveredBatch, DeliveryBatch, FleetRegistry, IntegrationDeliveries, IntegrationRegistry, PrincipalRegistry } from '../../engine/ports/registry.ts';
import { any, MALFORMED_IDS, ownedGround, registrySuite, rejects, type RegistryFactory } from './registry.contract.ts';

type R = IntegrationDeliveries & IntegrationRegistry & FleetRegistry & PrincipalRegistry;

export function integrationDeliveriesContract(name: string, factory: RegistryFactory) {
  const test = registrySuite<R>(`integration deliveries contract: ${name}`, factory);

  const integration = async (r: R) => {
    const { ground } = await ownedGround(r);
    return (await r.createIntegration({ groundId: ground.id, name: 'app', kind: 'webhook', url: 'https://receiver.example/hook', events: ['state'] })).integration;
  };
  const batch = (integrationId: string, extra: Partial<DeliveryBatch> = {}): DeliveryBatch => ({
    integrationId, partition: 0, firstOffset: 10, lastOffset: 19, messageId: 'msg_1', events: 7, attempts: 0, nextAttemptAt: 1000, createdAt: 900, ...extra,
  });

  test('saved batches come back per partition, in offset order; saved again with the same start, replaced', async ({ r }) => {
    const { id } = await integration(r);
    await r.saveBatch(batch(id, { firstOffset: 30, lastOffset: 31, messageId: 'msg_b' }));
    await r.saveBatch(batch(id));
    await r.saveBatch(batch(id, { partition: 1, messageId: 'msg_p1', sources: { 0: 12, 3: 7 } }));
    assert.equal((await r.savedBatches(id, 0)).map((b) => [b.firstOffset, b.lastOffset, b.messageId]), [[10, 19, 'msg_1'], [30, 31, 'msg_b']]);
    assert.equal(await r.savedBatches(id, 1), [batch(id, { partition: 1, messageId: 'msg_p1', sources: { 0: 12, 3: 7 } })]);
    await r.saveBatch(batch(id, { lastOffset: 25, messageId: 'msg_again', events: 9 }));
    assert.equal((await r.savedBatches(id, 0))[0], batch(id, { lastOffset: 25, messageId: 'msg_again', events: 9 }));
    assert.equal(await r.savedBatches(id, 2), []);
  });

  test('a failed attempt saves the next one and counts; delivery marks the batch and counts its events; pending is what is not delivered', async ({ r }) => {
    const { id } = await integration(r);
    assert.equal(await r.deliveryStats(id), { delivered: 0, failedAttempts: 0, dropped: 0, pending: { events: 0 } });
    await r.saveBatch(batch(id));
    await r.saveBatch(batch(id, { firstOffset: 20, lastOffset: 20, events: 1, createdAt: 950, messageId: 'msg_2' }));
    assert.equal((await r.deliveryStats(id)).pending, { events: 8, oldestAt: 900 });
    await r.attemptFailed(id, 0, 10, { attempts: 1, nextAttemptAt: 2000, error: { status: 503, message: 'busy', at: 1000 } });
    await r.attemptFailed(id, 0, 10, { attempts: 2, nextAttemptAt: 4000, error: { message: 'timeout', at: 2000 } });
    const [saved] = await r.savedBatches(id, 0);
    assert.equal([saved.attempts, saved.nextAttemptAt, saved.deliveredAt], [2, 4000, undefined]);
    let stats = await r.deliveryStats(id);
    assert.equal([stats.failedAttempts, stats.lastError], [2, { message: 'timeout', at: 2000 }], 'the last error: no status when no answer came');
    await r.batchDelivered(id, 0, 10, 5000);
    await r.batchDelivered(id, 0, 10, 6000);
    stats = await r.deliveryStats(id);
    assert.equal([stats.delivered, stats.lastSuccessAt, stats.pending], [7, 5000, { events: 1, oldestAt: 950 }], 'a batch is counted once');
    assert.is((await r.savedBatches(id, 0))[0].deliveredAt, 5000, 'kept, marked delivered');
  });

  test('several batches saved in one write: any integrations and partitions; of two with the same start the later; one of a deleted integration skipped', async ({ r }) => {
    const { id } = await integration(r);
    const other = await integration(r);
    const gone = await integration(r);
    await r.deleteIntegration(gone.id);
    await r.saveBatches([]);
    await r.saveBatches([
      batch(id, { firstOffset: 30, lastOffset: 31, messageId: 'msg_b' }),
      batch(gone.id),
      batch(other.id, { partition: 2, sources: { 1: 4 } }),
      batch(id),
      batch(id, { firstOffset: 30, lastOffset: 33, messageId: 'msg_b2', events: 3 }),
    ]);
    assert.equal((await r.savedBatches(id, 0)).map((b) => [b.firstOffset, b.lastOffset, b.messageId, b.events]), [[10, 19, 'msg_1', 7], [30, 33, 'msg_b2', 3]]);
    assert.equal(await r.savedBatches(other.id, 2), [batch(other.id, { partition: 2, sources: { 1: 4 } })]);
    assert.equal(await r.savedBatches(gone.id, 0), []);
    assert.equal((await r.deliveryStats(id)).pending, { events: 10, oldestAt: 900 });
  });

  test('several batches delivered in one write: each counted once, per integration; the last success is the latest', async ({ r }) => {
    const { id } = await integration(r);
    const other = await integration(r);
    await r.saveBatches([batch(id), batch(id, { firstOffset: 20, lastOffset: 20, events: 1, messageId: 'msg_2' }), batch(other.id, { partition: 1, events: 4 })]);
    await r.batchesDelivered([]);
    await r.batchesDelivered([
      { integrationId: id, partition: 0, firstOffset: 10, at: 5000 },
      { integrationId: other.id, partition: 1, firstOffset: 10, at: 5100 },
      { integrationId: id, partition: 0, firstOffset: 20, at: 5200 },
      { integrationId: id, partition: 0, firstOffset: 10, at: 5300 },
      { integrationId: id, partition: 0, firstOffset: 99, at: 5400 },
      { integrationId: any('short'), partition: 0, firstOffset: 10, at: 5500 },
    ]);
    let stats = await r.deliveryStats(id);
    assert.equal([stats.delivered, stats.lastSuccessAt, stats.pending], [8, 5200, { events: 0 }], 'each batch once; an unknown start changes nothing');
    stats = await r.deliveryStats(other.id);
    assert.equal([stats.delivered, stats.lastSuccessAt], [4, 5100]);
    await r.batchesDelivered([{ integrationId: id, partition: 0, firstOffset: 10, at: 6000 }]);
    assert.is((await r.deliveryStats(id)).delivered, 8, 'delivered again: not counted again');
    assert.equal((await r.savedBatches(id, 0)).map((b) => b.deliveredAt), [5000, 5200], 'a batch listed twice: marked by the first');
  });

  test('a batch given up counts its events as dropped; retention drops add up; pruning forgets only delivered batches below the offset', async ({ r }) => {
    const { id } = await integration(r);
    await r.saveBatch(batch(id));
    await r.saveBatch(batch(id, { firstOffset: 20, lastOffset: 29, messageId: 'msg_2' }));
    await r.saveBatch(batch(id, { firstOffset: 30, lastOffset: 39, messageId: 'msg_3' }));
    await r.batchDropped(id, 0, 10, { at: 7000, error: { status: 500, message: 'down', at: 7000 } });
    await r.batchDelivered(id, 0, 20, 7100);
    await r.addDropped(id, 3);
    const stats = await r.deliveryStats(id);
    assert.equal([stats.dropped, stats.delivered, stats.lastError?.status, stats.pending.events], [10, 7, 500, 7]);
    await r.pruneBatches(id, 0, 30);
    assert.equal((await r.savedBatches(id, 0)).map((b) => b.firstOffset), [30], 'the pending batch stays whatever the offset');
    await r.pruneBatches(id, 0, 100);
    assert.equal((await r.savedBatches(id, 0)).map((b) => b.firstOffset), [30]);
  });

  test('a receiver\'s answer kept as the last error: cut to 256 characters, well-formed, without NUL', async ({ r }) => {
    const { id } = await integration(r);
    await r.saveBatch(batch(id));
    const hostile = `a\u0000b\ud800c${'é'.repeat(300)}\u202e`;
    await r.attemptFailed(id, 0, 10, { attempts: 1, nextAttemptAt: 2000, error: { status: 400, message: hostile, at: 1000 } });
    const message = (await r.deliveryStats(id)).lastError!.message;
    assert.is(Array.from(message).length, 256);
    assert.ok(message.startsWith('ab\ufffdcé'), JSON.stringify(message.slice(0, 8)));
    assert.ok(message.isWellFormed());
  });

  test('disabling: status disabled with its reason, once', async ({ r, clock }) => {
    const { id } = await integration(r);
    clock.advance(10);
    await r.disableIntegration(id, 'gone');
    const disabled = await r.getIntegration(id);
    assert.equal([disabled?.status, disabled?.disabledReason, disabled?.updatedAt], ['disabled', 'gone', clock.now()]);
    await r.updateIntegration(id, { status: 'active' });
    assert.is((await r.getIntegration(id))?.disabledReason, undefined);
    await rejects(r.disableIntegration(id, ''), 'VALIDATION_FAILED', 'reason');
  });

  test('an unknown or deleted integration: writes change nothing, reads are empty', async ({ r }) => {
    const { id } = await integration(r);
    await r.saveBatch(batch(id));
    await r.attemptFailed(id, 0, 10, { attempts: 1, nextAttemptAt: 2000, error: { message: 'x', at: 1 } });
    await r.deleteIntegration(id);
    assert.equal(await r.savedBatches(id, 0), []);
    assert.equal(await r.deliveryStats(id), { delivered: 0, failedAttempts: 0, dropped: 0, pending: { events: 0 } });
    await r.saveBatch(batch(id));
    await r.addDropped(id, 5);
    await r.batchDelivered(id, 0, 10, 1);
    await r.disableIntegration(id, 'gone');
    assert.equal(await r.savedBatches(id, 0), []);
    assert.equal(await r.deliveryStats(id), { delivered: 0, failedAttempts: 0, dropped: 0, pending: { events: 0 } });
    for (const bad of MALFORMED_IDS) {
      assert.equal(await r.savedBatches(any(bad), 0), []);
      assert.equal((await r.deliveryStats(any(bad))).delivered, 0);
    }
  });

  test('malformed input is VALIDATION_FAILED naming the field, before anything is stored', async ({ r }) => {
    const { id } = await integration(r);
    const cases: Array<[Partial<DeliveryBatch> | Record<string, unknown>, string]> = [
      [{ partition: -1 }, 'partition'],
      [{ partition: 1.5 }, 'partition'],
      [{ firstOffset: -1 }, 'firstOffset'],
      [{ lastOffset: 5 }, 'lastOffset'],
      [{ events: Number.MAX_SAFE_INTEGER + 2 }, 'events'],
      [{ messageId: '' }, 'messageId'],
      [{ messageId: 'msg with space' }, 'messageId'],
      [{ messageId: 'm'.repeat(129) }, 'messageId'],
      [{ messageId: 'msg_\u00e9' }, 'messageId'],
      [{ integrationId: 'short' }, 'integrationId'],
      [{ sources: { x: 1 } }, 'sources'],
      [{ sources: { 0: -1 } }, 'sources'],
      [{ sources: [1] }, 'sources'],
    ];
    for (const [extra, field] of cases) await rejects(r.saveBatch({ ...batch(id), ...extra } as DeliveryBatch), 'VALIDATION_FAILED', field);
    assert.equal(await r.savedBatches(id, 0), []);
    await rejects(r.savedBatches(id, -1), 'VALIDATION_FAILED', 'partition');
    await rejects(r.addDropped(id, -3), 'VALIDATION_FAILED', 'count');
    await rejects(r.attemptFailed(id, 0, 10, { attempts: -1, nextAttemptAt: 1, error: { message: 'x', at: 1 } }), 'VALIDATION_FAILED', 'attempts');
    await rejects(r.saveBatches([batch(id), { ...batch(id, { firstOffset: 40, lastOffset: 40 }), messageId: '' }]), 'VALIDATION_FAILED', 'messageId');
    assert.equal(await r.savedBatches(id, 0), [], 'a malformed batch refuses the whole write');
    await rejects(r.saveBatches({ length: 1 } as unknown as DeliveryBatch[]), 'VALIDATION_FAILED', 'batches');
    await r.saveBatch(batch(id));
    await rejects(r.batchesDelivered([{ integrationId: id, partition: 0, firstOffset: 10, at: 1 }, { integrationId: id, partition: 0, firstOffset: 10, at: -1 }]), 'VALIDATION_FAILED', 'at');
    await rejects(r.batchesDelivered([{ integrationId: id, partition: 0.5, firstOffset: 10, at: 1 }]), 'VALIDATION_FAILED', 'partition');
    await rejects(r.batchesDelivered([null as unknown as DeliveredBatch]), 'VALIDATION_FAILED', 'batches');
    assert.is((await r.deliveryStats(id)).delivered, 0, 'a malformed mark refuses the whole write');
  });

  return test;
}
