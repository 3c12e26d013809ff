/**
 * The command side of an edge process: topic `commands` → command actors → MQTT (asset commands)
 * or the LPWAN network server's downlink API (device commands), every lifecycle change recorded in
 * the command history, refused command records in the device's rejections (channel `command`).
 */
import type { Clock } from '../engine/kernel/clock.ts';
import { toFleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { CommandActors } from '../engine/commands/CommandActors.ts';
import { CommandHistoryRecorder } from '../engine/commands/CommandHistoryRecorder.ts';
import { CommandPipeline } from '../engine/commands/CommandPipeline.ts';
import { encodeCommandRecord } from '../engine/commands/commandRecords.ts';
import type { CommandHistory } from '../engine/ports/commandHistory.ts';
import type { CommandTransport } from '../engine/ports/commandTransport.ts';
import type { Log } from '../engine/ports/log.ts';
import type { LpwanApplications } from '../engine/ports/lpwanApplications.ts';
import type { DeviceDirectory } from '../engine/ports/directory.ts';
import type { Registry } from '../engine/ports/registry.ts';
import type { RegistryChanges } from '../engine/ports/registryChanges.ts';
import { RegistryLookups } from '../engine/access/RegistryLookups.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { EdgeCommands } from '../adapters/http/routes/commands/commandRoutes.ts';
import { TtsDownlink } from '../adapters/lpwan/TtsDownlink.ts';
import type { CommandView } from '../schemas/commands.ts';
import type { Config } from '../schemas/config.ts';
import type { LogNames } from './openPorts.ts';
import type { Role } from './Role.ts';

export interface CommandsOptions {
  log: Log;
  registry: Registry;
  /** Registry changes, which keep the devices looked up per command current. */
  changes?: Pick<RegistryChanges, 'subscribe'>;
  /** How long a device looked up for a command is reused, ms (a change drops it at once). Default 2000. */
  cacheTtlMs?: number;
  /** The process's registry lookups, kept current by their owner (then `changes` is not subscribed). Absent: the commands' own. */
  lookups?: RegistryLookups;
  history: CommandHistory;
  rejections: Pick<RejectionStore, 'append'>;
  clock: Clock;
  logger: Logger;
  names: Pick<LogNames, 'commands' | 'commandsGroup'>;
  settings: Config['commands'];
  /** Where asset commands reach connected devices (the MQTT edge); absent: none are delivered. */
  transport?: CommandTransport;
  applications: LpwanApplications;
  /**
   * This process's command actors read every record of topic `commands` (the local log: one
   * process per data dir). A command whose device's queue is full is then refused before it is
   * appended (COMMAND_QUEUE_FULL, HTTP 429). Otherwise (Kafka: the edge consuming the device's
   * partition may be another process) the edge cannot know: the reader lists it as `failed`.
   */
  readsEveryCommand?: boolean;
  /** Every lifecycle change, as it happens (metrics). */
  onCommandChanged?(view: CommandView): void;
}

export interface Commands extends Role {
  readonly actors: CommandActors;
  /** What the HTTP command routes append to and read from. */
  readonly edge: EdgeCommands;
}

/**
 * The device (with its actuator profiles) a command names, looked up through the registry lookups
 * the edges use, kept current by registry changes: a registry query per command would be most of a
 * command's way to the device (about 1–2 ms on the embedded registry).
 */
export function commandDirectory(options: Pick<CommandsOptions, 'registry' | 'changes' | 'lookups' | 'clock' | 'cacheTtlMs'>): { directory: DeviceDirectory; close(): void } {
  const shared = options.lookups;
  const lookups = shared ?? new RegistryLookups({ registry: options.registry, clock: options.clock, cacheTtlMs: options.cacheTtlMs ?? 2000 });
  const unsubscribe = shared === undefined ? options.changes?.subscribe((change) => lookups.apply(change)) : undefined;
  return { directory: { getDevice: (deviceId) => lookups.device(deviceId) }, close: () => unsubscribe?.() };
}

export function buildCommands(options: CommandsOptions): Commands {
  const { clock, logger, names } = options;
  const devices = commandDirectory(options);
  // Every lifecycle transition goes to the command history (GET /device/{id}/commands).
  const history = new CommandHistoryRecorder({
    history: options.history,
    clock,
    onDropped: (count, error) => logger.warn('command history transitions dropped', { count, error }),
  });
  const actors = new CommandActors({
    clock,
    onChange: (view) => {
      options.onCommandChanged?.(view);
      history.record(view);
    },
    transport: options.transport,
    downlink: new TtsDownlink({ devices: options.registry, applications: options.applications, clock }),
    expiryMs: options.settings.expiryMs,
    maxQueuePerDevice: options.settings.maxQueuePerDevice,
  });
  const pipeline = new CommandPipeline({
    log: options.log,
    actors,
    directory: devices.directory,
    clock,
    topic: names.commands,
    group: names.commandsGroup,
    // A refused command record (not an actuator, value off profile, …) shows in the device's
    // rejections, apart from its uplink refusals (GET /device/{id}/rejections?channel=command).
    onRejected: (rejected) => {
      options.rejections.append([{
        deviceId: rejected.deviceId,
        rejectedAt: clock.now(),
        code: rejected.code,
        reason: rejected.reason,
        asset: '',
        uplinkId: rejected.commandId ?? '',
        channel: 'command',
      }]).catch((error: unknown) => logger.warn('recording a refused command failed', { error: toFleetError(error) }));
    },
  });
  let started = false;
  return {
    actors,
    edge: {
      async append(record, accepted) {
        if (options.readsEveryCommand === true) actors.reserve(record.deviceId, record.id);
        try {
          await options.log.append(names.commands, [{ key: record.deviceId, value: encodeCommandRecord({ ...record, accepted }) }]);
        } catch (error) {
          actors.release(record.id);
          throw error;
        }
      },
      list: (query) => options.history.list(query),
    },
    async start() {
      await pipeline.start();
      started = true;
    },
    ready: () => started,
    async stop() {
      await pipeline.stop();
      devices.close();
      actors.stop();
      await history.close();
    },
  };
}
