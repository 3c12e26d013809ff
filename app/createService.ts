/**
 * The composition root: configuration → adapters → engine and edges (DESIGN.md §2). It only
 * composes the builders — openAdapters (which adapter each port gets), buildEngine, buildIntake,
 * buildCommands, buildEdges — which the test stacks use too.
 */
import { mkdirSync } from 'node:fs';
import { systemClock, type Clock } from '../engine/kernel/clock.ts';
import { toFleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { Listeners } from '../engine/kernel/Listeners.ts';
import type { Log } from '../engine/ports/log.ts';
import { registryDirectory, type Registry } from '../engine/ports/registry.ts';
import type { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import type { CommandActors } from '../engine/commands/CommandActors.ts';
import type { Config } from '../schemas/config.ts';
import type { StateRow } from '../schemas/messages.ts';
import { serveAdminSocket } from './adminSocket.ts';
import { buildCommands } from './buildCommands.ts';
import { buildEngine } from './buildEngine.ts';
import { buildIntake, type Intake } from './buildIntake.ts';
import { atWindowOf } from './deviceCompiler.ts';
import { serveHttpEdge, startMqttEdge } from './buildEdges.ts';
import { loadLpwanApplications } from './loadLpwanApplications.ts';
import { dataPaths, logNames, openLog, openRegistry, openStore, type ServiceStore } from './openAdapters.ts';

export { dataPaths, kafkaTimeouts, logNames, openRegistry } from './openAdapters.ts';

/** How long a stopping process that runs edge and engine waits for the engine to store what its edges accepted. */
const DRAIN_TIMEOUT_MS = 10_000;

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
}

export interface Service {
  readonly config: Config;
  readonly registry: Registry;
  readonly log: Log;
  readonly store: ServiceStore;
  /** Present when the role runs the engine. */
  readonly pipeline: UplinkPipeline | undefined;
  /** The bound HTTP port when the role runs the edge. */
  readonly httpPort: number | undefined;
  /** The bound MQTT port when the role runs the embedded MQTT edge (none with an external broker). */
  readonly mqttPort: number | undefined;
  /** Command actors (lifecycles of recent commands) when the role runs the edge. */
  readonly commands: CommandActors | undefined;
  readonly adminSocketPath: string | undefined;
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
  mkdirSync(paths.root, { recursive: true });
  const runsEngine = config.role !== 'edge';
  const runsEdge = config.role !== 'engine';
  const names = logNames(config);
  const closers = new Closers(logger);

  try {
    const lpwanApplications = loadLpwanApplications(config.lpwanApplicationsFile);
    const registry = await openRegistry(config, clock);
    closers.add('registry', () => registry.close());
    const log = await openLog(config, clock);
    closers.add('log', () => log.close());
    const store = await openStore(config);
    closers.add('store', () => store.close());

    // Stored states reach whoever follows them (the MQTT feed) through one set of listeners.
    const stored = new Listeners<readonly StateRow[]>((error) => logger.warn('a stored-states listener failed', { error: toFleetError(error) }));
    let intake: Intake | undefined;
    let pipeline: UplinkPipeline | undefined;
    if (runsEngine) {
      const engine = buildEngine({
        log,
        store,
        rejections: store.rejections,
        directory: registryDirectory(registry),
        clock,
        names,
        settings: config.engine,
        atWindow: atWindowOf(config),
        onStored: (rows) => stored.emit(rows),
        onError: (error) => logger.error('uplink pipeline stopped making progress; restart to replay from the last commit', { error }),
      });
      await engine.start();
      // Stopped after the edges (closers run in reverse): first it stores what they accepted.
      closers.add('engine', async () => {
        if (intake !== undefined && !(await engine.pipeline.caughtUp(intake.ingest.appendedTo, DRAIN_TIMEOUT_MS))) {
          logger.warn('stopping before every accepted uplink was stored; the next start stores the rest', { timeoutMs: DRAIN_TIMEOUT_MS });
        }
        await engine.stop();
      });
      pipeline = engine.pipeline;
    }

    let httpPort: number | undefined;
    let mqttPort: number | undefined;
    let commandActors: CommandActors | undefined;
    if (runsEdge) {
      const edgeIntake = buildIntake({ log, clock, rejections: store.rejections, topics: names, logger, atWindow: atWindowOf(config) });
      intake = edgeIntake;
      closers.add('intake', () => edgeIntake.close());
      const mqtt = await startMqttEdge({ config, registry, admission: edgeIntake.admission, clock, logger });
      if (mqtt) {
        closers.add('mqtt', () => mqtt.close());
        // Feeds (device/<id>/asset/<name>/feed) are published once states are durable.
        stored.add((rows) => mqtt.publishStates(rows));
        mqttPort = mqtt.port;
      }
      const commands = buildCommands({
        log, registry, history: store.commands, rejections: store.rejections, clock, logger, names,
        settings: config.commands, transport: mqtt?.commands, applications: lpwanApplications,
      });
      await commands.start();
      closers.add('commands', () => commands.stop());
      commandActors = commands.actors;
      const engine = pipeline;
      const served = await serveHttpEdge({
        config, registry, store, clock, logger, admission: edgeIntake.admission, commands: commands.edge, lpwanApplications,
        onDeviceChanged: (deviceId) => engine?.actors.invalidate(deviceId),
      });
      closers.add('http', () => served.close());
      httpPort = served.port;
    }

    let adminSocketPath: string | undefined;
    if (!config.databaseUrl) {
      const admin = await serveAdminSocket({ path: paths.adminSocket, registry });
      closers.add('admin', () => admin.close());
      adminSocketPath = admin.path;
    }

    logger.info('fleetstream started', {
      role: config.role,
      http: httpPort !== undefined ? `${config.http.host}:${httpPort}` : undefined,
      mqtt: config.mqtt.url && runsEdge ? 'external broker' : mqttPort !== undefined ? `${config.mqtt.host}:${mqttPort}` : undefined,
      log: config.kafkaBrokers ? 'kafka' : 'local',
      store: config.clickhouseUrl ? 'clickhouse' : 'chdb',
      registry: config.databaseUrl ? 'postgres' : 'pglite',
      dataDir: paths.root,
    });

    let stopping: Promise<void> | undefined;
    return {
      config,
      registry,
      log,
      store,
      pipeline,
      httpPort,
      mqttPort,
      commands: commandActors,
      adminSocketPath,
      stop: () => (stopping ??= closers.closeAll().then(() => logger.info('fleetstream stopped'))),
    };
  } catch (error) {
    await closers.closeAll();
    throw error;
  }
}
