/**
 * How a process's command owner reaches the MQTT sessions of its devices (docs/scaling.md).
 *
 * - Local log (one process per data dir): the owner delivers through this process's own MQTT
 *   gateway or external-broker client, attached once the edge starts (deliveries before that find
 *   the device offline, and are tried again when it becomes reachable).
 * - Kafka, or embedded edge workers: a device's session may be on any edge process. The owner delivers through a
 *   RelayedTransport (requests on topic `command-deliveries`, answers on topic `commands`), and
 *   each edge serves its MQTT transport to every owner through a DeliveryRelay.
 */
import { hostname } from 'node:os';
import { Connectivity } from '../engine/actors/Connectivity.ts';
import { DeliveryRelay } from '../engine/commands/DeliveryRelay.ts';
import { RelayedTransport } from '../engine/commands/RelayedTransport.ts';
import { randomBase62 } from '../engine/kernel/ids.ts';
import { Listeners } from '../engine/kernel/Listeners.ts';
import type { AssetCommandDelivery, CommandTransport, DeliveryOutcome } from '../engine/ports/commandTransport.ts';
import type { Role } from './Role.ts';
import type { Wiring } from './wiring.ts';

export interface CommandRoutes {
  /** What the command owner delivers asset commands through. */
  readonly transport: CommandTransport;
  /** The owner's relayed transport (Kafka), fed the edges' presence and outcomes by its pipeline. */
  readonly relayed: RelayedTransport | undefined;
  /** Where the owner knows the devices' sessions to be (Kafka). */
  readonly connectivity: Connectivity | undefined;
  /** This process's edge offers its MQTT transport (`shared`: an external broker, which reaches every device). */
  attach(edge: CommandTransport, shared: boolean): Role;
}

/** This edge's id among the running edges: host, process and a random part. */
export function edgeId(): string {
  return `${hostname().slice(0, 64)}-${process.pid}-${randomBase62(6)}`;
}

export function commandRoutes(w: Pick<Wiring, 'acrossProcesses' | 'workers' | 'log' | 'clock' | 'logger' | 'ports' | 'config'>): CommandRoutes {
  if (!w.acrossProcesses) return localRoutes();
  const names = w.ports.names;
  const connectivity = new Connectivity();
  const relayed = new RelayedTransport({
    log: w.log, clock: w.clock, topic: names.commandDeliveries, connectivity,
    // The embedded MQTT edges say where sessions are; an external broker reaches every device from any edge.
    tracked: !w.config.mqtt.url,
    partitionCount: () => w.ports.log.partitionCount(names.commands),
    onError: (error) => w.logger.warn('command owner: a roll call was not sent', { error }),
  });
  const edge = edgeId();
  return {
    transport: relayed,
    relayed,
    connectivity,
    attach(transport, shared) {
      const relay = new DeliveryRelay({
        log: w.log, clock: w.clock, edge, transport, shared,
        topics: { commands: names.commands, deliveries: names.commandDeliveries },
        // Every edge reads every request, except through an external broker (one edge answers each).
        // An embedded edge worker's group is named by its index: the local log keeps a group's place.
        group: shared ? names.deliveriesGroup : `${names.deliveriesGroup}.${w.workers !== undefined && 'index' in w.workers ? `w${w.workers.index}` : edge}`,
        onError: (error) => w.logger.warn('command delivery relay', { error }),
      });
      let started = false;
      return {
        async start() {
          await relay.start();
          started = true;
        },
        stop: () => relay.stop(),
        ready: () => started,
      };
    },
  };
}

/** The process's own MQTT transport, once its edge attaches it. */
function localRoutes(): CommandRoutes {
  let bound: CommandTransport | undefined;
  let unsubscribe: (() => void) | undefined;
  const reachable = new Listeners<string>();
  const transport: CommandTransport = {
    deliver: (delivery: AssetCommandDelivery): Promise<DeliveryOutcome> => bound?.deliver(delivery) ?? Promise.resolve('offline'),
    onReachable: (listener) => reachable.add(listener),
  };
  return {
    transport,
    relayed: undefined,
    connectivity: undefined,
    attach(edge) {
      return {
        async start() {
          bound = edge;
          unsubscribe = edge.onReachable((deviceId) => reachable.emit(deviceId));
        },
        async stop() {
          unsubscribe?.();
          bound = undefined;
        },
        ready: () => bound === edge,
      };
    },
  };
}
