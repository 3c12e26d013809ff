/**
 * Where the edges (HTTP, MQTT, LPWAN) hand uplinks to the engine: each uplink gets a unique id and
 * its receive time, is encoded as an envelope (engine/envelope.ts) and appended to topic `uplinks`
 * keyed by device id (DESIGN.md §2, §3). `append` resolves only once the record is durable in the
 * log, so an edge acknowledges (HTTP 202, MQTT PUBACK) nothing it could lose.
 *
 * Bounded: at most `maxPending` uplinks wait for the log; beyond that `append` refuses at once with
 * BACKPRESSURE (retriable; the HTTP edge answers 503 + Retry-After) instead of queueing without end.
 * Group commit: at most `maxConcurrentAppends` log appends run at a time, and uplinks arriving
 * meanwhile go into the next append together, so under load one durable write carries many uplinks.
 */
import { Compile } from 'typebox/compile';
import type { Clock } from './clock.ts';
import { encodeEnvelope } from './envelope.ts';
import { FleetError, toFleetError } from './errors.ts';
import { newUplinkId } from './ids.ts';
import type { Log, ProducerRecord } from './ports/log.ts';
import { Topics, UplinkEnvelope } from '../schemas/messages.ts';

const checkEnvelope = Compile(UplinkEnvelope);

/** What an edge knows about an uplink; the ingest adds `id` and `receivedAt`. */
export type UplinkSubmission = Omit<UplinkEnvelope, 'id' | 'receivedAt'>;

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
  /** Uplink ids from the receive time; default engine/ids.ts newUplinkId (time-ordered). */
  newId?(receivedAt: number): string;
}

interface Waiting {
  record: ProducerRecord;
  receipt: UplinkReceipt;
  resolve(receipt: UplinkReceipt): void;
  reject(error: FleetError): void;
}

export class UplinkIngest {
  readonly #log: Pick<Log, 'append'>;
  readonly #clock: Clock;
  readonly #topic: string;
  readonly #maxPending: number;
  readonly #maxConcurrent: number;
  readonly #maxBatch: number;
  readonly #retryAfter: number;
  readonly #newId: (receivedAt: number) => string;
  #queue: Waiting[] = [];
  #pending = 0;
  #active = 0;
  #closed = false;
  #idle: (() => void)[] = [];

  constructor(options: UplinkIngestOptions) {
    this.#log = options.log;
    this.#clock = options.clock;
    this.#topic = options.topic ?? Topics.uplinks;
    this.#maxPending = options.maxPending ?? 4096;
    this.#maxConcurrent = options.maxConcurrentAppends ?? 4;
    this.#maxBatch = options.maxBatch ?? 512;
    this.#retryAfter = options.retryAfterSeconds ?? 1;
    this.#newId = options.newId ?? newUplinkId;
  }

  /** Uplinks accepted and not yet durable. */
  get pending(): number {
    return this.#pending;
  }

  /**
   * Resolves once the uplink is durable in the log. Rejects with BACKPRESSURE when too many are
   * pending, CLOSED after close(), or the log's error (non-FleetErrors become UNAVAILABLE).
   */
  append(submission: UplinkSubmission): Promise<UplinkReceipt> {
    if (this.#closed) return Promise.reject(new FleetError('CLOSED', 'uplink ingest is closed'));
    if (this.#pending >= this.#maxPending) {
      return Promise.reject(new FleetError('BACKPRESSURE', 'too many uplinks waiting for the log; retry later', {
        detail: { retryAfter: this.#retryAfter },
      }));
    }
    const receivedAt = this.#clock.now();
    const receipt: UplinkReceipt = { id: this.#newId(receivedAt), receivedAt };
    const envelope: UplinkEnvelope = { ...submission, ...receipt };
    // An edge bug must not put a record on the log that every consumer would choke on.
    if (!checkEnvelope.Check(envelope) || !(envelope.body instanceof Uint8Array)) {
      return Promise.reject(new FleetError('INTERNAL', 'uplink submission does not match the envelope schema'));
    }
    let value: Uint8Array;
    try {
      value = encodeEnvelope(envelope);
    } catch (error) {
      return Promise.reject(toFleetError(error));
    }
    this.#pending++;
    return new Promise<UplinkReceipt>((resolve, reject) => {
      this.#queue.push({ record: { key: submission.deviceId, value, timestamp: receipt.receivedAt }, receipt, resolve, reject });
      this.#pump();
    });
  }

  /** Refuses new uplinks and resolves once every accepted one is settled. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#pending === 0) return;
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    while (this.#active < this.#maxConcurrent && this.#queue.length > 0) {
      const batch = this.#queue.length <= this.#maxBatch ? this.#queue : this.#queue.slice(0, this.#maxBatch);
      this.#queue = batch === this.#queue ? [] : this.#queue.slice(this.#maxBatch);
      this.#active++;
      this.#write(batch);
    }
  }

  async #write(batch: Waiting[]): Promise<void> {
    try {
      await this.#log.append(this.#topic, batch.map((w) => w.record));
      for (const w of batch) w.resolve(w.receipt);
    } catch (error) {
      const failure = logFailure(error);
      for (const w of batch) w.reject(failure);
    } finally {
      this.#active--;
      this.#pending -= batch.length;
      if (this.#pending === 0) for (const resolve of this.#idle.splice(0)) resolve();
      this.#pump();
    }
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
