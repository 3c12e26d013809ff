/**
 * One edge worker of the embedded mode (app/embeddedWorkers.ts): the edge role of a process —
 * live reader, intake, MQTT gateway, HTTP edge — on the ports its primary serves
 * (app/workerPorts.ts), its MQTT transport offered to the primary's command owner through the
 * command relay, its metrics served to the primary.
 */
import { systemClock, type Clock } from '../engine/kernel/clock.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import type { Config } from '../schemas/config.ts';
import { Closers } from './Closers.ts';
import { commandRoutes } from './commandRoutes.ts';
import type { Socket } from 'node:net';
import { HANDOFF, WORKER_STARTED } from './embeddedWorkers.ts';
import { LIVE_WANTED, reportLiveDemand } from './liveDemand.ts';
import { edgeRole } from './edgeRole.ts';
import { createMetrics } from './metrics.ts';
import { logStarted } from './serviceParts.ts';
import { WorkerChannel, type IpcPort } from './workerChannel.ts';
import { remotePorts } from './workerPorts.ts';
import { wire } from './wiring.ts';

export interface EmbeddedWorker {
  stop(): Promise<void>;
}

type Parent = IpcPort;

export async function runEmbeddedWorker(options: { config: Config; index: number; logger: Logger; parent: Parent; clock?: Clock }): Promise<EmbeddedWorker> {
  const { config, index, logger } = options;
  const clock = options.clock ?? systemClock;
  const closers = new Closers(logger);
  const channel = new WorkerChannel(options.parent);
  const metrics = createMetrics();
  channel.serve('metrics', { json: () => metrics.registry.getMetricsAsJSON() });
  try {
    const ports = remotePorts({ channel, config, clock, logger });
    closers.add('ports', () => ports.close());
    const w = wire({ config, clock, logger, ports, metrics, workers: { index } });
    closers.add('live publisher', () => w.live.close());
    closers.add('event writer', async () => {
      w.activeIntegrations?.stop();
      await w.events.close();
    });
    let started = false;
    const edge = edgeRole(w, { ready: () => started && edge.ready(), routes: commandRoutes(w), reserve: ports.reservations });
    closers.add('edge', () => edge.stop());
    await edge.start();
    if (w.hub !== undefined) {
      const stopReporting = reportLiveDemand(w.hub, (wanted) => channel.note(LIVE_WANTED, wanted), clock);
      closers.add('live demand', async () => stopReporting());
    }
    // MQTT connections the primary accepted for the client ids that map to this worker.
    const accept = edge.mqtt?.accept;
    if (accept !== undefined) {
      options.parent.on('message', (message: unknown, handle?: unknown) => {
        const m = message as { type?: string; head?: Uint8Array };
        if (m?.type === HANDOFF && handle !== undefined) accept(handle as Socket, Buffer.from(m.head ?? new Uint8Array()));
      });
    }
    started = true;
    logStarted(logger, config, 'edge worker started', { root: ports.paths.root, httpPort: edge.httpPort, mqttPort: edge.mqttPort, metricsToken: w.metricsToken !== undefined });
    options.parent.send({ type: WORKER_STARTED, httpPort: edge.httpPort, mqttPort: edge.mqttPort });
    return { stop: () => closers.closeAll() };
  } catch (error) {
    await closers.closeAll();
    throw error;
  }
}
