/**
 * The composition root: configuration → ports → roles (DESIGN.md §2). It only composes the
 * builders — openPorts (which adapter each port gets, the one registry lookup cache and change
 * subscription), engineRole, commandOwnerRole, integrationsRole and edgeRole, joined by the command
 * routes — which the test stacks use too.
 */
import { systemClock, type Clock } from '../engine/kernel/clock.ts';
import type { FleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import type { LiveHub } from '../engine/live/LiveHub.ts';
import type { Log } from '../engine/ports/log.ts';
import type { Registry } from '../engine/ports/registry.ts';
import type { RegistryChanges } from '../engine/ports/registryChanges.ts';
import type { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import type { CommandActors } from '../engine/actors/CommandActors.ts';
import type { Config } from '../schemas/config.ts';
import { engineRole } from './buildEngine.ts';
import { commandOwnerRole, type CommandOwner } from './buildCommands.ts';
import { integrationsRole } from './buildIntegrations.ts';
import { commandRoutes } from './commandRoutes.ts';
import { Closers } from './Closers.ts';
import { edgeRole, type EdgeRole } from './edgeRole.ts';
import { createMetrics, type ServiceMetrics } from './metrics.ts';
import { dataPaths, openPorts, type ServiceStore } from './openPorts.ts';
import { prepareDataDir } from './prepareDataDir.ts';
import { startEmbeddedWorkers, type EmbeddedWorkers } from './embeddedWorkers.ts';
import { WorkersLiveDemand } from './liveDemand.ts';
import type { Role } from './Role.ts';
import { embeddedSql, logStarted, startAdminSocket, startMetricsListener, startProbes, startSqlListener } from './serviceParts.ts';
import { wire } from './wiring.ts';

export { dataPaths, kafkaSettings, logNames, openRegistry } from './openPorts.ts';
export { engineReady } from './buildEngine.ts';

/** What an edge worker runs. */
const ENTRY_POINT = new URL('../bin/fleetstream.ts', import.meta.url).pathname;

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /**
   * The engine stopped for good (a store or log failure it cannot wait out): nothing is stored or
   * committed past it, so the process should stop and be restarted (bin/fleetstream.ts exits ≠ 0).
   */
  onFailed?(error: FleetError): void;
  /** An edge worker of a primary (app/edgeWorkers.ts): it says so when started, and the primary says `fleetstream started`. */
  worker?: boolean;
  /** Edge workers of this embedded service (app/embeddedWorkers.ts); default 1: the edge runs in this process. */
  edgeWorkers?: number;
}

export interface Service {
  readonly config: Config;
  readonly registry: Registry;
  /** This process's registry changes (its own, and every other process's on PostgreSQL). */
  readonly changes: RegistryChanges;
  readonly log: Log;
  readonly store: ServiceStore;
  /** Present when the role runs the engine. */
  readonly pipeline: UplinkPipeline | undefined;
  /** The bound HTTP port when the role runs the edge. */
  readonly httpPort: number | undefined;
  /** The bound MQTT port when the role runs the embedded MQTT edge (none with an external broker). */
  readonly mqttPort: number | undefined;
  /** The reader of topic `live` when the role runs the edge. */
  readonly live: LiveHub | undefined;
  /** Command actors (lifecycles of recent commands) when the role runs the engine (the command owner). */
  readonly commands: CommandActors | undefined;
  readonly adminSocketPath: string | undefined;
  /** Prometheus metrics of this process (GET /metrics). */
  readonly metrics: ServiceMetrics;
  /** The bound port of the metrics listener (GET /metrics on `config.metrics.host`); none with port -1. */
  readonly metricsPort: number | undefined;
  /** The bound port of the read-only SQL listener (ClickHouse HTTP); none unless `config.sql.port` is given. */
  readonly sqlPort: number | undefined;
  /** The port of /health and /ready of a process that runs no HTTP edge (role engine). */
  readonly probesPort: number | undefined;
  /** Adapters open and, when the role runs the engine, partitions assigned and no failure (GET /ready). */
  ready(): boolean;
  /** Stop accepting, finish in-flight work, flush, commit, close every adapter. */
  stop(): Promise<void>;
}

/** Starts a role; it stops in the reverse order of starting, and its readiness is the process's too. */
async function startRole<R extends Role>(role: R, name: string, closers: Closers, roles: Role[]): Promise<R> {
  await role.start();
  closers.add(name, () => role.stop());
  roles.push(role);
  return role;
}

export async function createService(options: ServiceOptions): Promise<Service> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  prepareDataDir(dataPaths(config.dataDir).root, logger);
  const closers = new Closers(logger);
  const metrics = createMetrics();
  const roles: Role[] = [];
  let started = false;
  const ready = () => started && roles.every((role) => role.ready());
  const workerCount = options.edgeWorkers ?? 1;
  let scrape = () => metrics.scrape();
  try {
    // First: a metrics port in use fails the start before any adapter opens.
    const metricsListener = await startMetricsListener(config, { scrape: () => scrape() });
    if (metricsListener !== undefined) closers.add('metrics listener', () => metricsListener.close());
    const ports = await openPorts({ config, clock, logger });
    closers.add('ports', () => ports.close());
    ports.registryChanges.add(metrics.watchRegistryChanges(ports.link));
    const liveDemand = new WorkersLiveDemand();
    const w = wire({ config, clock, logger, ports, metrics, workers: workerCount > 1 ? { primary: true, liveDemand } : undefined });
    closers.add('live publisher', () => w.live.close());
    closers.add('event writer', async () => {
      w.activeIntegrations?.stop();
      await w.events.close();
    });
    let edge: EdgeRole | undefined;
    let owner: CommandOwner | undefined;
    const routes = commandRoutes(w);
    const engine = config.role === 'edge' ? undefined : engineRole(w, { onFailed: options.onFailed, accepted: () => edge?.intake?.ingest.appendedTo });
    const probes = config.role === 'engine' ? await startProbes(w, { alive: () => engine?.pipeline.failure === undefined, ready }) : undefined;
    if (probes !== undefined) closers.add('probes', () => probes.close());
    if (engine !== undefined) {
      // Stopped after the edges (closers run in reverse): first it stores what they accepted.
      await startRole(engine, 'engine', closers, roles);
      owner = await startRole(commandOwnerRole(w, routes), 'command owner', closers, roles);
      await startRole(integrationsRole(w, { engine: engine.pipeline }), 'integrations', closers, roles);
    }
    let workers: EmbeddedWorkers | undefined;
    if (workerCount > 1) {
      const started = workers = await startEmbeddedWorkers({ config, count: workerCount, ports, reservations: owner?.actors, liveDemand, metrics, logger, exec: ENTRY_POINT });
      closers.add('edge workers', () => started.stop());
      scrape = () => started.scrape();
    } else if (config.role !== 'engine') {
      edge = await startRole(edgeRole(w, { ready, routes, reserve: w.usesKafka ? undefined : owner?.actors }), 'edge', closers, roles);
    }
    if (edge === undefined) metrics.watchLive({ publisher: w.live });
    const httpPort = edge?.httpPort ?? workers?.httpPort;
    const mqttPort = edge?.mqttPort ?? workers?.mqttPort;
    // Analysts' SQL runs in the process holding chDB's directory (this one), read-only.
    const sql = embeddedSql(config);
    const sqlListener = await startSqlListener(config, sql);
    if (sqlListener !== undefined) closers.add('SQL listener', () => sqlListener.close());
    const admin = await startAdminSocket(w, ports.registry, { httpPort, mqttPort }, sql);
    if (admin !== undefined) closers.add('admin', () => admin.close());
    logStarted(logger, config, options.worker === true ? 'edge worker started' : 'fleetstream started', {
      root: ports.paths.root, httpPort, probesPort: probes?.port, metricsPort: metricsListener?.port, mqttPort, sqlPort: sqlListener?.port, metricsToken: w.metricsToken !== undefined,
    });
    started = true;
    let stopping: Promise<void> | undefined;
    return {
      metrics, metricsPort: metricsListener?.port, probesPort: probes?.port, sqlPort: sqlListener?.port, ready, config,
      registry: ports.registry, changes: ports.changes, log: ports.log, store: ports.store,
      pipeline: engine?.pipeline, httpPort, mqttPort, commands: owner?.actors, live: edge?.hub,
      adminSocketPath: admin?.path,
      stop: () => (stopping ??= closers.closeAll().then(() => logger.info('fleetstream stopped'))),
    };
  } catch (error) {
    await closers.closeAll();
    throw error;
  }
}
