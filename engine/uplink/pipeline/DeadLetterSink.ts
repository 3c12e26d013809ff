/**
 * Batches rejected uplinks onto the `dead-letters` topic (key = device id) with the kernel Batcher.
 * A rejection is only counted as handled once its dead letter is durable, so a crash cannot lose the
 * reason. Bounded like the state batcher: past 10 × maxBatch letters held, add() waits for room.
 * Failures are not retried here: the caller decides (UplinkPipeline retries retriable ones).
 */
import { Batcher } from '../../kernel/Batcher.ts';
import type { Clock } from '../../kernel/clock.ts';
import { encodeDeadLetter } from '../envelope.ts';
import type { Log, ProducerRecord } from '../../ports/log.ts';
import { Topics, type DeadLetter, type UplinkEnvelope } from '../../../schemas/messages.ts';
import type { Rejection } from '../admission/processUplink.ts';

export interface DeadLetterSinkOptions {
  log: Pick<Log, 'append'>;
  clock: Clock;
  topic?: string;
  /** Longest a dead letter waits for companions before the batch is appended (ms). Default 20. */
  lingerMs?: number;
  /** Batch size that triggers an immediate append. Default 500. */
  maxBatch?: number;
  /** Told about every rejection once it is durable (e.g. to keep a device's recent rejections). */
  onDeadLetters?(letters: readonly DeadLetter[]): void | Promise<void>;
}

/** The dead letters of one add(). */
interface Letters {
  records: ProducerRecord[];
  letters: DeadLetter[];
}

export class DeadLetterSink {
  readonly #clock: Clock;
  readonly #batcher: Batcher<Letters>;
  appended = 0;

  constructor(options: DeadLetterSinkOptions) {
    const { log, onDeadLetters } = options;
    const topic = options.topic ?? Topics.deadLetters;
    const maxBatch = options.maxBatch ?? 500;
    this.#clock = options.clock;
    this.#batcher = new Batcher({
      name: 'dead-letter sink',
      clock: options.clock,
      write: async (adds) => {
        const records = adds.flatMap((add) => add.records);
        await log.append(topic, records);
        this.appended += records.length;
        await onDeadLetters?.(adds.flatMap((add) => add.letters));
      },
      weight: (add) => add.records.length,
      maxItems: maxBatch,
      maxDelayMs: options.lingerMs ?? 20,
      maxPending: 10 * maxBatch,
      overflow: 'wait',
      // Appends of several batches may run at once, as the log takes them (group commit).
      concurrency: 4,
    });
  }

  /** Queues one dead letter per rejection; resolves with them when they are durable. */
  add(envelope: UplinkEnvelope, rejections: readonly Rejection[]): Promise<DeadLetter[]> {
    const rejectedAt = this.#clock.now();
    const add: Letters = { records: [], letters: [] };
    for (const rejection of rejections) {
      const letter: DeadLetter = { code: rejection.code, reason: rejection.reason, rejectedAt, envelope };
      if (rejection.asset !== undefined) letter.asset = rejection.asset;
      if (rejection.item !== undefined) letter.item = rejection.item;
      add.letters.push(letter);
      add.records.push({ key: envelope.deviceId, value: encodeDeadLetter(letter), timestamp: rejectedAt });
    }
    return this.#batcher.add(add).then(() => add.letters);
  }

  /** Appends whatever is queued and waits for every append under way. */
  flush(): Promise<void> {
    return this.#batcher.flush();
  }
}
