/**
 * What every role of a process is built from: its open ports seen through the metrics (appends
 * timed, rejections counted) and its live data: the publisher of what this process stores,
 * rejects and changes of commands on topic `live`, and, when it runs an edge, its reader of that
 * topic (docs/live.md), so streams and MQTT feeds show what any engine processed; and the writer
 * of topic `events` (docs/integrations.md), for applications and integrations.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../engine/kernel/clock.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { LiveHub } from '../engine/live/LiveHub.ts';
import { LivePublisher } from '../engine/live/LivePublisher.ts';
import { EventWriter } from '../engine/events/EventWriter.ts';
import { ActiveIntegrations } from '../engine/integrations/ActiveIntegrations.ts';
import type { Log } from '../engine/ports/log.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { Config } from '../schemas/config.ts';
import type { WorkersLiveDemand } from './liveDemand.ts';
import type { ServiceMetrics } from './metrics.ts';
import type { Ports } from './openPorts.ts';

export interface Wiring {
  readonly config: Config;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly ports: Ports;
  readonly metrics: ServiceMetrics;
  /** The log, its appends timed. */
  readonly log: Log;
  /** The devices' rejections, counted by code as they are recorded. */
  readonly rejections: Pick<RejectionStore, 'append'>;
  readonly live: LivePublisher;
  /** Topic `events` (schemas/events.ts): what the engine stored and refused, and command changes. */
  readonly events: EventWriter;
  /**
   * On the local log, whether an integration is active (topic `events` is written only then,
   * unless the operator asked for it): started with the process's registry changes. Undefined:
   * the topic is always written (Kafka, or `--events-topic on`).
   */
  readonly activeIntegrations: ActiveIntegrations | undefined;
  /** This process's reader of topic `live` (not started) when it runs an edge. */
  readonly hub: LiveHub | undefined;
  /** The log is Kafka: other processes may read and write the same topics. */
  readonly usesKafka: boolean;
  /**
   * Where this process stands among embedded edge workers (app/edgeWorkers.ts): the primary, which
   * runs no edge of its own and builds live events while a worker wants them (app/liveDemand.ts), or
   * the worker of that index. Undefined: one process.
   */
  readonly workers: { primary: true; liveDemand: WorkersLiveDemand } | { index: number } | undefined;
  /** The edges and the command owner may be different processes (Kafka, or edge workers). */
  readonly acrossProcesses: boolean;
  /** GET /metrics on the HTTP port, only to a bearer of the metrics token (schemas/config.ts). */
  readonly metricsToken: { token: string; scrape(): Promise<{ contentType: string; body: string }> } | undefined;
}

export function wire(options: Pick<Wiring, 'config' | 'clock' | 'logger' | 'ports' | 'metrics'> & { workers?: Wiring['workers'] }): Wiring {
  const { config, clock, logger, ports, metrics, workers } = options;
  const names = ports.names;
  const usesKafka = config.kafkaBrokers !== undefined && config.kafkaBrokers.length > 0;
  const log = metrics.log(ports.log);
  const worker = workers !== undefined && 'index' in workers ? workers.index : undefined;
  const hub = config.role === 'engine' || (workers !== undefined && 'primary' in workers) ? undefined : new LiveHub({
    log: ports.log, clock, topic: names.live,
    // Kafka: every edge reads every partition, so each process is its own group. The local log
    // is one process's: a fixed group (one per edge worker) lets it drop what was read.
    group: usesKafka ? `${names.liveGroup}.${randomUUID()}` : worker !== undefined ? `${names.liveGroup}.w${worker}` : names.liveGroup,
    groundOf: async (deviceId) => (await ports.lookups.device(deviceId))?.groundId,
    // Kafka: the engines publish every stored state whoever listens; an edge nobody listens to
    // reads none of it (LiveHub: idleWhenUnwanted), so each edge costs the fleet's states only
    // while it serves a live stream or feed.
    idleWhenUnwanted: usesKafka,
    onError: (error) => logger.warn('a live record was skipped', { error }),
  });
  let liveDropped = 0;
  const live = new LivePublisher({
    log, clock, topic: names.live,
    // On the local log this process's hub is the topic's only reader, or its workers' hubs are:
    // events are built only while one wants them.
    wanted: usesKafka ? undefined
      : workers !== undefined && 'primary' in workers ? () => workers.liveDemand.wanted()
      : hub !== undefined && workers === undefined ? () => hub.wantsEvents() : undefined,
    onDropped: (count, error) => {
      if (liveDropped === 0 || error !== undefined) logger.warn('live events dropped (streams miss them; the store has them)', { count, error });
      liveDropped += count;
    },
  });
  // Kafka: applications read the topic with groups of their own, so it is always written. The
  // local log's readers are the integrations: written while one is active (or asked for), in the
  // engine's process and in each edge worker alike.
  const activeIntegrations = usesKafka || config.eventsTopic === 'on' ? undefined
    : new ActiveIntegrations({ registry: ports.registry, clock, logger });
  if (activeIntegrations !== undefined) {
    ports.registryChanges.add((change) => activeIntegrations.changed(change));
    void activeIntegrations.start();
  }
  // The local log's topic `events` is read by the integrations alone: runs of uplinks share records
  // there (EventWriter `combine`), once the log says it has as many partitions as `uplinks` (a data
  // dir keeps the counts it was made with). On Kafka, applications read it: a record per source.
  const combine = usesKafka ? undefined : { maxEvents: config.integrations.batchEvents, on: false };
  if (combine !== undefined) {
    void Promise.all([ports.log.partitionCount(names.uplinks), ports.log.partitionCount(names.events)])
      .then(([uplinks, events]) => { combine.on = uplinks === events; }, () => undefined);
  }
  const events = new EventWriter({
    log, clock, topic: names.events, combine,
    wanted: activeIntegrations === undefined ? undefined : () => activeIntegrations.any,
  });
  return {
    ...options, log, live, hub, events, activeIntegrations, usesKafka, workers, acrossProcesses: usesKafka || workers !== undefined,
    rejections: metrics.rejections(ports.store.rejections),
    metricsToken: config.metrics.token === undefined ? undefined : { token: config.metrics.token, scrape: () => metrics.scrape() },
  };
}
