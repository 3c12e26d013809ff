/**
 * The engine of a process (role engine or all): topic `uplinks` → device actors → state store,
 * refusals onto `dead-letters` and into the devices' rejections. Shared by the service and the
 * test stacks, so what the tests run is what the service runs.
 */
import { RetentionSweep } from '../engine/quotas/RetentionSweep.ts';
import { AuditPruner } from '../engine/audit/AuditPruner.ts';
import type { Clock } from '../engine/kernel/clock.ts';
import type { FleetError } from '../engine/kernel/errors.ts';
import type { DeviceDirectory } from '../engine/ports/directory.ts';
import type { Log } from '../engine/ports/log.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { StateStore } from '../engine/ports/store.ts';
import { rejectionRowsOf } from '../engine/uplink/pipeline/rejectionRows.ts';
import { StateBatcher } from '../engine/uplink/pipeline/StateBatcher.ts';
import { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import { DeviceActors } from '../engine/actors/DeviceActors.ts';
import { defaultConfig, type Config } from '../schemas/config.ts';
import { Topics, type DeadLetter, type StateRow } from '../schemas/messages.ts';
import type { AtWindow } from '../engine/uplink/admission/compileDevice.ts';
import { atWindowOf, serviceCompiler } from './deviceCompiler.ts';
import { registryDirectory } from '../engine/ports/registry.ts';
import type { RegistryChange } from '../engine/ports/registryChanges.ts';
import type { Role } from './Role.ts';
import type { Wiring } from './wiring.ts';
import { RuleEvaluator } from '../engine/rules/RuleEvaluator.ts';
import { UplinkProgress } from '../engine/rules/UplinkProgress.ts';
import { encodeCommandRecord } from '../engine/commands/commandRecords.ts';
import type { EventWriter } from '../engine/events/EventWriter.ts';
import { ActivityRecorder } from '../engine/connectivity/ActivityRecorder.ts';
import { UsageRecorder } from '../engine/usage/UsageRecorder.ts';
import type { UsageRegistry } from '../engine/ports/usageRegistry.ts';
import type { ConnectivityRegistry } from '../engine/ports/connectivityRegistry.ts';
import type { Logger } from '../engine/kernel/logger.ts';

/** How long a stopping process that runs edge and engine waits for the engine to store what its edges accepted. */
const DRAIN_TIMEOUT_MS = 10_000;

export interface EngineOptions {
  log: Log;
  store: Pick<StateStore, 'append'>;
  rejections: Pick<RejectionStore, 'append'>;
  directory: DeviceDirectory;
  clock: Clock;
  /** Default `uplinks`, `dead-letters`, group `fleetstream-engine`. */
  names?: { uplinks: string; deadLetters: string; engineGroup: string };
  settings?: Partial<Config['engine']> & { commitIntervalMs?: number; maxRetries?: number };
  /** Measurement times admitted for records that come without an edge's decision. Default DEFAULT_AT_WINDOW. */
  atWindow?: AtWindow;
  /** States once durable in the store (feeds). */
  onStored?(rows: readonly StateRow[]): void;
  /** Dead letters once durable, after the rejections are recorded. */
  onDeadLetters?(letters: readonly DeadLetter[]): void;
  onError?(error: FleetError): void;
  /** Topic `events`: stored states and refusals are appended there before their uplink is finished. */
  events?: EventWriter;
  /** The rules of the devices' grounds: each uplink's stored states are judged before it is finished. */
  rules?: RuleEvaluator;
  /**
   * Where the devices' last seen times go (engine/connectivity/ActivityRecorder.ts): the receive
   * times of the states stored and of the refusals, once a second. Absent: not recorded.
   */
  activity?: { registry: Pick<ConnectivityRegistry, 'recordActivity'>; flushIntervalMs?: number; logger?: Logger };
  /** Where the grounds' usage goes (engine/usage/UsageRecorder.ts): the states stored, by ground and day. Absent: not counted. */
  usage?: { registry: Pick<UsageRegistry, 'recordUsage'>; flushIntervalMs?: number; logger?: Logger };
}

export interface Engine {
  readonly pipeline: UplinkPipeline<DeviceActors>;
  readonly batcher: StateBatcher;
  start(): Promise<void>;
  /** Stops fetching, stores what is in flight, commits, closes the batcher. */
  stop(): Promise<void>;
}

export function buildEngine(options: EngineOptions): Engine {
  const s = options.settings ?? {};
  const names = options.names ?? { uplinks: Topics.uplinks, deadLetters: Topics.deadLetters, engineGroup: 'fleetstream-engine' };
  // The service's defaults (schemas/config.ts): 40 000 rows per insert, as ClickHouse wants few large
  // inserts (each makes a part: ~13 ms on an 18.16 server whatever its size; a 40 000-row insert there
  // takes 38 ms where four of 10 000 take 84), and room in flight for a full batch while one is stored.
  const batchRows = s.batchRows ?? defaultConfig.engine.batchRows;
  const batcher = new StateBatcher({
    store: options.store,
    clock: options.clock,
    maxRows: batchRows,
    maxDelayMs: s.batchDelayMs ?? defaultConfig.engine.batchDelayMs,
    // Low load: a few rows with no insert in flight go at once (docs/live.md "Latency"), at most one
    // such insert per 20 ms; rows that pile up while an insert runs wait for batchDelayMs as before.
    immediateRows: 100,
    immediateSpacingMs: 20,
    maxPendingRows: batchRows * 4,
    // A store outage is waited out: consumption pauses (bounded in-flight work) until it is back.
    maxRetries: s.maxRetries ?? Number.MAX_SAFE_INTEGER,
  });
  const activity = options.activity === undefined ? undefined : new ActivityRecorder({
    registry: options.activity.registry,
    clock: options.clock,
    flushIntervalMs: options.activity.flushIntervalMs,
    onError: (error, retrying) => options.activity?.logger?.warn(retrying ? 'devices\' last seen times not written yet; retrying' : 'devices\' last seen times lost', { error }),
  });
  const usage = options.usage === undefined ? undefined : new UsageRecorder({
    registry: options.usage.registry,
    clock: options.clock,
    flushIntervalMs: options.usage.flushIntervalMs,
    onError: (error, retrying) => options.usage?.logger?.warn(retrying ? 'grounds\' usage not written yet; retrying' : 'grounds\' usage lost', { error }),
  });
  const onStored = activity === undefined && usage === undefined ? options.onStored : (rows: readonly StateRow[]) => {
    activity?.stored(rows);
    usage?.stored(rows);
    options.onStored?.(rows);
  };
  const pipeline = new UplinkPipeline({
    log: options.log,
    rows: batcher,
    undecided: (sink) => new DeviceActors({
      directory: options.directory,
      sink,
      clock: options.clock,
      compile: serviceCompiler(options.atWindow),
      passivateAfterMs: s.passivateAfterMs,
      mailboxCapacity: s.mailboxCapacity,
    }),
    clock: options.clock,
    topic: names.uplinks,
    group: names.engineGroup,
    deadLetterTopic: names.deadLetters,
    maxInFlight: s.maxInFlight ?? defaultConfig.engine.maxInFlight,
    commitIntervalMs: s.commitIntervalMs,
    onDeadLetters: async (letters) => {
      await options.rejections.append(rejectionRowsOf(letters));
      activity?.refused(letters);
      options.onDeadLetters?.(letters);
    },
    onStored,
    onError: options.onError,
    events: options.events,
    rules: options.rules,
  });
  return {
    pipeline,
    batcher,
    start: () => pipeline.start(),
    async stop() {
      await pipeline.stop();
      await batcher.close();
      await activity?.stop();
      await usage?.stop();
    },
  };
}

/** An engine is ready once it holds partitions of `uplinks` and has not stopped for good. */
export function engineReady(pipeline: Pick<UplinkPipeline<DeviceActors>, 'positions' | 'failure'>): boolean {
  return pipeline.failure === undefined && pipeline.positions().size > 0;
}

/** What keeps an engine's device actors current: profiles changed on any edge, or by the admin CLI. */
export function actorsFollowing(pipeline: Pick<UplinkPipeline<DeviceActors>, 'actors'>): (change: RegistryChange) => void {
  return (change) => {
    if (change.kind === 'device-changed' || change.kind === 'device-deleted') pipeline.actors.invalidate(change.deviceId);
    else if (change.kind === 'resync') pipeline.actors.invalidateAll();
  };
}

export interface EngineRoleOptions {
  /** The engine stopped for good (a store or log failure it cannot wait out). */
  onFailed?(error: FleetError): void;
  /** Where this process's edges appended to `uplinks`: a stopping engine first stores up to there. */
  accepted?(): ReadonlyMap<number, number> | undefined;
}

/** The engine of a service process, on its ports: stored states and refusals go on topic `live` too. */
export function engineRole(w: Wiring, options: EngineRoleOptions = {}): Role & { readonly pipeline: UplinkPipeline } {
  const { config, ports, logger } = w;
  const rules = new RuleEvaluator({
    rules: ports.registry,
    alarms: ports.registry,
    groundOf: (deviceId) => ports.lookups.groundOf(deviceId),
    clock: w.clock,
    logger,
    events: w.events,
    progress: { through: () => progress.through() },
    onAlarm: (change, alarm) => w.live.alarm(change, alarm),
    command: async ({ id, deviceId, asset, value, issuer }) => {
      await w.log.append(ports.names.commands, [{ key: deviceId, value: encodeCommandRecord({ id, deviceId, asset, value, issuer, issuedAt: w.clock.now() }) }]);
    },
  });
  const engine = buildEngine({
    log: w.log,
    store: w.metrics.store(ports.store),
    rejections: w.rejections,
    directory: registryDirectory(ports.registry),
    clock: w.clock,
    names: ports.names,
    settings: config.engine,
    atWindow: atWindowOf(config),
    onStored: (rows) => w.live.states(rows),
    onDeadLetters: (letters) => w.live.rejections(letters),
    events: w.events,
    rules,
    // The embedded registry (PGlite) runs in this process, where each write of 10 000 devices' times
    // takes a few hundred ms of the engine's thread: written every 5 s there, every second on PostgreSQL.
    activity: { registry: ports.registry, logger, flushIntervalMs: config.databaseUrl === undefined ? 5000 : 1000 },
    usage: { registry: ports.registry, logger, flushIntervalMs: config.databaseUrl === undefined ? 5000 : 1000 },
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
  const { pipeline } = engine;
  const progress = new UplinkProgress({ positions: () => pipeline.positions(), log: ports.log, topic: pipeline.topic, group: ports.names.engineGroup, clock: w.clock });
  w.metrics.watchEngine(pipeline, ports.log, ports.names.engineGroup);
  let stopListening = () => undefined as unknown;
  const retention = new RetentionSweep({
    registry: ports.registry, retention: ports.store.retention, clock: w.clock, intervalMs: config.retentionSweepMs,
    onError: (error) => logger.warn('expiring the states of grounds with a retention failed; the next sweep tries again', { error }),
  });
  const auditPruner = new AuditPruner({
    log: ports.registry, clock: w.clock, retentionDays: config.auditRetentionDays, intervalMs: config.retentionSweepMs,
    onError: (error) => logger.warn('pruning the grounds\' audit logs failed; the next run tries again', { error }),
  });
  return {
    pipeline,
    async start() {
      const following = actorsFollowing(pipeline);
      stopListening = ports.registryChanges.add((change) => {
        following(change);
        rules.changed(change);
      });
      await engine.start();
      rules.start();
      retention.start();
      auditPruner.start();
    },
    async stop() {
      const accepted = options.accepted?.();
      if (accepted !== undefined && !(await pipeline.caughtUp(accepted, DRAIN_TIMEOUT_MS))) {
        logger.warn('stopping before every accepted uplink was stored; the next start stores the rest', { timeoutMs: DRAIN_TIMEOUT_MS });
      }
      stopListening();
      await retention.stop();
      await auditPruner.stop();
      await engine.stop();
      await rules.stop();
    },
    ready: () => engineReady(pipeline),
  };
}
