/**
 * Commands of a process. Its command owner (role engine or all): topic `commands` → command actors
 * (one owner per device: the process reading the device's partition) → MQTT (asset commands,
 * through CommandRoutes: this process's edge, or the edge holding the device's session) or the
 * LPWAN network server's downlink API (device commands), every lifecycle change recorded in the
 * command history, refused command records in the device's rejections (channel `command`). Its
 * edge (role edge or all): what the HTTP command routes append to and list.
 */
import { commandEventRecord } from '../engine/events/eventRecords.ts';
import type { Clock } from '../engine/kernel/clock.ts';
import { toFleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { CommandActors } from '../engine/actors/CommandActors.ts';
import { CommandHistoryRecorder } from '../engine/commands/CommandHistoryRecorder.ts';
import { UsageRecorder } from '../engine/usage/UsageRecorder.ts';
import type { UsageRegistry } from '../engine/ports/usageRegistry.ts';
import { CommandPipeline } from '../engine/commands/CommandPipeline.ts';
import { encodeCommandRecord } from '../engine/commands/commandRecords.ts';
import type { RelayedTransport } from '../engine/commands/RelayedTransport.ts';
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
import type { CommandRoutes } from './commandRoutes.ts';
import type { Role } from './Role.ts';
import type { Wiring } from './wiring.ts';

export interface CommandOwnerOptions {
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
  /** Where asset commands reach connected devices (CommandRoutes); absent: none are delivered. */
  transport?: CommandTransport;
  /** The relayed transport among them (Kafka): the edges' presence and outcomes read from `commands` go to it. */
  relayed?: RelayedTransport;
  applications: LpwanApplications;
  /** Every lifecycle change, as it happens (metrics). */
  onCommandChanged?(view: CommandView): void;
  /** Where the grounds' usage goes: each command queued, by ground and day. Absent: not counted. */
  usage?: { registry: Pick<UsageRegistry, 'recordUsage'>; flushIntervalMs?: number };
}

export interface CommandOwner extends Role {
  readonly actors: CommandActors;
}

/**
 * The device (with its actuator profiles) a command names, looked up through the registry lookups
 * the edges use, kept current by registry changes: a registry query per command would be most of a
 * command's way to the device (about 1–2 ms on the embedded registry).
 */
export function commandDirectory(options: Pick<CommandOwnerOptions, 'registry' | 'changes' | 'lookups' | 'clock' | 'cacheTtlMs'>): { directory: DeviceDirectory; close(): void } {
  const shared = options.lookups;
  const lookups = shared ?? new RegistryLookups({ registry: options.registry, clock: options.clock, cacheTtlMs: options.cacheTtlMs ?? 2000 });
  const unsubscribe = shared === undefined ? options.changes?.subscribe((change) => lookups.apply(change)) : undefined;
  return { directory: { getDevice: (deviceId) => lookups.device(deviceId) }, close: () => unsubscribe?.() };
}

export function buildCommandOwner(options: CommandOwnerOptions): CommandOwner {
  const { clock, logger, names } = options;
  const devices = commandDirectory(options);
  // Every lifecycle transition goes to the command history (GET /device/{id}/commands).
  const history = new CommandHistoryRecorder({
    history: options.history,
    clock,
    onDropped: (count, error) => logger.warn('command history transitions dropped', { count, error }),
  });
  const usage = options.usage === undefined ? undefined : new UsageRecorder({
    registry: options.usage.registry,
    clock,
    flushIntervalMs: options.usage.flushIntervalMs,
    onError: (error, retrying) => logger.warn(retrying ? 'grounds\' usage not written yet; retrying' : 'grounds\' usage lost', { error }),
  });
  const actors = new CommandActors({
    clock,
    onChange: (view) => {
      options.onCommandChanged?.(view);
      history.record(view);
      if (view.status === 'queued' && view.attempts === 0) usage?.commandQueued(view.deviceId, view.updatedAt);
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
    edges: options.relayed,
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
    async start() {
      await pipeline.start();
      started = true;
    },
    ready: () => started,
    async stop() {
      await pipeline.stop();
      options.relayed?.close();
      devices.close();
      actors.stop();
      await history.close();
      await usage?.stop();
    },
  };
}

/** The command actors' places in their devices' queues: this process's, or the primary's of an edge worker (calls). */
export interface Reservations {
  reserve(deviceId: string, commandId: string): void | Promise<void>;
  release(commandId: string): boolean | Promise<boolean>;
}

/**
 * What the HTTP command routes of an edge append to and list. `reserve`: the command actors of
 * this process when they read every record of topic `commands` (the local log: one process per
 * data dir); a command whose device's queue is full is then refused before it is appended
 * (COMMAND_QUEUE_FULL, HTTP 429). Otherwise (Kafka: the device's owner may be another process) the
 * edge cannot know: the owner lists it as `failed`.
 */
export function edgeCommands(options: { log: Log; names: Pick<LogNames, 'commands'>; history: Pick<CommandHistory, 'list'>; reserve?: Reservations }): EdgeCommands {
  const { log, names, history, reserve } = options;
  return {
    async append(record, accepted) {
      await reserve?.reserve(record.deviceId, record.id);
      try {
        await log.append(names.commands, [{ key: record.deviceId, value: encodeCommandRecord({ ...record, accepted }) }]);
      } catch (error) {
        await reserve?.release(record.id);
        throw error;
      }
    },
    list: (query) => history.list(query),
  };
}

/** The command owner of a service process, on its ports: every change goes to the metrics and topic `live`. */
export function commandOwnerRole(w: Wiring, routes: Pick<CommandRoutes, 'transport' | 'relayed'>): CommandOwner {
  const { ports } = w;
  return buildCommandOwner({
    log: w.log, registry: ports.registry, lookups: ports.lookups, history: ports.store.commands, rejections: w.rejections,
    clock: w.clock, logger: w.logger, names: ports.names, settings: w.config.commands,
    transport: routes.transport, relayed: routes.relayed, applications: ports.lpwanApplications,
    usage: { registry: ports.registry, flushIntervalMs: w.config.databaseUrl === undefined ? 5000 : 1000 },
    onCommandChanged: (view) => {
      w.metrics.commandChanged(view);
      w.live.command(view);
      // A change is not a record the owner finishes (an expiry is a timer's): its event is appended
      // with retries while the process lives; the command history keeps every change in any case.
      if (w.events.wanted) w.events.add(commandEventRecord(view, w.clock.now())).catch((error: unknown) => w.logger.warn('a command change could not be written to topic events', { error: toFleetError(error), commandId: view.id }));
    },
  });
}
