/**
 * Every port gets its embedded adapter unless the configuration names a server for it (DESIGN.md
 * §2): the registry (PGlite | PostgreSQL), the log (local log | Kafka) and the state store (chDB |
 * ClickHouse server). Nothing else in the project chooses adapters. The registry comes with the
 * registry changes of its kind (in-process for PGlite, LISTEN/NOTIFY for PostgreSQL), and with the
 * process's one cache of registry lookups, kept current by its one subscription to those changes:
 * the HTTP edge, both MQTT modes, commands, live and LPWAN read through it.
 */
import { join, resolve } from 'node:path';
import { systemClock, type Clock } from '../engine/kernel/clock.ts';
import { randomBase62 } from '../engine/kernel/ids.ts';
import type { Log } from '../engine/ports/log.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import type { Registry } from '../engine/ports/registry.ts';
import type { RegistryChanges } from '../engine/ports/registryChanges.ts';
import { publishingRegistry } from '../engine/access/publishingRegistry.ts';
import { InProcessRegistryChanges } from '../adapters/registry-changes/InProcessRegistryChanges.ts';
import { PostgresRegistryChanges } from '../adapters/registry-changes/PostgresRegistryChanges.ts';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { createClickHouseStore } from '../adapters/clickhouse/createClickHouseStore.ts';
import { createKafkaLog } from '../adapters/kafka/index.ts';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { createPgliteRegistry } from '../adapters/pglite/createPgliteRegistry.ts';
import { createPostgresRegistry } from '../adapters/postgres/createPostgresRegistry.ts';
import { RegistryLookups } from '../engine/access/RegistryLookups.ts';
import type { StaticLpwanApplications } from '../engine/lpwan/StaticLpwanApplications.ts';
import { Topics } from '../schemas/messages.ts';
import type { StateExport } from '../engine/ports/stateExport.ts';
import type { Config } from '../schemas/config.ts';
import { Closers } from './Closers.ts';
import { loadLpwanApplications } from './loadLpwanApplications.ts';
import { RegistryChangeFanOut } from './RegistryChangeFanOut.ts';

/** Where the embedded adapters keep their files. */
export function dataPaths(dataDir: string) {
  const root = resolve(dataDir);
  return { root, log: join(root, 'log'), chdb: join(root, 'chdb'), registry: join(root, 'registry'), adminSocket: join(root, 'admin.sock') };
}

/** Topic and consumer group names, each behind the configured prefix. */
export function logNames(config: Pick<Config, 'topicPrefix'>) {
  const prefix = config.topicPrefix ?? '';
  return {
    uplinks: `${prefix}${Topics.uplinks}`,
    commands: `${prefix}${Topics.commands}`,
    deadLetters: `${prefix}${Topics.deadLetters}`,
    live: `${prefix}${Topics.live}`,
    commandDeliveries: `${prefix}${Topics.commandDeliveries}`,
    events: `${prefix}${Topics.events}`,
    engineGroup: `${prefix}fleetstream-engine`,
    commandsGroup: `${prefix}fleetstream-commands`,
    /** Each edge reads all of `live`: with Kafka, every edge process adds its own suffix to this group. */
    liveGroup: `${prefix}fleetstream-live`,
    /** Edges read `command-deliveries`: each its own group behind this name (embedded MQTT edge), or this one group (external broker). */
    deliveriesGroup: `${prefix}fleetstream-deliveries`,
    /** Each integration's deliveries read `events` with a group of their own: this, then `fleetstream-integration-<id>`. */
    integrationGroupPrefix: prefix,
  };
}
export type LogNames = ReturnType<typeof logNames>;

/** Kafka client settings from the configuration; heartbeats at most a third of the session apart. */
export function kafkaSettings(kafka: Config['kafka']): { appendTimeoutMs?: number; sessionTimeoutMs?: number; heartbeatIntervalMs?: number; throughputWaitMs?: number } {
  const out: { appendTimeoutMs?: number; sessionTimeoutMs?: number; heartbeatIntervalMs?: number; throughputWaitMs?: number } = {};
  if (kafka.appendTimeoutMs !== undefined) out.appendTimeoutMs = kafka.appendTimeoutMs;
  if (kafka.throughputWaitMs !== undefined) out.throughputWaitMs = kafka.throughputWaitMs;
  if (kafka.sessionTimeoutMs !== undefined) {
    out.sessionTimeoutMs = kafka.sessionTimeoutMs;
    out.heartbeatIntervalMs = Math.min(3000, Math.floor(kafka.sessionTimeoutMs / 3));
  }
  return out;
}

export interface OpenedRegistry {
  /** Publishes every change it makes on `changes` (engine/access/publishingRegistry.ts). */
  registry: Registry;
  /** This process's registry changes: its own and, for PostgreSQL, every other process's. */
  changes: RegistryChanges;
  /** How the changes reach other processes (PostgreSQL); undefined in-process. */
  link: PostgresRegistryChanges | undefined;
  /** Closes the registry, then the changes (those it opened: not a caller's, GivenRegistry). */
  close(): Promise<void>;
}

/**
 * A registry and registry changes a caller opened already and keeps (several stacks of one test
 * process on one in-memory PGlite, or PostgreSQL in a schema of their own): used as they are, never
 * closed by what opens around them.
 */
export interface GivenRegistry {
  /** The registry as its adapter opened it, not publishing: it is made to publish on the changes. */
  registry?: Registry;
  /** The changes it publishes on and the process hears (default: those of the configuration's kind). */
  changes?: RegistryChanges;
}

/**
 * The registry of the configuration with its changes. `create: false` refuses (NOT_FOUND) to start
 * an embedded registry where none exists yet: the admin CLI's guard against a mistyped or missing
 * data dir. What `given` holds is used instead of opening it, and is not closed by `close`.
 */
export async function openRegistry(
  config: Pick<Config, 'databaseUrl' | 'databaseSchema' | 'dataDir'> & Partial<Pick<Config, 'quotas'>>,
  clock: Clock = systemClock,
  options: { create?: boolean; logger?: Logger; given?: GivenRegistry } = {},
): Promise<OpenedRegistry> {
  const given = options.given ?? {};
  // One origin for the process's connections and its changes feed: it skips what it announced.
  const origin = randomBase62(16);
  const raw = given.registry ?? (config.databaseUrl
    ? await createPostgresRegistry({ url: config.databaseUrl, schema: config.databaseSchema, clock, origin, quotaDefaults: config.quotas })
    : await createPgliteRegistry({ dir: dataPaths(config.dataDir).registry, clock, create: options.create ?? true, quotaDefaults: config.quotas }));
  const closeRaw = given.registry === undefined ? () => raw.close() : async () => undefined;
  let changes: RegistryChanges;
  try {
    changes = given.changes ?? await openRegistryChanges(config, clock, origin, options.logger);
  } catch (error) {
    await closeRaw();
    throw error;
  }
  const closeChanges = given.changes === undefined ? () => changes.close() : async () => undefined;
  return {
    registry: publishingRegistry(raw, changes),
    changes,
    link: changes instanceof PostgresRegistryChanges ? changes : undefined,
    async close() {
      try {
        await closeRaw();
      } finally {
        await closeChanges();
      }
    },
  };
}

/** The registry changes of the configuration's kind. */
function openRegistryChanges(config: Pick<Config, 'databaseUrl' | 'databaseSchema'>, clock: Clock, origin: string, logger: Logger | undefined): Promise<RegistryChanges> | RegistryChanges {
  // PGlite allows one process per data dir, so every edge and engine on it lives in this process.
  return config.databaseUrl
    ? PostgresRegistryChanges.open({ url: config.databaseUrl, schema: config.databaseSchema, clock, logger, origin, announcedByDatabase: true })
    : new InProcessRegistryChanges((error) => logger?.warn('registry changes: a listener failed', { error }));
}

/** The log with the service's topics created (existing topics keep their partitions). */
export async function openLog(config: Config, clock: Clock): Promise<Log> {
  const log: Log = config.kafkaBrokers && config.kafkaBrokers.length > 0
    ? createKafkaLog({ brokers: config.kafkaBrokers, ...kafkaSettings(config.kafka) })
    : createLocalLog({ dir: dataPaths(config.dataDir).log, clock });
  const names = logNames(config);
  try {
    await log.ensureTopics([
      ...[names.uplinks, names.commands, names.deadLetters, names.live, names.commandDeliveries].map((name) => ({ name, partitions: config.engine.partitions })),
      { name: names.events, partitions: config.engine.partitions, retentionMs: (config.eventsRetentionHours ?? DEFAULT_EVENTS_RETENTION_HOURS) * 3_600_000 },
    ]);
  } catch (error) {
    await log.close();
    throw error;
  }
  return log;
}

/** The state store (with its rejections and command history tables), initialised. */
export async function openStore(config: Config, logger?: Logger, clock: Clock = systemClock) {
  const database = config.clickhouseDatabase;
  const rollups = config.stateRollups !== 'off';
  // Edges append no states: they read the rollups that the engines keep.
  const keepRollups = config.role !== 'edge';
  // A failed refresh is tried again at the next one; said, so that rollups stuck behind are seen.
  const onRollupError = (error: unknown) => logger?.warn('state rollups: refresh failed, retried at the next one', { error: String(error) });
  const store = config.clickhouseUrl
    ? createClickHouseStore({ url: config.clickhouseUrl, database, rollups, keepRollups, onRollupError, clock })
    : createChdbStore({ dir: dataPaths(config.dataDir).chdb, database, rollups, keepRollups, onRollupError, clock });
  try {
    await store.init();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
export type ServiceStore = Awaited<ReturnType<typeof openStore>>;

/**
 * How long registry answers are reused (docs/operations.md, "Registry changes"). The setting when
 * given; otherwise 10 minutes. Every change reaches the caches it touches at once: on the embedded
 * registry it is made in this process; on PostgreSQL the transaction that makes it announces it
 * (migration 4), and a process whose LISTEN connection was cut drops everything once back. The TTL
 * only ages out devices that went quiet, and bounds a connection that died without a word.
 */
export function registryCacheTtlMs(config: Pick<Config, 'registryCacheTtlMs'>): number {
  return config.registryCacheTtlMs ?? REGISTRY_CACHE_TTL_MS;
}
const REGISTRY_CACHE_TTL_MS = 600_000;
/** Topic `events`: 7 days, as Kafka keeps a topic by default (config eventsRetentionHours). */
const DEFAULT_EVENTS_RETENTION_HOURS = 168;

/** Every adapter of a process, open. */
export interface Ports {
  readonly log: Log;
  readonly store: ServiceStore;
  /**
   * State exports (engine/ports/stateExport.ts): the store's where this process holds it; in an
   * embedded edge worker the primary's, streamed from its loopback relay (app/exportRelay.ts), as
   * the cluster channel carries calls, not streams. Absent: exports are answered 503 EXPORT_UNAVAILABLE.
   */
  readonly exports?: StateExport;
  /** Publishes every change it makes on `changes`. */
  readonly registry: Registry;
  /** This process's registry changes (its own, and every other process's on PostgreSQL). */
  readonly changes: RegistryChanges;
  /** How the changes reach other processes (PostgreSQL); undefined in-process. */
  readonly link: PostgresRegistryChanges | undefined;
  /** The process's one cache of registry lookups (tokens, devices, assets, memberships). */
  readonly lookups: RegistryLookups;
  /** The process's one subscription to `changes`: what else reacts to a change is added here. */
  readonly registryChanges: RegistryChangeFanOut;
  /** How long `lookups` reuses an answer, ms. */
  readonly cacheTtlMs: number;
  readonly lpwanApplications: StaticLpwanApplications;
  readonly names: LogNames;
  readonly paths: ReturnType<typeof dataPaths>;
  /** Closes the registry, the store and the log, but none of those the caller gave (GivenPorts). */
  close(): Promise<void>;
}

/**
 * Ports a caller opened already and keeps: openPorts uses them instead of opening the
 * configuration's, and the opened ports' close leaves them open. The service passes none.
 */
export interface GivenPorts extends GivenRegistry {
  /** An initialised state store (one chDB store shared by the stacks of a test process: chDB allows one data dir per process). */
  store?: ServiceStore;
}

export interface OpenPortsOptions {
  config: Config;
  /** The process's clock: the log, the registry's changes and lookups, the state store (a SimulatedClock in tests). */
  clock: Clock;
  logger: Logger;
  given?: GivenPorts;
}

/**
 * Opens the log, the store and the registry of the configuration side by side (a new embedded
 * registry is created in a worker thread, seconds, while this thread opens the log and the store);
 * whatever opened is closed again when another fails.
 */
export async function openPorts(options: OpenPortsOptions): Promise<Ports> {
  const { config, clock, logger } = options;
  const given = options.given ?? {};
  const lpwanApplications = loadLpwanApplications(config.lpwanApplicationsFile);
  const closers = new Closers(logger);
  const registryOpening = openRegistry(config, clock, { logger, given });
  let log: Log;
  let store: ServiceStore;
  try {
    log = await openLog(config, clock);
    closers.add('log', () => log.close());
    if (given.store === undefined) {
      const opened = store = await openStore(config, logger, clock);
      closers.add('store', () => opened.close());
    } else {
      store = given.store;
    }
  } catch (error) {
    await registryOpening.then((opened) => opened.close(), () => undefined);
    await closers.closeAll();
    throw error;
  }
  try {
    const opened = await registryOpening;
    closers.add('registry', () => opened.close());
    const cacheTtlMs = registryCacheTtlMs(config);
    const lookups = new RegistryLookups({ registry: opened.registry, clock, cacheTtlMs });
    const registryChanges = new RegistryChangeFanOut({ changes: opened.changes, lookups, logger });
    closers.add('registry changes', () => registryChanges.close());
    return {
      log, store, exports: store, registry: opened.registry, changes: opened.changes, link: opened.link, lookups, registryChanges, cacheTtlMs,
      lpwanApplications, names: logNames(config), paths: dataPaths(config.dataDir),
      close: () => closers.closeAll(),
    };
  } catch (error) {
    await closers.closeAll();
    throw error;
  }
}
