/**
 * Edge workers (`--edge-workers N`, docs/scaling.md): N edge processes forked by one primary with
 * node:cluster, sharing the HTTP and MQTT ports (the primary accepts connections and hands them out
 * in turn). Each worker is a whole `--role edge` process on the shared servers: its own Kafka
 * producer, registry connection and changes, live reader and command relay (an edge id of its
 * own), so everything that holds for several edges holds for the workers. The primary serves the
 * metrics listener with every worker's metrics added up (prom-client's AggregatorRegistry), restarts
 * a worker that dies, and on SIGTERM drains them all.
 *
 * The embedded mode keeps one edge: its log, store and registry belong to one process.
 */
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { FleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import type { Config } from '../schemas/config.ts';
import { listening } from './portInUse.ts';
import { serveMetrics, type ServedMetrics } from './serveMetrics.ts';

const WORKER_ENV = 'FLEETSTREAM_EDGE_WORKER';
const STARTED = 'fleetstream:edge-worker-started';

/** Every port on its server: what edge workers need. */
export function distributed(config: Config): boolean {
  return (config.kafkaBrokers?.length ?? 0) > 0 && config.databaseUrl !== undefined && config.clickhouseUrl !== undefined;
}

/** Every port embedded: the primary holds them and serves them to its workers (app/embeddedWorkers.ts). */
export function embedded(config: Config): boolean {
  return (config.kafkaBrokers?.length ?? 0) === 0 && config.databaseUrl === undefined && config.clickhouseUrl === undefined;
}

/**
 * MQTT over TLS on the embedded edge: the primary cannot read a client id inside TLS to pick the
 * worker of its session, so that edge stays one process.
 */
function embeddedTls(config: Config): boolean {
  return embedded(config) && config.mqtt.url === undefined && config.mqtt.tlsCertFile !== undefined && config.mqtt.port >= 0;
}

/**
 * How many edge workers the configuration asks for: for a distributed `--role edge`, or the
 * embedded `--role all`. `auto`: one per core but one (left to the kernel's network work and the
 * primary's engine), else 1. More than one anywhere else is refused.
 */
export function edgeWorkerCount(config: Config, cores = availableParallelism()): number {
  const wanted = config.edgeWorkers;
  const possible = (config.role === 'edge' && distributed(config)) || (config.role === 'all' && embedded(config) && !embeddedTls(config));
  if (wanted === 'auto') return possible ? Math.max(1, cores - 1) : 1;
  if (wanted > 1 && !possible) {
    throw new FleetError('VALIDATION_FAILED', `invalid configuration: --edge-workers ${wanted} runs the workers of --role edge with Kafka, PostgreSQL and ClickHouse (KAFKA_BROKERS, DATABASE_URL, CLICKHOUSE_URL), or of the embedded --role all with none of them (and without MQTT over TLS, whose client ids the primary cannot read to keep each client's session on one worker)`, { detail: { field: 'edgeWorkers' } });
  }
  return wanted;
}

/** This process is an edge worker forked by a primary (`env`: the process's environment, read by the entry point). */
export function isEdgeWorker(env: Record<string, string | undefined>): boolean {
  return cluster.isWorker && env[WORKER_ENV] !== undefined;
}

/** A worker's configuration: its primary serves the metrics. */
export function workerConfig(config: Config): Config {
  return { ...config, metrics: { ...config.metrics, port: -1 } };
}

/** In a worker, once its service started: its metrics join the primary's, and the primary hears of it. */
export function workerStarted(registry: Registry, ports: { httpPort?: number; mqttPort?: number }): void {
  AggregatorRegistry.setRegistries([registry]);
  // prom-client answers the primary's requests once an AggregatorRegistry exists in the worker.
  new AggregatorRegistry();
  process.send?.({ type: STARTED, ...ports });
}

export interface EdgeWorkers {
  readonly httpPort: number | undefined;
  readonly mqttPort: number | undefined;
  readonly metricsPort: number | undefined;
  readonly workers: number;
  /** SIGTERM to every worker (each drains), SIGKILL to those still running after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>;
}

/** Forks `count` workers and resolves once each has started; a worker that dies later is replaced. */
export async function startEdgeWorkers(config: Config, logger: Logger, count: number): Promise<EdgeWorkers> {
  const aggregator = new AggregatorRegistry();
  let metrics: ServedMetrics | undefined;
  if (config.metrics.port >= 0) {
    metrics = await listening(
      { name: 'metrics', setting: 'metrics-port', host: config.metrics.host, port: config.metrics.port, hint: 'or --metrics-port=-1 to run without the metrics listener' },
      () => serveMetrics({ host: config.metrics.host, port: config.metrics.port, scrape: async () => ({ contentType: aggregator.contentType, body: await aggregator.clusterMetrics() }) }),
    );
  }
  let stopping = false;
  let ports: { httpPort?: number; mqttPort?: number } = {};
  const fork = (index: number): Promise<Worker> => new Promise((resolve, reject) => {
    const worker = cluster.fork({ [WORKER_ENV]: String(index) });
    const onStart = (message: { type?: string; httpPort?: number; mqttPort?: number }) => {
      if (message?.type !== STARTED) return;
      ports = { httpPort: message.httpPort, mqttPort: message.mqttPort };
      worker.off('exit', onEarlyExit);
      worker.once('exit', (code, signal) => {
        if (stopping) return;
        logger.warn('edge worker exited; starting another', { worker: index, code, signal });
        setTimeout(() => void fork(index).catch((error: unknown) => logger.error('edge worker did not start again', { worker: index, error })), 1000);
      });
      resolve(worker);
    };
    const onEarlyExit = (code: number | null, signal: string | null) => reject(new FleetError('UNAVAILABLE', `edge worker ${index} exited during start (code ${code}, signal ${signal})`));
    worker.on('message', onStart);
    worker.once('exit', onEarlyExit);
  });
  // One at a time: each worker creates what the first one finds missing (topics, tables).
  const started: Worker[] = [];
  try {
    for (let i = 0; i < count; i++) started.push(await fork(i));
  } catch (error) {
    stopping = true;
    for (const worker of started) worker.process.kill('SIGKILL');
    await metrics?.close();
    throw error;
  }
  return {
    get httpPort() { return ports.httpPort; },
    get mqttPort() { return ports.mqttPort; },
    metricsPort: metrics?.port,
    workers: count,
    async stop(timeoutMs = 30_000) {
      stopping = true;
      await drainWorkers(Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined), timeoutMs);
      await metrics?.close();
    },
  };
}

/** SIGTERM to each worker still running (each drains), SIGKILL to those still there after `timeoutMs`; resolves once all exited. */
export function drainWorkers(workers: Iterable<Worker>, timeoutMs: number): Promise<void> {
  return Promise.all([...workers].map((worker) => new Promise<void>((resolve) => {
    if (worker.isDead()) return resolve();
    const timer = setTimeout(() => worker.process.kill('SIGKILL'), timeoutMs);
    worker.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    worker.process.kill('SIGTERM');
  }))).then(() => undefined);
}
