/**
 * The composition root: configuration → adapters → engine and edge (DESIGN.md §2). Each port gets
 * its embedded adapter unless the configuration names a server for it. Nothing else in the project
 * chooses adapters.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { systemClock, type Clock } from '../engine/kernel/clock.ts';
import { codecFor } from '../engine/conversion/codecFor.ts';
import { toFleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import type { Log } from '../engine/ports/log.ts';
import { registryDirectory, type Registry } from '../engine/ports/registry.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { StateStore } from '../engine/ports/store.ts';
import { StateBatcher } from '../engine/uplink/pipeline/StateBatcher.ts';
import { UplinkIngest } from '../engine/uplink/UplinkIngest.ts';
import { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import { compileDevice } from '../engine/uplink/admission/compileDevice.ts';
import { createChdbStore } from '../adapters/chdb/createChdbStore.ts';
import { createClickHouseStore } from '../adapters/clickhouse/createClickHouseStore.ts';
import { createEdgeApp } from '../adapters/http/createEdgeApp.ts';
import { serveEdge, type ServedEdge } from '../adapters/http/serveEdge.ts';
import { createKafkaLog } from '../adapters/kafka/index.ts';
import { createLocalLog } from '../adapters/local-log/LocalLog.ts';
import { createPgliteRegistry } from '../adapters/pglite/createPgliteRegistry.ts';
import { createPostgresRegistry } from '../adapters/postgres/createPostgresRegistry.ts';
import { Topics, type StateRow } from '../schemas/messages.ts';
import { CommandActors } from '../engine/commands/CommandActors.ts';
import { CommandPipeline } from '../engine/commands/CommandPipeline.ts';
import { CommandHistoryRecorder } from '../engine/commands/CommandHistoryRecorder.ts';
import type { CommandHistory } from '../engine/ports/commandHistory.ts';
import type { EdgeCommands } from '../adapters/http/commandRoutes.ts';
import { createMqttEdge, type MqttEdge } from '../adapters/mqtt/createMqttEdge.ts';
import { createExternalMqtt } from '../adapters/mqtt/createExternalMqtt.ts';
import { TtsDownlink } from '../adapters/lpwan/TtsDownlink.ts';
import type { Config } from '../schemas/config.ts';
import { serveAdminSocket, type AdminSocket } from './adminSocket.ts';
import { loadLpwanApplications, lpwanEdge } from './lpwanEdge.ts';

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
}

export interface Service {
  readonly config: Config;
  readonly registry: Registry;
  readonly log: Log;
  readonly store: StateStore & { rejections: RejectionStore; commands: CommandHistory };
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
    engineGroup: `${prefix}fleetstream-engine`,
    commandsGroup: `${prefix}fleetstream-commands`,
  };
}

/** Kafka client timeouts from the configuration; heartbeats at most a third of the session apart. */
export function kafkaTimeouts(kafka: Config['kafka']): { appendTimeoutMs?: number; sessionTimeoutMs?: number; heartbeatIntervalMs?: number } {
  const out: { appendTimeoutMs?: number; sessionTimeoutMs?: number; heartbeatIntervalMs?: number } = {};
  if (kafka.appendTimeoutMs !== undefined) out.appendTimeoutMs = kafka.appendTimeoutMs;
  if (kafka.sessionTimeoutMs !== undefined) {
    out.sessionTimeoutMs = kafka.sessionTimeoutMs;
    out.heartbeatIntervalMs = Math.min(3000, Math.floor(kafka.sessionTimeoutMs / 3));
  }
  return out;
}

/**
 * The registry of the configuration. `create: false` refuses (NOT_FOUND) to start an embedded
 * registry where none exists yet: the admin CLI's guard against a mistyped or missing data dir.
 */
export async function openRegistry(config: Pick<Config, 'databaseUrl' | 'databaseSchema' | 'dataDir'>, clock: Clock = systemClock, options: { create?: boolean } = {}): Promise<Registry> {
  if (config.databaseUrl) return createPostgresRegistry({ url: config.databaseUrl, schema: config.databaseSchema, clock });
  return createPgliteRegistry({ dir: dataPaths(config.dataDir).registry, clock, create: options.create ?? true });
}

export async function createService(options: ServiceOptions): Promise<Service> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  const paths = dataPaths(config.dataDir);
  mkdirSync(paths.root, { recursive: true });
  const runsEngine = config.role !== 'edge';
  const runsEdge = config.role !== 'engine';
  const names = logNames(config);
  const closers: Array<[string, () => Promise<void>]> = [];
  const closeAll = async () => {
    for (const [name, close] of closers.reverse()) {
      await close().catch((error: unknown) => logger.error('close failed', { component: name, error: toFleetError(error) }));
    }
  };

  try {
    const lpwanApplications = loadLpwanApplications(config.lpwanApplicationsFile);
    const registry = await openRegistry(config, clock);
    closers.push(['registry', () => registry.close()]);

    const log: Log = config.kafkaBrokers && config.kafkaBrokers.length > 0
      ? createKafkaLog({ brokers: config.kafkaBrokers, ...kafkaTimeouts(config.kafka) })
      : createLocalLog({ dir: paths.log, clock });
    closers.push(['log', () => log.close()]);
    await log.ensureTopics([
      { name: names.uplinks, partitions: config.engine.partitions },
      { name: names.commands, partitions: config.engine.partitions },
      { name: names.deadLetters, partitions: config.engine.partitions },
    ]);

    const database = config.clickhouseDatabase;
    const store = config.clickhouseUrl ? createClickHouseStore({ url: config.clickhouseUrl, database }) : createChdbStore({ dir: paths.chdb, database });
    closers.push(['store', () => store.close()]);
    await store.init();

    let pipeline: UplinkPipeline | undefined;
    let feed: ((rows: readonly StateRow[]) => void) | undefined;
    if (runsEngine) {
      const batcher = new StateBatcher({
        store,
        clock,
        maxRows: config.engine.batchRows,
        maxDelayMs: config.engine.batchDelayMs,
        maxPendingRows: config.engine.batchRows * 4,
        // A store outage is waited out: consumption pauses (bounded in-flight work) until it is back.
        maxRetries: Number.MAX_SAFE_INTEGER,
      });
      closers.push(['batcher', () => batcher.close()]);
      pipeline = new UplinkPipeline({
        log,
        rows: batcher,
        directory: registryDirectory(registry),
        clock,
        topic: names.uplinks,
        group: names.engineGroup,
        deadLetterTopic: names.deadLetters,
        maxInFlight: config.engine.maxInFlight,
        compile: (info) => compileDevice(info, { binaryDecoder: (device) => codecFor(device.payload)?.decode }),
        actors: { passivateAfterMs: config.engine.passivateAfterMs, mailboxCapacity: config.engine.mailboxCapacity },
        onDeadLetters: (letters) => store.rejections.append(letters.map((letter) => ({
          deviceId: letter.envelope.deviceId,
          rejectedAt: letter.rejectedAt,
          code: letter.code,
          reason: letter.reason,
          asset: letter.asset ?? '',
          uplinkId: letter.envelope.id,
          channel: letter.envelope.channel,
        }))),
        // Feeds (device/<id>/asset/<name>/feed) are published once states are durable, by the MQTT
        // edge of this process (role all); set after the edge starts below.
        onStored: (rows) => feed?.(rows),
        onError: (error) => logger.error('uplink pipeline stopped making progress; restart to replay from the last commit', { error }),
      });
      const started = pipeline;
      await started.start();
      closers.push(['pipeline', () => started.stop()]);
    }

    let served: ServedEdge | undefined;
    let mqtt: Pick<MqttEdge, 'commands' | 'publishStates' | 'close'> & { port?: number } | undefined;
    let commandActors: CommandActors | undefined;
    if (runsEdge) {
      const ingest = new UplinkIngest({ log, clock, topic: names.uplinks });
      closers.push(['ingest', () => ingest.close()]);
      if (config.mqtt.url) {
        mqtt = await createExternalMqtt({
          url: config.mqtt.url, shareGroup: config.mqtt.shareGroup, clientIdPrefix: config.mqtt.clientId, sessionExpirySeconds: config.mqtt.sessionExpirySeconds,
          registry, ingest, clock, rejections: store.rejections, logger,
        });
        const client = mqtt;
        closers.push(['mqtt', () => client.close()]);
      } else if (config.mqtt.port >= 0) {
        const tls = config.mqtt.tlsCertFile && config.mqtt.tlsKeyFile
          ? { cert: readFileSync(config.mqtt.tlsCertFile), key: readFileSync(config.mqtt.tlsKeyFile) }
          : undefined;
        mqtt = await createMqttEdge({ registry, ingest, clock, rejections: store.rejections, port: config.mqtt.port, host: config.mqtt.host, tls, logger });
        const broker = mqtt;
        closers.push(['mqtt', () => broker.close()]);
      }
      // Every lifecycle transition goes to the command history (GET /device/{id}/commands).
      const history = new CommandHistoryRecorder({
        history: store.commands,
        clock,
        onDropped: (count, error) => logger.warn('command history transitions dropped', { count, error }),
      });
      closers.push(['command history', () => history.close()]);
      // Command actors run where device connections end (the MQTT edge); LPWAN commands go to the
      // network server's downlink API from here too.
      const actors = new CommandActors({
        clock,
        onChange: (view) => history.record(view),
        transport: mqtt?.commands,
        downlink: new TtsDownlink({ devices: registry, applications: lpwanApplications, clock }),
        expiryMs: config.commands.expiryMs,
        maxQueuePerDevice: config.commands.maxQueuePerDevice,
      });
      commandActors = actors;
      closers.push(['command actors', async () => actors.stop()]);
      const commandPipeline = new CommandPipeline({
        log,
        actors,
        directory: registryDirectory(registry),
        clock,
        topic: names.commands,
        group: names.commandsGroup,
        // A refused command (not an actuator, value off profile, …) shows in the device's rejections.
        onRejected: (rejected) => {
          store.rejections.append([{
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
      await commandPipeline.start();
      closers.push(['command pipeline', () => commandPipeline.stop()]);
      const commands: EdgeCommands = {
        async append(record) {
          await log.append(names.commands, [{ key: record.deviceId, value: new TextEncoder().encode(JSON.stringify(record)) }]);
        },
        list: (query) => store.commands.list(query),
      };
      const lpwan = lpwanEdge({ applications: lpwanApplications, registry, log, clock, ingest, rejections: store.rejections, deadLetterTopic: names.deadLetters });
      closers.push(['lpwan dead letters', () => lpwan.deadLetters.flush()]);
      const app = createEdgeApp({
        registry,
        ingest,
        store,
        rejections: store.rejections,
        clock,
        onDeviceChanged: (deviceId) => pipeline?.actors.invalidate(deviceId),
        limits: {
          maxBodyBytes: config.http.maxBodyBytes,
          rateLimit: config.http.rateLimitPerSecond > 0 ? { perSecond: config.http.rateLimitPerSecond, burst: config.http.rateLimitBurst } : undefined,
        },
        logger,
        lpwan: lpwan.deps,
        commands,
      });
      served = await serveEdge(app, { port: config.http.port, hostname: config.http.host });
      const edge = served;
      closers.push(['http', () => edge.close()]);
    }

    if (mqtt !== undefined) feed = (rows) => mqtt!.publishStates(rows);

    let admin: AdminSocket | undefined;
    if (!config.databaseUrl) {
      admin = await serveAdminSocket({ path: paths.adminSocket, registry });
      const socket = admin;
      closers.push(['admin', () => socket.close()]);
    }

    logger.info('fleetstream started', {
      role: config.role,
      http: served ? `${config.http.host}:${served.port}` : undefined,
      mqtt: config.mqtt.url && mqtt ? 'external broker' : mqtt ? `${config.mqtt.host}:${mqtt.port}` : undefined,
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
      httpPort: served?.port,
      mqttPort: mqtt?.port,
      commands: commandActors,
      adminSocketPath: admin?.path,
      stop: () => (stopping ??= closeAll().then(() => logger.info('fleetstream stopped'))),
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
