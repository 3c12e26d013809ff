/**
 * Batches rejected uplinks onto the `dead-letters` topic (key = device id). A rejection is only
 * counted as handled once its dead letter is durable, so a crash cannot lose the reason.
 */
import type { Clock, TimerHandle } from '../../kernel/clock.ts';
import { encodeDeadLetter } from '../envelope.ts';
import type { Log, ProducerRecord } from '../../ports/log.ts';
import { Topics, type DeadLetter, type UplinkEnvelope } from '../../../schemas/messages.ts';
import type { Rejection } from '../admission/processUplink.ts';

export interface DeadLetterSinkOptions {
  log: Log;
  clock: Clock;
  topic?: string;
  /** Longest a dead letter waits for companions before the batch is appended (ms). Default 20. */
  lingerMs?: number;
  /** Batch size that triggers an immediate append. Default 500. */
  maxBatch?: number;
  /** Told about every rejection once it is durable (e.g. to keep a device's recent rejections). */
  onDeadLetters?(letters: readonly DeadLetter[]): void | Promise<void>;
}

interface Pending {
  records: ProducerRecord[];
  letters: DeadLetter[];
  resolve: () => void;
  reject: (error: unknown) => void;
  promise: Promise<void>;
}

export class DeadLetterSink {
  readonly #options: DeadLetterSinkOptions;
  readonly #topic: string;
  readonly #lingerMs: number;
  readonly #maxBatch: number;
  #pending: Pending | undefined;
  #timer: TimerHandle | undefined;
  #inFlight = new Set<Promise<void>>();
  appended = 0;

  constructor(options: DeadLetterSinkOptions) {
    this.#options = options;
    this.#topic = options.topic ?? Topics.deadLetters;
    this.#lingerMs = options.lingerMs ?? 20;
    this.#maxBatch = options.maxBatch ?? 500;
  }

  /** Queues one dead letter per rejection; resolves when they are durable. */
  add(envelope: UplinkEnvelope, rejections: readonly Rejection[]): Promise<void> {
    const batch = this.#pending ?? this.#open();
    const rejectedAt = this.#options.clock.now();
    for (const rejection of rejections) {
      const letter: DeadLetter = { code: rejection.code, reason: rejection.reason, rejectedAt, envelope };
      if (rejection.asset !== undefined) letter.asset = rejection.asset;
      batch.letters.push(letter);
      batch.records.push({ key: envelope.deviceId, value: encodeDeadLetter(letter), timestamp: rejectedAt });
    }
    if (batch.records.length >= this.#maxBatch) this.#send();
    return batch.promise;
  }

  /** Appends whatever is queued and waits for every append under way. */
  async flush(): Promise<void> {
    this.#send();
    await Promise.allSettled([...this.#inFlight]);
  }

  #open(): Pending {
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej; });
    // A rejection of the batch is reported to every waiter; keep it from surfacing as unhandled here.
    promise.catch(() => undefined);
    this.#pending = { records: [], letters: [], resolve, reject, promise };
    this.#timer = this.#options.clock.setTimeout(() => this.#send(), this.#lingerMs);
    return this.#pending;
  }

  #send(): void {
    const batch = this.#pending;
    if (batch === undefined) return;
    this.#pending = undefined;
    this.#timer?.cancel();
    this.#timer = undefined;
    const sent = this.#options.log.append(this.#topic, batch.records).then(async () => {
      this.appended += batch.records.length;
      await this.#options.onDeadLetters?.(batch.letters);
    });
    this.#inFlight.add(sent);
    sent.then(batch.resolve, batch.reject).finally(() => this.#inFlight.delete(sent));
  }
}
