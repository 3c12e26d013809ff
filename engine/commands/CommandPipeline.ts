/**
 * Topic `commands` → command actors (DESIGN.md §2). Records are JSON CommandRecords
 * (schemas/commands.ts, read by commandRecords.ts). A record the edge checked carries its decision
 * and is delivered as decided; one without (an application's) is checked against the schema and the
 * device's asset profiles here. Refused ones go to onRejected (the device's rejections, channel
 * `command`) and are not delivered. An asset command for a device on a LoRaWAN network goes to the
 * actors marked `via: 'downlink'`. A command
 * its device's queue has no room for is not refused there: it is listed in the device's commands
 * as `failed` with COMMAND_QUEUE_FULL (CommandActors.refuse), like every command that was valid. A
 * record's offset is committed only once its command is delivered, expired, failed or refused, so
 * a restart replays commands still waiting (at-least-once, like their MQTT delivery). The edges'
 * presence and delivery outcomes on the same topic go to `edges` (docs/scaling.md).
 */
import type { Clock } from '../kernel/clock.ts';
import { toFleetError, type ErrorCode } from '../kernel/errors.ts';
import type { OffsetTracker } from '../consumer/OffsetTracker.ts';
import { TopicConsumer } from '../consumer/TopicConsumer.ts';
import type { DeviceDirectory } from '../ports/directory.ts';
import type { Log, RecordBatch } from '../ports/log.ts';
import { Topics } from '../../schemas/messages.ts';
import type { CommandActors } from '../actors/CommandActors.ts';
import { acceptedCommand, checkRecord, decisionOf, decodeCommandsRecord, type Outcome, type Presence } from './commandRecords.ts';

export interface RejectedCommand {
  deviceId: string;
  commandId?: string;
  code: ErrorCode;
  reason: string;
}

export interface CommandPipelineOptions {
  log: Log;
  actors: CommandActors;
  directory: DeviceDirectory;
  clock: Clock;
  /** Default 'fleetstream-commands'. */
  group?: string;
  /** Default `commands`. */
  topic?: string;
  /** How often offsets are committed, ms. Default 500. */
  commitIntervalMs?: number;
  onRejected?(rejected: RejectedCommand): void;
  /**
   * Where the edges' presence and outcome records go (RelayedTransport: the device's session may be
   * on another process). Absent: they are read past (no other process delivers this one's commands).
   */
  edges?: { presence(deviceId: string, presence: Presence): void; outcome(deviceId: string, outcome: Outcome): void; rollCall(partitions: number[]): void };
}

export class CommandPipeline {
  readonly #o: CommandPipelineOptions;
  readonly #consumer: TopicConsumer;

  constructor(options: CommandPipelineOptions) {
    this.#o = options;
    // A revoke commits what is settled without waiting for the rest: a command may wait an hour
    // for its device, and its next owner reads it again (at least once).
    const { log, clock, group = 'fleetstream-commands', topic = Topics.commands, commitIntervalMs = 500 } = options;
    // Partitions taken over: the edges say again which of their devices' sessions listen (their
    // earlier presence may lie before this owner's committed offset).
    this.#consumer = new TopicConsumer({
      log, clock, group, topic, commitIntervalMs,
      onBatch: (batch, tracker) => this.#onBatch(batch, tracker),
      onAssign: (partitions) => options.edges?.rollCall(partitions),
    });
  }

  async start(): Promise<void> {
    await this.#consumer.start();
  }

  /**
   * Stops reading. What was settled by then is committed as the consumer gives its partitions up
   * (onRevoke, while they are still this consumer's); a command settled later is read again by the
   * next owner (at least once). A commit after the stop would be refused: the partitions are gone.
   */
  async stop(): Promise<void> {
    await this.#consumer.stop();
  }

  async #onBatch(batch: RecordBatch, tracker: OffsetTracker): Promise<void> {
    for (const record of batch.records) {
      tracker.start(record.offset);
      const t = tracker;
      const done = () => t.finish(record.offset);
      const refuse = (code: ErrorCode, reason: string, commandId?: string) => {
        // A place reserved for it by the edge that appended it is free again.
        if (commandId !== undefined) this.#o.actors.release(commandId);
        this.#o.onRejected?.({ deviceId: record.key, commandId, code, reason });
        done();
      };
      const decoded = decodeCommandsRecord(record.value);
      if (!decoded.ok) {
        refuse(decoded.code, decoded.reason, decoded.commandId);
        continue;
      }
      // An edge's word on the device's session or on a delivery: read in the device's order.
      if ('presence' in decoded || 'outcome' in decoded) {
        if ('presence' in decoded) this.#o.edges?.presence(record.key, decoded.presence);
        else this.#o.edges?.outcome(record.key, decoded.outcome);
        done();
        continue;
      }
      const c = decoded.record;
      // Checked by the edge that wrote it: delivered as decided there, with no second look at the device.
      let accepted = decisionOf(c);
      if (accepted === undefined) {
        const device = await this.#o.directory.getDevice(c.deviceId);
        if (device === undefined) {
          refuse('UNKNOWN_DEVICE', `device ${c.deviceId} not found`, c.id);
          continue;
        }
        const ok = checkRecord(device, c);
        if (!ok.ok) { refuse(ok.code, ok.reason, c.id); continue; }
        accepted = ok.value;
      }
      const command = acceptedCommand(c, decoded.at, accepted);
      try {
        this.#o.actors.submit(command, done);
      } catch (error) {
        const failure = toFleetError(error);
        if (failure.code === 'COMMAND_QUEUE_FULL') {
          this.#o.actors.refuse(command, failure);
          done();
        } else {
          refuse(failure.code, failure.message, c.id);
        }
      }
    }
  }
}
