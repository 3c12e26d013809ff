/**
 * The ports of an embedded edge worker (app/edgeWorkers.ts): the primary holds the local log, chDB
 * and PGlite (one process per data dir), and serves them to its workers over a WorkerChannel.
 *
 * - registry and store: every method a call to the primary's (its registry publishes its changes);
 * - registry changes: the primary's, each sent to every worker before the answer to the call that
 *   made it, so a worker's caches know a change before the request that made it is answered, as in
 *   one process;
 * - log: appends and reads of the primary's log; a consumer is the primary's, its batches handed to
 *   the worker and finished there;
 * - the command actors' reservations (COMMAND_QUEUE_FULL before the append).
 *
 * Each worker keeps its own lookup cache over them, as a process does.
 */
import type { Clock } from '../engine/kernel/clock.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { RegistryLookups } from '../engine/access/RegistryLookups.ts';
import type { CommandActors } from '../engine/actors/CommandActors.ts';
import type { Consumer, ConsumerOptions, Log } from '../engine/ports/log.ts';
import type { Registry } from '../engine/ports/registry.ts';
import type { RegistryChange } from '../engine/ports/registryChanges.ts';
import { InProcessRegistryChanges } from '../adapters/registry-changes/InProcessRegistryChanges.ts';
import type { Config } from '../schemas/config.ts';
import { loadLpwanApplications } from './loadLpwanApplications.ts';
import { dataPaths, logNames, registryCacheTtlMs, type Ports, type ServiceStore } from './openPorts.ts';
import { RegistryChangeFanOut } from './RegistryChangeFanOut.ts';
import type { WorkerChannel } from './workerChannel.ts';
import { remoteExports, type ExportRelayAddress } from './exportRelay.ts';
import { FleetError } from '../engine/kernel/errors.ts';

type Reservations = Pick<CommandActors, 'reserve' | 'release'>;

/** In the primary: serves `ports` (and the command actors' reservations) to one worker. Returns its closer. */
export function servePorts(channel: WorkerChannel, ports: Ports, reservations: Reservations | undefined, exportRelay?: ExportRelayAddress): () => Promise<void> {
  channel.serve('registry', ports.registry);
  // Exports stream through the primary's loopback listener (app/exportRelay.ts): only its address crosses here.
  channel.serve('exportRelay', { address: () => exportRelay ?? Promise.reject(new FleetError('EXPORT_UNAVAILABLE', 'the main process serves no exports')) });
  channel.serve('store', ports.store);
  channel.serve('commands', reservations ?? { reserve: () => undefined, release: () => false });
  const consumers = new Map<number, Consumer>();
  channel.serve('log', {
    append: (topic: string, records: Parameters<Log['append']>[1]) => ports.log.append(topic, records),
    partitionCount: (topic: string) => ports.log.partitionCount(topic),
    committed: (group: string, topic: string, partition: number) => ports.log.committed(group, topic, partition),
    endOffsets: (topic: string) => ports.log.endOffsets(topic),
    startOffsets: (topic: string) => ports.log.startOffsets(topic),
    deleteGroup: (group: string) => ports.log.deleteGroup(group),
    // Topics are the primary's to create.
    ensureTopics: async () => undefined,
    async consumerStart(id: number, options: Omit<ConsumerOptions, 'onBatch' | 'onRevoke' | 'onAssign'>) {
      const at = `consumer.${id}`;
      const consumer = ports.log.consumer({
        ...options,
        onBatch: async (batch) => { await channel.call(at, ['onBatch'], [batch]); },
        onRevoke: async (partitions) => { await channel.call(at, ['onRevoke'], [partitions]); },
        onAssign: (partitions) => void channel.call(at, ['onAssign'], [partitions]).catch(() => undefined),
      });
      consumers.set(id, consumer);
      await consumer.start();
    },
    consumerCommit: (id: number, offsets: Parameters<Consumer['commit']>[0]) => consumers.get(id)?.commit(offsets),
    consumerPause: (id: number, partitions: Parameters<Consumer['pause']>[0]) => consumers.get(id)?.pause(partitions),
    consumerResume: (id: number, partitions: Parameters<Consumer['resume']>[0]) => consumers.get(id)?.resume(partitions),
    consumerSeek: (id: number, positions: Parameters<Consumer['seek']>[0]) => consumers.get(id)?.seek(positions),
    async consumerStop(id: number) {
      const consumer = consumers.get(id);
      consumers.delete(id);
      await consumer?.stop();
    },
  });
  const unsubscribe = ports.registryChanges.add((change) => channel.note('registry-change', change));
  return async () => {
    unsubscribe();
    // The worker is gone: its consumers leave their groups (what they did not finish is read again).
    await Promise.all([...consumers.values()].map((c) => c.stop().catch(() => undefined)));
    consumers.clear();
  };
}

/** The log of the primary, seen from a worker. */
function remoteLog(channel: WorkerChannel): Log {
  const calls = channel.proxy<Record<string, (...args: unknown[]) => Promise<unknown>>>('log');
  let nextConsumer = 1;
  return {
    append: (topic, records) => calls.append(topic, records) as ReturnType<Log['append']>,
    partitionCount: (topic) => calls.partitionCount(topic) as Promise<number>,
    committed: (group, topic, partition) => calls.committed(group, topic, partition) as Promise<number>,
    endOffsets: (topic) => calls.endOffsets(topic) as Promise<number[]>,
    startOffsets: (topic) => calls.startOffsets(topic) as Promise<number[]>,
    deleteGroup: (group) => calls.deleteGroup(group) as Promise<void>,
    ensureTopics: async () => undefined,
    consumer(options) {
      const id = nextConsumer++;
      const { onBatch, onRevoke, onAssign, ...settings } = options;
      const stopServing = channel.handle(`consumer.${id}`, (path, args) => {
        if (path[0] === 'onBatch') return onBatch(args[0] as never);
        if (path[0] === 'onRevoke') return onRevoke?.(args[0] as never);
        return onAssign?.(args[0] as never);
      });
      return {
        start: () => calls.consumerStart(id, settings) as Promise<void>,
        commit: (offsets) => calls.consumerCommit(id, offsets) as Promise<void>,
        pause: (partitions) => void calls.consumerPause(id, partitions).catch(() => undefined),
        resume: (partitions) => void calls.consumerResume(id, partitions).catch(() => undefined),
        // In the order of the calls made after it (one channel): a seek then a resume cross in that order.
        seek: (positions) => void calls.consumerSeek(id, positions).catch(() => undefined),
        async stop() {
          try {
            await calls.consumerStop(id);
          } finally {
            stopServing();
          }
        },
      };
    },
    // The log is the primary's to close.
    close: async () => undefined,
  };
}

/** In an embedded edge worker: its ports, served by the primary over `channel`. */
export function remotePorts(options: { channel: WorkerChannel; config: Config; clock: Clock; logger: Logger }): Ports & { readonly reservations: Reservations } {
  const { channel, config, clock, logger } = options;
  const registry = channel.proxy<Registry>('registry');
  const changes = new InProcessRegistryChanges((error) => logger.warn('a registry change listener failed', { error }));
  channel.onNote('registry-change', (change) => void changes.publish(change as RegistryChange).catch(() => undefined));
  const cacheTtlMs = registryCacheTtlMs(config);
  const lookups = new RegistryLookups({ registry, clock, cacheTtlMs });
  const registryChanges = new RegistryChangeFanOut({ changes, lookups, logger });
  const commands = channel.proxy<{ reserve(deviceId: string, commandId: string): Promise<void>; release(commandId: string): Promise<boolean> }>('commands');
  return {
    log: remoteLog(channel),
    store: channel.proxy<ServiceStore>('store'),
    exports: remoteExports(() => channel.proxy<{ address(): Promise<ExportRelayAddress> }>('exportRelay').address()),
    registry, changes, link: undefined, lookups, registryChanges, cacheTtlMs,
    lpwanApplications: loadLpwanApplications(config.lpwanApplicationsFile),
    names: logNames(config),
    paths: dataPaths(config.dataDir),
    reservations: commands as unknown as Reservations,
    async close() {
      registryChanges.close();
      await changes.close();
      channel.close();
    },
  };
}
