/**
 * The composition root: configuration → adapters → engine and edges (DESIGN.md §2). It only
 * composes the builders — openAdapters (which adapter each port gets), buildEngine, buildIntake,
 * buildCommands, buildEdges — which the test stacks use too.
 */
import { systemClock, type Clock } from '../engine/kernel/clock.ts';
import { toFleetError, type FleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { randomUUID } from 'node:crypto';
import { LiveHub } from '../engine/live/LiveHub.ts';
import { LivePublisher } from '../engine/live/LivePublisher.ts';
import { RegistryLookups } from '../engine/access/RegistryLookups.ts';
import type { Log } from '../engine/ports/log.ts';
import { registryDirectory, type Registry } from '../engine/ports/registry.ts';
import type { RegistryChanges } from '../engine/ports/registryChanges.ts';
import type { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import type { CommandActors } from '../engine/commands/CommandActors.ts';
import type { Config } from '../schemas/config.ts';
import { serveAdminSocket } from './adminSocket.ts';
import { prepareDataDir } from './prepareDataDir.ts';
import { listening } from './portInUse.ts';
import { buildCommands } from './buildCommands.ts';
import { buildEngine } from './buildEngine.ts';
import { buildIntake, type Intake } from './buildIntake.ts';
import { atWindowOf } from './deviceCompiler.ts';
import { registryCacheTtlMs, serveHttpEdge, startMqttEdge } from './buildEdges.ts';
import { loadLpwanApplications } from './loadLpwanApplications.ts';
import { createMetrics, type ServiceMetrics } from './metrics.ts';
import { serveMetrics } from './serveMetrics.ts';
import { serveProbes } from './serveProbes.ts';
import { httpBaseOf } from './startupLines.ts';
import { dataPaths, logNames, openLog, openRegistry, openStore, type ServiceStore } from './openAdapters.ts';

export { dataPaths, kafkaTimeouts, logNames, openRegistry } from './openAdapters.ts';

/** How long a stopping process that runs edge and engine waits for the engine to store what its edges accepted. */
const DRAIN_TIMEOUT_MS = 10_000;

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /**
   * The engine stopped for good (a store or log failure it cannot wait out): nothing is stored or
   * committed past it, so the process should stop and be restarted (bin/fleetstream.ts exits ≠ 0).
   */
  onFailed?(error: FleetError): void;
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
  /** Command actors (lifecycles of recent commands) when the role runs the edge. */
  readonly commands: CommandActors | undefined;
  readonly adminSocketPath: string | undefined;
  /** Prometheus metrics of this process (GET /metrics). */
  readonly metrics: ServiceMetrics;
  /** The bound port of the metrics listener (GET /metrics on `config.metrics.host`); none with port -1. */
  readonly metricsPort: number | undefined;
  /** The port of /health and /ready of a process that runs no HTTP edge (role engine). */
  readonly probesPort: number | undefined;
  /** Adapters open and, when the role runs the engine, partitions assigned and no failure (GET /ready). */
  ready(): boolean;
  /** Stop accepting, finish in-flight work, flush, commit, close every adapter. */
  stop(): Promise<void>;
}

/** Named closers, run in reverse order of opening; a failing one is logged and the rest still run. */
class Closers {
  readonly #list: Array<[string, () => Promise<void> | void]> = [];
  readonly #logger: Logger;
  constructor(logger: Logger) {
    this.#logger = logger;
  }
  add(name: string, close: () => Promise<void> | void): void {
    this.#list.push([name, close]);
  }
  async closeAll(): Promise<void> {
    for (const [name, close] of this.#list.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        this.#logger.error('close failed', { component: name, error: toFleetError(error) });
      }
    }
  }
}

export async function createService(options: ServiceOptions): Promise<Service> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  const paths = dataPaths(config.dataDir);
  prepareDataDir(paths.root, logger);
  const runsEngine = config.role !== 'edge';
  const runsEdge = config.role !== 'engine';
  const names = logNames(config);
  const closers = new Closers(logger);
  const metrics = createMetrics();
  let pipeline: UplinkPipeline | undefined;
  let started = false;
  const ready = () => started && (pipeline === undefined || engineReady(pipeline));

  try {
    // First: a metrics port in use fails the start before any adapter opens.
    const metricsListener = config.metrics.port < 0 ? undefined : await listening(
      { name: 'metrics', setting: 'metrics-port', host: config.metrics.host, port: config.metrics.port, hint: 'or --metrics-port=-1 to run without the metrics listener' },
      () => serveMetrics({ host: config.metrics.host, port: config.metrics.port, scrape: () => metrics.scrape() }),
    );
    if (metricsListener !== undefined) closers.add('metrics listener', () => metricsListener.close());
    // The HTTP port serves /metrics too only to a bearer of the metrics token (schemas/config.ts).
    const metricsToken = config.metrics.token === undefined ? undefined : { token: config.metrics.token, scrape: () => metrics.scrape() };
    const lpwanApplications = loadLpwanApplications(config.lpwanApplicationsFile);
    // The three open side by side: a new embedded registry is created in a worker thread (seconds),
    // while this thread opens the log and the store.
    const registryOpening = openRegistry(config, clock, { logger });
    let log: Log;
    let store: ServiceStore;
    try {
      log = await openLog(config, clock);
      closers.add('log', () => log.close());
      store = await openStore(config);
      closers.add('store', () => store.close());
    } catch (error) {
      await registryOpening.then((opened) => opened.close(), () => undefined);
      throw error;
    }
    const opened = await registryOpening;
    closers.add('registry', () => opened.close());
    // Every mutation publishes on `changes`; edges, engine and MQTT connections act on them.
    const { registry, changes } = opened;
    metrics.watchRegistryChanges(changes, opened.link);
    // Appends, inserts and recorded rejections are timed and counted from outside the engine.
    const timedLog = metrics.log(log);
    const rejections = metrics.rejections(store.rejections);

    let probesPort: number | undefined;
    if (!runsEdge) {
      // Up before the engine joins its group, so an orchestrator sees /ready 503 until partitions come.
      const probes = await listening({ name: 'HTTP (probes)', setting: 'port', host: config.http.host, port: config.http.port }, () => serveProbes({
        port: config.http.port, host: config.http.host,
        alive: () => pipeline?.failure === undefined, ready, metrics: metricsToken,
      }));
      closers.add('probes', () => probes.close());
      probesPort = probes.port;
    }

    // This process's reader of topic `live`, when it runs an edge.
    const usesKafka = config.kafkaBrokers !== undefined && config.kafkaBrokers.length > 0;
    const hub = runsEdge
      ? new LiveHub({
        log, clock, topic: names.live,
        // Kafka: every edge reads every partition, so each process is its own group. The local log
        // has one process per data dir: a fixed group lets it drop what was read.
        group: usesKafka ? `${names.liveGroup}.${randomUUID()}` : names.liveGroup,
        groundOf: groundLookup(registry, changes, clock, registryCacheTtlMs(config)),
        onError: (error) => logger.warn('a live record was skipped', { error }),
      })
      : undefined;
    // What this process stores, rejects and changes of commands goes on topic `live`; every edge
    // reads it back (docs/live.md), so streams and MQTT feeds show what any engine processed.
    let liveDropped = 0;
    const live = new LivePublisher({
      log: timedLog, clock, topic: names.live,
      // On the local log this process's hub is the topic's only reader: events are built only while it wants them.
      wanted: hub !== undefined && !usesKafka ? () => hub.wantsEvents() : undefined,
      onDropped: (count, error) => {
        if (liveDropped === 0 || error !== undefined) logger.warn('live events dropped (streams miss them; the store has them)', { count, error });
        liveDropped += count;
      },
    });
    closers.add('live publisher', () => live.close());
    let intake: Intake | undefined;
    if (runsEngine) {
      const engine = buildEngine({
        log: timedLog,
        store: metrics.store(store),
        rejections,
        directory: registryDirectory(registry),
        clock,
        names,
        settings: config.engine,
        atWindow: atWindowOf(config),
        onStored: (rows) => live.states(rows),
        onDeadLetters: (letters) => live.rejections(letters),
        onError: (error) => {
          // Also called for a failing onStored listener, which does not stop the pipeline.
          if (engine.pipeline.failure === undefined) {
            logger.warn('a stored-states hook failed', { error });
            return;
          }
          logger.error('uplink pipeline stopped making progress; restart to replay from the last commit', { error });
          options.onFailed?.(error);
        },
      });
      pipeline = engine.pipeline;
      // Profiles changed on any edge, or by the admin CLI, reach this engine's device actors.
      const actors = engine.pipeline.actors;
      changes.subscribe((change) => {
        if (change.kind === 'device-changed' || change.kind === 'device-deleted') actors.invalidate(change.deviceId);
        else if (change.kind === 'resync') actors.invalidateAll();
      });
      metrics.watchEngine(engine.pipeline, log, names.engineGroup);
      await engine.start();
      // Stopped after the edges (closers run in reverse): first it stores what they accepted.
      closers.add('engine', async () => {
        if (intake !== undefined && !(await engine.pipeline.caughtUp(intake.ingest.appendedTo, DRAIN_TIMEOUT_MS))) {
          logger.warn('stopping before every accepted uplink was stored; the next start stores the rest', { timeoutMs: DRAIN_TIMEOUT_MS });
        }
        await engine.stop();
      });
    }

    let httpPort: number | undefined;
    let liveHub: LiveHub | undefined;
    let mqttPort: number | undefined;
    let commandActors: CommandActors | undefined;
    if (hub !== undefined) {
      await hub.start();
      closers.add('live hub', () => hub.stop());
      // Streams of a revoked token, a deleted device or a user who left the ground end at once.
      const unsubscribeLive = changes.subscribe((change) => hub.apply(change));
      closers.add('live registry changes', unsubscribeLive);
      liveHub = hub;
      metrics.watchLive({ publisher: live, hub });
      const edgeIntake = buildIntake({
        log: timedLog, clock, rejections, topics: names, logger, atWindow: atWindowOf(config),
        onDeadLetters: (letters) => live.rejections(letters),
      });
      intake = edgeIntake;
      closers.add('intake', () => edgeIntake.close());
      const admission = metrics.admission(edgeIntake.admission);
      const mqtt = await listening({ name: 'MQTT', setting: 'mqtt-port', host: config.mqtt.host, port: config.mqtt.port, hint: 'or --mqtt-port=-1 to run without the embedded MQTT edge' },
        () => startMqttEdge({ config, registry, changes, admission, clock, logger }));
      if (mqtt) {
        metrics.watchMqtt(mqtt.stats);
        closers.add('mqtt', () => mqtt.close());
        // Feeds (device/<id>/asset/<name>/feed): states stored by any engine, read from topic `live`.
        hub.followStates((rows) => mqtt.publishStates(rows), () => mqtt.followsFeeds());
        mqttPort = mqtt.port;
      }
      const commands = buildCommands({
        log: timedLog, registry, changes, cacheTtlMs: registryCacheTtlMs(config), history: store.commands, rejections, clock, logger, names,
        settings: config.commands, transport: mqtt?.commands, applications: lpwanApplications, readsEveryCommand: !usesKafka,
        onCommandChanged: (view) => {
          metrics.commandChanged(view);
          live.command(view);
        },
      });
      await commands.start();
      closers.add('commands', () => commands.stop());
      commandActors = commands.actors;
      const served = await listening({ name: 'HTTP', setting: 'port', host: config.http.host, port: config.http.port }, () => serveHttpEdge({
        config, registry, changes, store, clock, logger, admission, commands: commands.edge, lpwanApplications,
        observe: { ready, metrics: metricsToken, onRequest: (method, route, status, seconds) => metrics.httpRequest(method, route, status, seconds) },
        live: hub,
      }));
      closers.add('http', () => served.close());
      // Before the server closes (closers run in reverse): open streams never end by themselves.
      closers.add('live streams', () => hub.stop());
      httpPort = served.port;
    }

    if (!runsEdge) metrics.watchLive({ publisher: live });

    let adminSocketPath: string | undefined;
    if (!config.databaseUrl) {
      const context = httpPort === undefined ? {} : { httpBase: httpBaseOf(config.http.host, httpPort) };
      const admin = await serveAdminSocket({ path: paths.adminSocket, registry, context });
      closers.add('admin', () => admin.close());
      adminSocketPath = admin.path;
    }

    logger.info('fleetstream started', {
      role: config.role,
      http: httpPort !== undefined ? `${config.http.host}:${httpPort}` : undefined,
      probes: probesPort !== undefined ? `${config.http.host}:${probesPort} (/health, /ready${metricsToken ? ', /metrics with the metrics token' : ''})` : undefined,
      metrics: metricsListener !== undefined ? `${config.metrics.host}:${metricsListener.port}` : undefined,
      mqtt: config.mqtt.url && runsEdge ? 'external broker' : mqttPort !== undefined ? `${config.mqtt.host}:${mqttPort}` : undefined,
      log: config.kafkaBrokers ? 'kafka' : 'local',
      store: config.clickhouseUrl ? 'clickhouse' : 'chdb',
      registry: config.databaseUrl ? 'postgres' : 'pglite',
      dataDir: paths.root,
    });

    started = true;
    let stopping: Promise<void> | undefined;
    return {
      metrics,
      metricsPort: metricsListener?.port,
      probesPort,
      ready,
      config,
      registry,
      changes,
      log,
      store,
      pipeline,
      httpPort,
      mqttPort,
      commands: commandActors,
      live: liveHub,
      adminSocketPath,
      stop: () => (stopping ??= closers.closeAll().then(() => logger.info('fleetstream stopped'))),
    };
  } catch (error) {
    await closers.closeAll();
    throw error;
  }
}

/** The ground of a device for live ground streams, through cached registry lookups kept current by the changes. */
function groundLookup(registry: Registry, changes: RegistryChanges, clock: Clock, cacheTtlMs: number): (deviceId: string) => Promise<string | undefined> {
  const lookups = new RegistryLookups({ registry, clock, cacheTtlMs });
  changes.subscribe((change) => lookups.apply(change));
  return async (deviceId) => (await lookups.device(deviceId))?.groundId;
}

/** An engine is ready once it holds partitions of `uplinks` and has not stopped for good. */
export function engineReady(pipeline: Pick<UplinkPipeline, 'positions' | 'failure'>): boolean {
  return pipeline.failure === undefined && pipeline.positions().size > 0;
}
