/**
 * Topic `commands` → command actors (DESIGN.md §2). Records are JSON CommandRecords
 * (schemas/commands.ts), validated against the schema and the device's asset profiles; refused ones
 * go to onRejected (the device's rejections, channel `command`) and are not delivered. An asset
 * command for a device on a LoRaWAN network goes to the actors marked `via: 'downlink'`. A command
 * its device's queue has no room for is not refused there: it is listed in the device's commands
 * as `failed` with COMMAND_QUEUE_FULL (CommandActors.refuse), like every command that was valid. A
 * record's offset is committed only once its command is delivered, expired, failed or refused, so
 * a restart replays commands still waiting (at-least-once, like their MQTT delivery).
 */
import { Compile } from 'typebox/compile';
import type { Clock } from '../kernel/clock.ts';
import { toFleetError, type ErrorCode } from '../kernel/errors.ts';
import type { OffsetTracker } from '../consumer/OffsetTracker.ts';
import { TopicConsumer } from '../consumer/TopicConsumer.ts';
import type { DeviceDirectory } from '../ports/directory.ts';
import type { Log, RecordBatch } from '../ports/log.ts';
import { CommandRecord } from '../../schemas/commands.ts';
import { Topics } from '../../schemas/messages.ts';
import type { AcceptedCommand, CommandActors } from './CommandActors.ts';
import { lpwanNetworkOf } from './lpwanNetworkOf.ts';
import { validateAssetCommand, validateDeviceCommand } from './validateCommand.ts';

const checkRecord = Compile(CommandRecord);
const utf8 = new TextDecoder('utf-8', { fatal: true });

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
}

export class CommandPipeline {
  readonly #o: CommandPipelineOptions;
  readonly #consumer: TopicConsumer;

  constructor(options: CommandPipelineOptions) {
    this.#o = options;
    // A revoke commits what is settled without waiting for the rest: a command may wait an hour
    // for its device, and its next owner reads it again (at least once).
    this.#consumer = new TopicConsumer({
      log: options.log,
      clock: options.clock,
      group: options.group ?? 'fleetstream-commands',
      topic: options.topic ?? Topics.commands,
      commitIntervalMs: options.commitIntervalMs ?? 500,
      onBatch: (batch, tracker) => this.#onBatch(batch, tracker),
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
      let parsed: unknown;
      try {
        parsed = JSON.parse(utf8.decode(record.value));
      } catch {
        refuse('MALFORMED_JSON', 'a command record is UTF-8 JSON');
        continue;
      }
      if (!checkRecord.Check(parsed)) {
        const first = checkRecord.Errors(parsed)[0];
        refuse('VALIDATION_FAILED', `not a command record: ${first ? `${first.instancePath || '/'} ${first.message}` : 'invalid'}`);
        continue;
      }
      const c = parsed;
      if ((c.asset === undefined) === (c.assets === undefined)) {
        refuse('VALIDATION_FAILED', 'a command names either `asset` (with `value`) or `assets`', c.id);
        continue;
      }
      const at = c.at ?? new Date(c.issuedAt).toISOString();
      if (Number.isNaN(Date.parse(at))) {
        refuse('INVALID_AT', '`at` must be an ISO 8601 timestamp', c.id);
        continue;
      }
      const device = await this.#o.directory.getDevice(c.deviceId);
      if (device === undefined) {
        refuse('UNKNOWN_DEVICE', `device ${c.deviceId} not found`, c.id);
        continue;
      }
      const base = { id: c.id, deviceId: c.deviceId, at, issuer: c.issuer, expiresAt: c.expiresAt };
      let command: AcceptedCommand;
      if (c.asset !== undefined) {
        const ok = validateAssetCommand(device, c.asset, c.value);
        if (!ok.ok) { refuse(ok.code, ok.reason, c.id); continue; }
        // spec §4.4: a device on a LoRaWAN network takes commands only through its network.
        const via = lpwanNetworkOf(device) === undefined ? 'mqtt' : 'downlink';
        command = { ...base, kind: 'asset', asset: { id: ok.value.id, name: ok.value.name }, value: c.value, via };
      } else {
        const ok = validateDeviceCommand(device, c.assets!);
        if (!ok.ok) { refuse(ok.code, ok.reason, c.id); continue; }
        command = { ...base, kind: 'device', assets: c.assets! };
      }
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
