/**
 * Where the edges (HTTP, MQTT, LPWAN) hand uplinks to the engine: each uplink gets a unique id and
 * its receive time, is encoded as an envelope (engine/uplink/envelope.ts) and appended to topic `uplinks`
 * keyed by device id (DESIGN.md §2, §3). `append` resolves only once the record is durable in the
 * log, so an edge acknowledges (HTTP 202, MQTT PUBACK) nothing it could lose.
 *
 * Bounded: at most `maxPending` uplinks wait for the log; beyond that `append` refuses at once with
 * BACKPRESSURE (retriable; the HTTP edge answers 503 + Retry-After) instead of queueing without end.
 * Group commit: at most `maxConcurrentAppends` log appends run at a time, and uplinks arriving
 * meanwhile go into the next append together, so under load one durable write carries many uplinks.
 */
import { Compile } from 'typebox/compile';
import { Batcher, refuseLater } from '../kernel/Batcher.ts';
import type { Clock } from '../kernel/clock.ts';
import { encodeEnvelope } from './envelope.ts';
import { FleetError, toFleetError } from '../kernel/errors.ts';
import { newUplinkId } from '../kernel/ids.ts';
import type { Log, ProducerRecord } from '../ports/log.ts';
import type { UplinkSubmission } from '../ports/uplinkAdmission.ts';
import { Topics, UplinkEnvelope } from '../../schemas/messages.ts';

const checkEnvelope = Compile(UplinkEnvelope);

export type { UplinkSubmission };

export interface UplinkReceipt {
  /** The uplink id: its states and rejections carry it. */
  id: string;
  /** Epoch ms. */
  receivedAt: number;
}

export interface UplinkIngestOptions {
  log: Pick<Log, 'append'>;
  clock: Clock;
  /** Default `uplinks`. */
  topic?: string;
  /** Uplinks accepted and not yet durable before append() refuses with BACKPRESSURE. Default 4096. */
  maxPending?: number;
  /** Log appends running at once. Default 4. */
  maxConcurrentAppends?: number;
  /** Records per log append. Default 512. */
  maxBatch?: number;
  /** Retry-After suggested when refusing, seconds. Default 1. */
  retryAfterSeconds?: number;
  /** Uplink ids from the receive time; default engine/kernel/ids.ts newUplinkId (time-ordered). */
  newId?(receivedAt: number): string;
}

export class UplinkIngest {
  readonly #clock: Clock;
  readonly #retryAfter: number;
  readonly #newId: (receivedAt: number) => string;
  readonly #batcher: Batcher<ProducerRecord>;
  /** Partition → one past the last offset this ingest appended. */
  readonly #appendedTo = new Map<number, number>();

  constructor(options: UplinkIngestOptions) {
    const log = options.log;
    const topic = options.topic ?? Topics.uplinks;
    this.#clock = options.clock;
    this.#retryAfter = options.retryAfterSeconds ?? 1;
    this.#newId = options.newId ?? newUplinkId;
    const maxConcurrent = options.maxConcurrentAppends ?? 4;
    this.#batcher = new Batcher({
      name: 'uplink ingest',
      clock: options.clock,
      // Group commit: an append starts at once while fewer than maxConcurrentAppends run; uplinks
      // arriving meanwhile go into the next one together.
      maxDelayMs: 0,
      maxItems: options.maxBatch ?? 512,
      concurrency: maxConcurrent,
      maxPending: options.maxPending ?? 4096,
      overflow: 'refuse',
      write: async (records) => {
        let positions;
        try {
          positions = await log.append(topic, records);
        } catch (error) {
          throw logFailure(error);
        }
        for (const { partition, offset } of positions) {
          if (offset >= (this.#appendedTo.get(partition) ?? 0)) this.#appendedTo.set(partition, offset + 1);
        }
      },
    });
  }

  /** Partition → one past the last offset appended here: what an engine of this process must reach to have stored all of it. */
  get appendedTo(): ReadonlyMap<number, number> {
    return this.#appendedTo;
  }

  /** Uplinks accepted and not yet durable. */
  get pending(): number {
    return this.#batcher.pending;
  }

  /**
   * Resolves once the uplink is durable in the log. Rejects with BACKPRESSURE when too many are
   * pending, CLOSED after close(), or the log's error (non-FleetErrors become UNAVAILABLE).
   *
   * One promise per uplink, resolved from the batcher's callback (Batcher.addThen): this runs for
   * every uplink of every edge, and an async function awaiting a promise of its own cost two more.
   */
  append(submission: UplinkSubmission): Promise<UplinkReceipt> {
    return new Promise((resolve, reject) => {
      const envelope = this.appendThen(submission, (failure) => {
        if (failure === undefined) resolve({ id: envelope!.id, receivedAt: envelope!.receivedAt });
        else reject(failure);
      });
    });
  }

  /**
   * append() without a promise, for edges that hand over uplinks at message rates: `done` is called
   * once, without an argument when the uplink is durable, else with the error append() rejects with
   * (never synchronously). Returns the envelope handed to the log's batching (its id and receive
   * time), or undefined when the submission did not get that far (closed, not an envelope).
   */
  appendThen(submission: UplinkSubmission, done: (failure?: FleetError) => void): UplinkEnvelope | undefined {
    if (this.#batcher.closed) return refuseLater(done, new FleetError('CLOSED', 'uplink ingest is closed'));
    // The admission step gives every uplink its id and receive time; the envelope is then the submission itself.
    let envelope: UplinkEnvelope;
    if (submission.id !== undefined && submission.receivedAt !== undefined) envelope = submission as UplinkEnvelope;
    else {
      const receivedAt = submission.receivedAt ?? this.#clock.now();
      envelope = { ...submission, id: submission.id ?? this.#newId(receivedAt), receivedAt };
    }
    // An edge bug must not put a record on the log that every consumer would choke on.
    if (!checkEnvelope.Check(envelope) || !(envelope.body instanceof Uint8Array)) {
      return refuseLater(done, new FleetError('INTERNAL', 'uplink submission does not match the envelope schema'));
    }
    let value: Uint8Array;
    try {
      value = encodeEnvelope(envelope);
    } catch (error) {
      return refuseLater(done, toFleetError(error));
    }
    this.#batcher.addThen({ key: envelope.deviceId, value, timestamp: envelope.receivedAt }, (failure) => {
      if (failure === undefined) done();
      else if (failure.code === 'BACKPRESSURE' && failure.detail === undefined) {
        done(new FleetError('BACKPRESSURE', 'too many uplinks waiting for the log; retry later', { detail: { retryAfter: this.#retryAfter } }));
      } else done(failure);
    });
    return envelope;
  }

  /** Refuses new uplinks and resolves once every accepted one is settled. */
  close(): Promise<void> {
    return this.#batcher.close();
  }
}

/**
 * A failed append is never the sender's fault: transient log errors stay retriable (503 at the
 * edge), anything else (a missing topic, a refused record) is an internal error, not a 4xx.
 */
function logFailure(error: unknown): FleetError {
  const failure = toFleetError(error, 'UNAVAILABLE');
  if (failure.retriable || failure.code === 'CLOSED') return failure;
  return new FleetError('INTERNAL', `log append failed: ${failure.message}`, { cause: error });
}
