/**
 * The integration deliveries port (engine/ports/integrationDeliveries.ts) in SQL, migration 6:
 * `integration_batches` (each batch saved before its first attempt, kept once delivered until the
 * cursor passes it) and `integration_delivery_stats` (the counters GET /integrations/{id} shows).
 * Each call is one statement: they come once per batch of up to 100 events per partition, or once
 * for the batches of several partitions and integrations (saveBatches, batchesDelivered).
 *
 * Writes for an integration that does not exist (any more) change nothing: the counters are
 * written from the integration's row, and a batch of a deleted integration goes with it (ON DELETE
 * CASCADE). A receiver's answer kept as the last error is cut to 256 characters, made well-formed
 * (a lone surrogate becomes U+FFFD) and rid of NUL, which a text column cannot hold.
 */
import { FleetError } from '../../engine/kernel/errors.ts';
import { isId } from '../../engine/kernel/ids.ts';
import type { DeliveredBatch, DeliveryBatch, DeliveryError, DeliveryStats, IntegrationDeliveries } from '../../engine/ports/integrationDeliveries.ts';
import type { SqlContext } from './SqlContext.ts';

const MAX_ERROR_CHARS = 256;
const MAX_MESSAGE_ID = 128;
const MAX_SOURCES = 10_000;

interface BatchRow {
  partition: unknown;
  first_offset: unknown;
  last_offset: unknown;
  message_id: string;
  events: unknown;
  attempts: unknown;
  next_attempt_at: unknown;
  created_at: unknown;
  delivered_at: unknown;
  sources: unknown;
}

interface StatsRow {
  delivered: unknown;
  failed_attempts: unknown;
  dropped: unknown;
  last_success_at: unknown;
  last_error_status: unknown;
  last_error_message: string | null;
  last_error_at: unknown;
  pending: unknown;
  oldest: unknown;
}

const UPSERT_STATS = `INSERT INTO integration_delivery_stats AS s (integration_id, delivered, failed_attempts, dropped, last_success_at, last_error_status, last_error_message, last_error_at)`;
const ADD_STATS = `ON CONFLICT (integration_id) DO UPDATE SET
  delivered = s.delivered + EXCLUDED.delivered,
  failed_attempts = s.failed_attempts + EXCLUDED.failed_attempts,
  dropped = s.dropped + EXCLUDED.dropped,
  last_success_at = COALESCE(EXCLUDED.last_success_at, s.last_success_at),
  last_error_status = CASE WHEN EXCLUDED.last_error_at IS NULL THEN s.last_error_status ELSE EXCLUDED.last_error_status END,
  last_error_message = COALESCE(EXCLUDED.last_error_message, s.last_error_message),
  last_error_at = COALESCE(EXCLUDED.last_error_at, s.last_error_at)`;

function offset(value: unknown, field: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) throw new FleetError('VALIDATION_FAILED', `${field}: an integer >= 0`, { detail: { field } });
  return value as number;
}

/** The error as kept: a status when there is one, a short well-formed text, its time. */
function errorParams(error: DeliveryError): [number | null, string, number] {
  if (error === null || typeof error !== 'object') throw new FleetError('VALIDATION_FAILED', 'error: an object', { detail: { field: 'error' } });
  const status = error.status === undefined ? null : offset(error.status, 'error.status');
  const text = String(error.message ?? '').toWellFormed().replaceAll('\u0000', '');
  return [status, Array.from(text).slice(0, MAX_ERROR_CHARS).join(''), offset(error.at, 'error.at')];
}

function checkBatch(batch: DeliveryBatch): void {
  if (batch === null || typeof batch !== 'object' || !isId(batch.integrationId)) throw new FleetError('VALIDATION_FAILED', 'integrationId: not a registry id', { detail: { field: 'integrationId' } });
  for (const field of ['partition', 'firstOffset', 'lastOffset', 'events', 'attempts', 'nextAttemptAt', 'createdAt'] as const) offset(batch[field], field);
  if (batch.lastOffset < batch.firstOffset) throw new FleetError('VALIDATION_FAILED', 'lastOffset: below firstOffset', { detail: { field: 'lastOffset' } });
  if (typeof batch.messageId !== 'string' || batch.messageId.length === 0 || batch.messageId.length > MAX_MESSAGE_ID || !/^[\x21-\x7e]+$/.test(batch.messageId)) {
    throw new FleetError('VALIDATION_FAILED', 'messageId: 1 to 128 printable ASCII characters', { detail: { field: 'messageId' } });
  }
  if (batch.sources === undefined) return;
  const entries = batch.sources !== null && typeof batch.sources === 'object' && !Array.isArray(batch.sources) ? Object.entries(batch.sources) : undefined;
  if (entries === undefined || entries.length > MAX_SOURCES || !entries.every(([p, o]) => /^(0|[1-9][0-9]{0,5})$/.test(p) && Number.isSafeInteger(o) && o >= 0)) {
    throw new FleetError('VALIDATION_FAILED', `sources: partition → offset, at most ${MAX_SOURCES}`, { detail: { field: 'sources' } });
  }
}

function toBatch(integrationId: string, row: BatchRow): DeliveryBatch {
  const batch: DeliveryBatch = {
    integrationId,
    partition: Number(row.partition),
    firstOffset: Number(row.first_offset),
    lastOffset: Number(row.last_offset),
    messageId: row.message_id,
    events: Number(row.events),
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
    createdAt: Number(row.created_at),
  };
  if (row.delivered_at !== null) batch.deliveredAt = Number(row.delivered_at);
  const sources = typeof row.sources === 'string' ? JSON.parse(row.sources) : row.sources;
  if (sources !== null && sources !== undefined) batch.sources = sources as Record<string, number>;
  return batch;
}

function toStats(row: StatsRow | undefined): DeliveryStats {
  const stats: DeliveryStats = {
    delivered: Number(row?.delivered ?? 0),
    failedAttempts: Number(row?.failed_attempts ?? 0),
    dropped: Number(row?.dropped ?? 0),
    pending: { events: Number(row?.pending ?? 0) },
  };
  if (row?.oldest != null) stats.pending.oldestAt = Number(row.oldest);
  if (row?.last_success_at != null) stats.lastSuccessAt = Number(row.last_success_at);
  if (row?.last_error_at != null) {
    stats.lastError = { message: row.last_error_message ?? '', at: Number(row.last_error_at) };
    if (row.last_error_status != null) stats.lastError.status = Number(row.last_error_status);
  }
  return stats;
}

export function deliveryOperations({ executor, guard, clock }: SqlContext): IntegrationDeliveries {
  /** A batch's key, checked; undefined when the integration id is malformed (nothing to do). */
  const key = (integrationId: string, partition: number, firstOffset: number): [string, number, number] | undefined => {
    if (!isId(integrationId)) return undefined;
    return [integrationId, offset(partition, 'partition'), offset(firstOffset, 'firstOffset')];
  };
  async function saveBatches(batches: readonly DeliveryBatch[]): Promise<void> {
    if (!Array.isArray(batches)) throw new FleetError('VALIDATION_FAILED', 'batches: a list', { detail: { field: 'batches' } });
    for (const batch of batches) checkBatch(batch);
    // One row per key (the later wins): ON CONFLICT cannot touch a row twice in one statement.
    const byKey = new Map<string, DeliveryBatch>();
    for (const batch of batches) byKey.set(`${batch.integrationId}/${batch.partition}/${batch.firstOffset}`, batch);
    if (byKey.size === 0) return;
    const rows = [...byKey.values()];
    const column = <T>(pick: (batch: DeliveryBatch) => T) => rows.map(pick);
    await guard(() => executor.query(
      `INSERT INTO integration_batches (integration_id, partition, first_offset, last_offset, message_id, events, attempts, next_attempt_at, created_at, sources)
       SELECT i.id, v.partition, v.first_offset, v.last_offset, v.message_id, v.events, v.attempts, v.next_attempt_at, v.created_at, v.sources::jsonb
       FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::bigint[], $5::text[], $6::integer[], $7::integer[], $8::bigint[], $9::bigint[], $10::text[])
            AS v (integration_id, partition, first_offset, last_offset, message_id, events, attempts, next_attempt_at, created_at, sources)
       JOIN integrations i ON i.id = v.integration_id
       ORDER BY v.integration_id, v.partition, v.first_offset
       ON CONFLICT (integration_id, partition, first_offset) DO UPDATE SET last_offset = EXCLUDED.last_offset, message_id = EXCLUDED.message_id,
         events = EXCLUDED.events, attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at, created_at = EXCLUDED.created_at,
         sources = EXCLUDED.sources, delivered_at = NULL`,
      [column((b) => b.integrationId), column((b) => b.partition), column((b) => b.firstOffset), column((b) => b.lastOffset), column((b) => b.messageId),
        column((b) => b.events), column((b) => b.attempts), column((b) => b.nextAttemptAt), column((b) => b.createdAt),
        column((b) => (b.sources === undefined ? null : JSON.stringify(b.sources)))],
    ));
  }

  async function batchesDelivered(batches: readonly DeliveredBatch[]): Promise<void> {
    if (!Array.isArray(batches)) throw new FleetError('VALIDATION_FAILED', 'batches: a list', { detail: { field: 'batches' } });
    // One row per batch: the first mark of it counts, as the first of two calls would.
    const byKey = new Map<string, [string, number, number, number]>();
    for (const batch of batches) {
      if (batch === null || typeof batch !== 'object') throw new FleetError('VALIDATION_FAILED', 'batches: objects', { detail: { field: 'batches' } });
      const k = key(batch.integrationId, batch.partition, batch.firstOffset);
      const at = offset(batch.at, 'at');
      if (k !== undefined && !byKey.has(k.join('/'))) byKey.set(k.join('/'), [...k, at]);
    }
    if (byKey.size === 0) return;
    const rows = [...byKey.values()];
    // Counted per integration, in id order: several engines adding to the same counters lock them in one order.
    await guard(() => executor.query(
      `WITH v AS (SELECT * FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::bigint[]) AS v (integration_id, partition, first_offset, at)),
       b AS (UPDATE integration_batches ib SET delivered_at = v.at FROM v
             WHERE ib.integration_id = v.integration_id AND ib.partition = v.partition AND ib.first_offset = v.first_offset AND ib.delivered_at IS NULL
             RETURNING ib.integration_id, ib.events, v.at)
       ${UPSERT_STATS} SELECT integration_id, SUM(events)::bigint, 0, 0, MAX(at), NULL, NULL, NULL FROM b GROUP BY integration_id ORDER BY integration_id ${ADD_STATS}`,
      [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2]), rows.map((r) => r[3])],
    ));
  }

  return {
    saveBatches,
    batchesDelivered,

    async saveBatch(batch) {
      await saveBatches([batch]);
    },

    async savedBatches(integrationId, partition) {
      if (!isId(integrationId)) return [];
      offset(partition, 'partition');
      return guard(async () => {
        const { rows } = await executor.query<BatchRow>(
          `SELECT partition, first_offset, last_offset, message_id, events, attempts, next_attempt_at, created_at, delivered_at, sources
           FROM integration_batches WHERE integration_id = $1 AND partition = $2 ORDER BY first_offset`,
          [integrationId, partition],
        );
        return rows.map((row) => toBatch(integrationId, row));
      });
    },

    async pruneBatches(integrationId, partition, below) {
      const k = key(integrationId, partition, below);
      if (k === undefined) return;
      await guard(() => executor.query('DELETE FROM integration_batches WHERE integration_id = $1 AND partition = $2 AND last_offset < $3 AND delivered_at IS NOT NULL', k));
    },

    async attemptFailed(integrationId, partition, firstOffset, update) {
      const k = key(integrationId, partition, firstOffset);
      if (k === undefined) return;
      const attempts = offset(update?.attempts, 'attempts');
      const nextAttemptAt = offset(update.nextAttemptAt, 'nextAttemptAt');
      await guard(() => executor.query(
        `WITH b AS (UPDATE integration_batches SET attempts = $4, next_attempt_at = $5
                    WHERE integration_id = $1 AND partition = $2 AND first_offset = $3 AND delivered_at IS NULL RETURNING integration_id)
         ${UPSERT_STATS} SELECT integration_id, 0, 1, 0, NULL, $6::integer, $7, $8::bigint FROM b ${ADD_STATS}`,
        [...k, attempts, nextAttemptAt, ...errorParams(update.error)],
      ));
    },

    async batchDelivered(integrationId, partition, firstOffset, at) {
      await batchesDelivered([{ integrationId, partition, firstOffset, at }]);
    },

    async batchDropped(integrationId, partition, firstOffset, outcome) {
      const k = key(integrationId, partition, firstOffset);
      if (k === undefined) return;
      const [status, message, errorAt] = errorParams(outcome?.error);
      await guard(() => executor.query(
        `WITH b AS (UPDATE integration_batches SET delivered_at = $4
                    WHERE integration_id = $1 AND partition = $2 AND first_offset = $3 AND delivered_at IS NULL RETURNING integration_id, events)
         ${UPSERT_STATS} SELECT integration_id, 0, 0, events, NULL, $5::integer, $6, $7::bigint FROM b ${ADD_STATS}`,
        [...k, offset(outcome.at, 'at'), status, message, errorAt],
      ));
    },

    async addDropped(integrationId, count) {
      if (!isId(integrationId)) return;
      offset(count, 'count');
      await guard(() => executor.query(
        `${UPSERT_STATS} SELECT id, 0, 0, $2::bigint, NULL, NULL, NULL, NULL FROM integrations WHERE id = $1 ${ADD_STATS}`,
        [integrationId, count],
      ));
    },

    async disableIntegration(integrationId, reason) {
      if (!isId(integrationId)) return;
      if (typeof reason !== 'string' || reason.length === 0 || reason.length > 256) throw new FleetError('VALIDATION_FAILED', 'reason: 1 to 256 characters', { detail: { field: 'reason' } });
      await guard(() => executor.query(
        `UPDATE integrations SET status = 'disabled', disabled_reason = $2, updated_at = $3 WHERE id = $1 AND status = 'active'`,
        [integrationId, reason, clock.now()],
      ));
    },

    async deliveryStats(integrationId) {
      if (!isId(integrationId)) return toStats(undefined);
      return guard(async () => {
        const { rows } = await executor.query<StatsRow>(
          `SELECT s.delivered, s.failed_attempts, s.dropped, s.last_success_at, s.last_error_status, s.last_error_message, s.last_error_at,
                  p.pending, p.oldest
           FROM (SELECT COALESCE(SUM(events), 0) AS pending, MIN(created_at) AS oldest
                 FROM integration_batches WHERE integration_id = $1 AND delivered_at IS NULL) p
           LEFT JOIN integration_delivery_stats s ON s.integration_id = $1`,
          [integrationId],
        );
        return toStats(rows[0]);
      });
    },
  };
}
