/**
 * What every edge of a process shares to hand uplinks to the engine: the ingest (durable appends to
 * `uplinks`, group commit), the dead-letter sink (refusals on `dead-letters` and in the devices'
 * rejections) and the one admission step over both. The service and the test stacks build it here.
 */
import type { Clock } from '../engine/kernel/clock.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import type { DeviceInfo } from '../engine/ports/directory.ts';
import type { Log } from '../engine/ports/log.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { CompiledDevice } from '../engine/uplink/admission/compileDevice.ts';
import { DeadLetterSink } from '../engine/uplink/pipeline/DeadLetterSink.ts';
import { rejectionRowsOf } from '../engine/uplink/pipeline/rejectionRows.ts';
import { UplinkAdmission } from '../engine/uplink/UplinkAdmission.ts';
import type { StatesQuota } from '../engine/quotas/GroundRates.ts';
import { UplinkIngest, type UplinkIngestOptions } from '../engine/uplink/UplinkIngest.ts';
import { Topics, type DeadLetter } from '../schemas/messages.ts';
import type { AtWindow } from '../engine/uplink/admission/compileDevice.ts';
import { serviceCompiler } from './deviceCompiler.ts';
import type { EventWriter } from '../engine/events/EventWriter.ts';
import { uplinkEventsRecord } from '../engine/events/eventRecords.ts';

/** Dead letters grouped by their uplink, in order. */
function byUplink(letters: readonly DeadLetter[]): DeadLetter[][] {
  const groups = new Map<string, DeadLetter[]>();
  for (const letter of letters) {
    const group = groups.get(letter.envelope.id);
    if (group === undefined) groups.set(letter.envelope.id, [letter]);
    else group.push(letter);
  }
  return [...groups.values()];
}

export interface IntakeOptions {
  log: Pick<Log, 'append'>;
  clock: Clock;
  /** Where refusals are listed per device. */
  rejections: Pick<RejectionStore, 'append'>;
  /** Default `uplinks` and `dead-letters`. */
  topics?: { uplinks: string; deadLetters: string };
  compile?(info: DeviceInfo): CompiledDevice;
  /** Measurement times admitted (with the default compiler). Default DEFAULT_AT_WINDOW. */
  atWindow?: AtWindow;
  /** Bounds of the ingest (maxPending, retryAfterSeconds, …). */
  ingest?: Omit<UplinkIngestOptions, 'log' | 'clock' | 'topic'>;
  logger?: Pick<Logger, 'warn'>;
  /** Told about every dead letter once durable, after the rejections are recorded. */
  onDeadLetters?(letters: readonly DeadLetter[]): void;
  /** Topic `events`: an uplink refused here is there (one record per uplink) before it is answered. */
  events?: EventWriter;
  /** The grounds' states per second (engine/quotas/GroundRates.ts). Default: no limit. */
  quota?: StatesQuota;
}

export interface Intake {
  readonly ingest: UplinkIngest;
  readonly deadLetters: DeadLetterSink;
  readonly admission: UplinkAdmission;
  /** Refuses new uplinks, settles the accepted ones and flushes the dead letters. */
  close(): Promise<void>;
}

export function buildIntake(options: IntakeOptions): Intake {
  const topics = options.topics ?? { uplinks: Topics.uplinks, deadLetters: Topics.deadLetters };
  const ingest = new UplinkIngest({ ...options.ingest, log: options.log, clock: options.clock, topic: topics.uplinks });
  const deadLetters = new DeadLetterSink({
    log: options.log,
    clock: options.clock,
    topic: topics.deadLetters,
    // Refusals are written at once: an edge answers them (HTTP 4xx, MQTT reason code, a webhook's
    // `dropped`) only once recorded, and the log's group commit already batches concurrent ones.
    lingerMs: 0,
    onDeadLetters: async (letters) => {
      await options.rejections.append(rejectionRowsOf(letters));
      const events = options.events;
      if (events?.wanted === true) await Promise.all(byUplink(letters).map((mine) => events.add(uplinkEventsRecord([], mine, undefined, events.now()))));
      options.onDeadLetters?.(letters);
    },
  });
  const admission = new UplinkAdmission({
    ingest,
    deadLetters,
    clock: options.clock,
    compile: options.compile ?? serviceCompiler(options.atWindow),
    ...(options.quota === undefined ? {} : { quota: options.quota }),
    onRecordFailed: (error) => options.logger?.warn('a refused uplink could not be recorded', { error }),
  });
  return {
    ingest,
    deadLetters,
    admission,
    async close() {
      await ingest.close();
      await deadLetters.flush();
    },
  };
}
