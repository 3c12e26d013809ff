/**
 * Edge workers of the embedded mode (`--edge-workers N` without Kafka; docs/scaling.md). The
 * primary keeps what belongs to one process per data dir — the local log, chDB, PGlite, the
 * engine, the command owner, the admin socket — and forks N edge processes (node:cluster) that
 * share the HTTP and MQTT ports and reach those ports through it (app/workerPorts.ts). Commands
 * reach a device on any worker through the same relay as across edge processes (the owner's
 * requests on topic `command-deliveries` of the local log). The primary's metrics listener adds its
 * own metrics and every worker's up; a worker that dies is replaced.
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import { FleetError } from '../engine/kernel/errors.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import type { Config } from '../schemas/config.ts';
import type { CommandActors } from '../engine/actors/CommandActors.ts';
import type { ServiceMetrics } from './metrics.ts';
import type { Ports } from './openPorts.ts';
import { startMqttHandoff, type MqttHandoff } from './mqttHandoff.ts';
import { WorkerChannel } from './workerChannel.ts';
import { LIVE_WANTED, type WorkersLiveDemand } from './liveDemand.ts';
import { servePorts } from './workerPorts.ts';
import { serveExportRelay } from './exportRelay.ts';
import { listening } from './portInUse.ts';
import { drainWorkers } from './edgeWorkers.ts';

export const EMBEDDED_WORKER_CONFIG = 'FLEETSTREAM_EDGE_WORKER_CONFIG';
export const WORKER_INDEX = 'FLEETSTREAM_EDGE_WORKER';
export const WORKER_STARTED = 'fleetstream:edge-worker-started';
/** A message carrying an MQTT connection handed to a worker, with the bytes already read from it. */
export const HANDOFF = 'fleetstream:mqtt-connection';

export interface EmbeddedWorkers {
  readonly httpPort: number | undefined;
  readonly mqttPort: number | undefined;
  /** The primary's metrics and every worker's, added up (Prometheus text). */
  scrape(): Promise<{ contentType: string; body: string }>;
  /** SIGTERM to every worker (each drains), SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>;
}

interface Running {
  worker: Worker;
  started: boolean;
  channel: WorkerChannel;
  closePorts(): Promise<void>;
}

export interface EmbeddedWorkersOptions {
  config: Config;
  count: number;
  ports: Ports;
  reservations: Pick<CommandActors, 'reserve' | 'release'> | undefined;
  /** Told whether each worker's live hub wants events (app/liveDemand.ts). */
  liveDemand: WorkersLiveDemand;
  metrics: ServiceMetrics;
  logger: Logger;
  /** The entry point a worker runs (bin/fleetstream.ts). */
  exec: string;
}

/** The MQTT port is the primary's: each connection goes to the worker of its client id (none with an external broker or port -1). */
function startHandoff(config: Config, count: number, running: ReadonlyMap<number, Running>): Promise<MqttHandoff | undefined> {
  if (config.mqtt.url !== undefined || config.mqtt.port < 0) return Promise.resolve(undefined);
  return listening({ name: 'MQTT', setting: 'mqtt-port', host: config.mqtt.host, port: config.mqtt.port, hint: 'or --mqtt-port=-1 to run without the embedded MQTT edge' },
    () => startMqttHandoff({
      host: config.mqtt.host, port: config.mqtt.port, workers: () => count, connectTimeoutMs: 10_000,
      handTo: (index, socket, head) => {
        const target = running.get(index);
        if (target === undefined || !target.started || !target.worker.isConnected()) return false;
        // send() answers false also when it only queued the message: the socket is on its way either way.
        target.worker.send({ type: HANDOFF, head }, socket);
        return true;
      },
    }));
}

export async function startEmbeddedWorkers(options: EmbeddedWorkersOptions): Promise<EmbeddedWorkers> {
  const { config, count, logger } = options;
  cluster.setupPrimary({ exec: options.exec, args: ['start'], serialization: 'advanced' });
  const running = new Map<number, Running>();
  let stopping = false;
  let ports: { httpPort?: number; mqttPort?: number } = {};

  const fork = (index: number): Promise<void> => new Promise((resolve, reject) => {
    const worker = cluster.fork({ [WORKER_INDEX]: String(index), [EMBEDDED_WORKER_CONFIG]: JSON.stringify(config) });
    const channel = new WorkerChannel(worker);
    const closePorts = servePorts(channel, options.ports, options.reservations, relay?.address);
    channel.onNote(LIVE_WANTED, (wanted) => options.liveDemand.report(index, wanted === true));
    const entry: Running = { worker, started: false, channel, closePorts };
    running.set(index, entry);
    const onStarted = (message: { type?: string; httpPort?: number; mqttPort?: number }) => {
      if (message?.type !== WORKER_STARTED) return;
      worker.off('message', onStarted);
      entry.started = true;
      ports = { httpPort: message.httpPort, mqttPort: message.mqttPort };
      resolve();
    };
    worker.on('message', onStarted);
    worker.once('exit', (code, signal) => {
      channel.close();
      options.liveDemand.forget(index);
      void closePorts();
      if (running.get(index)?.worker === worker) running.delete(index);
      reject(new FleetError('UNAVAILABLE', `edge worker ${index} exited during start (code ${code}, signal ${signal})`));
      if (stopping) return;
      logger.warn('edge worker exited; starting another', { worker: index, code, signal });
      setTimeout(() => void fork(index).catch((error: unknown) => logger.error('edge worker did not start again', { worker: index, error })), 1000);
    });
  });

  const stop = async (timeoutMs = 30_000) => {
    stopping = true;
    await drainWorkers([...running.values()].map(({ worker }) => worker), timeoutMs);
  };
  let handoff: MqttHandoff | undefined;
  let relay: Awaited<ReturnType<typeof serveExportRelay>> | undefined;
  try {
    if (options.ports.exports !== undefined) relay = await serveExportRelay(options.ports.exports);
    handoff = await startHandoff(config, count, running);
    // One at a time: the first worker's port is the one the others share.
    for (let i = 0; i < count; i++) await fork(i);
  } catch (error) {
    await handoff?.close();
    await stop(1000);
    await relay?.close();
    throw error;
  }
  const stopAll = async (timeoutMs?: number) => {
    await handoff?.close();
    await stop(timeoutMs);
    await relay?.close();
  };
  return {
    get httpPort() { return ports.httpPort; },
    get mqttPort() { return handoff?.port ?? ports.mqttPort; },
    async scrape() {
      const own = await options.metrics.registry.getMetricsAsJSON();
      const theirs = await Promise.all([...running.values()].map(({ channel }) => channel.call('metrics', ['json'], []).catch(() => [])));
      const all = AggregatorRegistry.aggregate([own, ...theirs] as never);
      return { contentType: all.contentType, body: await all.metrics() };
    },
    stop: stopAll,
  };
}
