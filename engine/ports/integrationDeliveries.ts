/**
 * Integration deliveries port, a part of the registry (engine/ports/registry.ts): what an
 * integration's deliveries must not forget across a restart or a kill -9.
 *
 * Deliveries are driven from the log (topic `events`, one consumer group per integration, whose
 * committed offset is the integration's cursor). A batch is saved here BEFORE its first attempt:
 * the records it covers (one partition, `firstOffset`..`lastOffset`), its `webhook-id`, its attempts
 * and when the next one is due. After a restart the batch is rebuilt from the same records and sent
 * with the same id, so a receiver that got it before the crash can tell the duplicate. A delivered
 * batch is marked so, and kept until the cursor has passed it: rebuilt after a crash that came
 * before the cursor moved, it is not sent again.
 *
 * The counters (`delivered`, `failedAttempts`, `dropped`, the last success and the last error)
 * are what `GET /integrations/{id}` shows. They are kept per integration and removed with it.
 *
 * SQL in adapters/sql-registry/deliveries.ts; contract in test/contracts/integrationDeliveries.contract.ts.
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input, UNAVAILABLE/TIMEOUT (retriable)
 * when the database cannot be reached, CLOSED after close(). Methods given an integration that does
 * not exist (deleted meanwhile) do nothing, and reads answer empty.
 */

/** A batch of one integration's events from one partition of topic `events`, saved before its first attempt. */
export interface DeliveryBatch {
  integrationId: string;
  partition: number;
  /** The first and last record of the partition it covers (inclusive). */
  firstOffset: number;
  lastOffset: number;
  /** The `webhook-id` of every attempt. */
  messageId: string;
  /** Events it carries. */
  events: number;
  /** Attempts made so far (0: saved, not yet tried). */
  attempts: number;
  /** Epoch ms when the next attempt is due. */
  nextAttemptAt: number;
  /** Epoch ms it was saved: the age of the oldest pending event. */
  createdAt: number;
  /** Epoch ms it was delivered; absent while pending. */
  deliveredAt?: number;
  /**
   * Per partition of topic `uplinks`, the last uplink whose events the integration had taken when
   * this batch was closed (schemas/events.ts EventSource): events the engine writes again after a
   * crash come from uplinks at or before it, and are known as repeats.
   */
  sources?: Record<string, number>;
}

/** A batch delivered: which (its integration, partition and start) and when. */
export interface DeliveredBatch {
  integrationId: string;
  partition: number;
  firstOffset: number;
  at: number;
}

/** The last failed attempt of an integration. */
export interface DeliveryError {
  /** The receiver's status, when it answered. */
  status?: number;
  /** The start of its answer, or why no answer came (timeout, connection, a destination refused); at most 256 characters. */
  message: string;
  at: number;
}

export interface DeliveryStats {
  delivered: number;
  failedAttempts: number;
  /** Events that fell out of the log's retention before they were delivered. */
  dropped: number;
  /** Events in saved batches not yet delivered, and when the oldest was saved. */
  pending: { events: number; oldestAt?: number };
  lastSuccessAt?: number;
  lastError?: DeliveryError;
}

export interface IntegrationDeliveries {
  /** Saves a batch before its first attempt (a batch saved again with the same start is replaced). */
  saveBatch(batch: DeliveryBatch): Promise<void>;
  /**
   * saveBatch for several batches (of any integrations and partitions) in one write: all are saved
   * or none. Of two with the same start, the later in the list is kept. A malformed one refuses the
   * whole call before anything is stored.
   */
  saveBatches(batches: readonly DeliveryBatch[]): Promise<void>;
  /** The saved batches of an integration's partition (pending and delivered), by firstOffset. */
  savedBatches(integrationId: string, partition: number): Promise<DeliveryBatch[]>;
  /** Forgets the delivered batches of the partition that end below `offset` (the cursor passed them). */
  pruneBatches(integrationId: string, partition: number, offset: number): Promise<void>;
  /** An attempt failed: the batch's attempts and next attempt are saved, failedAttempts counts it, lastError is set. */
  attemptFailed(integrationId: string, partition: number, firstOffset: number, update: { attempts: number; nextAttemptAt: number; error: DeliveryError }): Promise<void>;
  /** The batch was delivered: it is marked so, `delivered` counts its events, lastSuccessAt is set. */
  batchDelivered(integrationId: string, partition: number, firstOffset: number, at: number): Promise<void>;
  /** batchDelivered for several batches in one write: all are marked or none; a batch listed twice is marked by the first (one with a malformed integration id is skipped, as batchDelivered does). */
  batchesDelivered(batches: readonly DeliveredBatch[]): Promise<void>;
  /** The batch was given up (its retries outlasted the retry window): it is settled as delivered is, its events count as dropped, lastError is set. */
  batchDropped(integrationId: string, partition: number, firstOffset: number, outcome: { at: number; error: DeliveryError }): Promise<void>;
  /** Events lost to the log's retention. */
  addDropped(integrationId: string, count: number): Promise<void>;
  /** The receiver answered 410 Gone: the integration is disabled with reason `gone` (a registry change). */
  disableIntegration(integrationId: string, reason: string): Promise<void>;
  /** Its counters and pending events; zeros for an integration with none (or none any more). */
  deliveryStats(integrationId: string): Promise<DeliveryStats>;
}
