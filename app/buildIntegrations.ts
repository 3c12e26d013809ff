/**
 * Integrations' deliveries in a process of role engine or all (docs/integrations.md): every active
 * integration read from topic `events` with its own consumer group, batched, signed and sent by
 * the one WebhookSender of the process (the operator's destination policy at every connection),
 * their journal writes grouped (GroupedJournal),
 * kept in step with registry changes. With several engines, each integration's partitions are
 * spread over them by its group.
 */
import { Deliveries } from '../engine/integrations/Deliveries.ts';
import { groupedJournal } from '../engine/integrations/GroupedJournal.ts';
import { SharedParses } from '../engine/integrations/SharedParses.ts';
import { IntegrationDelivery } from '../engine/integrations/IntegrationDelivery.ts';
import { IngestionBusy } from '../engine/integrations/IngestionBusy.ts';
import { retrySchedule } from '../engine/integrations/retrySchedule.ts';
import type { Integration } from '../engine/ports/integrationRegistry.ts';
import { outboundPolicy } from '../adapters/webhooks/OutboundPolicy.ts';
import { WebhookSender } from '../adapters/webhooks/WebhookSender.ts';
import type { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import type { Role } from './Role.ts';
import type { Wiring } from './wiring.ts';

export interface IntegrationsRole extends Role {
  readonly deliveries: Deliveries;
}

/** The share of the time since its previous call that this thread's event loop was busy. */
function loopUtilization(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const share = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return share;
  };
}

export function integrationsRole(w: Wiring, options: { engine?: Pick<UplinkPipeline, 'stats'> } = {}): IntegrationsRole {
  const { config, ports, clock, logger } = w;
  const settings = config.integrations;
  const sender = new WebhookSender({ policy: outboundPolicy(config.integrationsAllowHosts ?? []), clock });
  const schedule = retrySchedule({ giveUpAfterMs: settings.retryWindowMs });
  const batching = { maxEvents: settings.batchEvents, lingerMs: settings.batchLingerMs, maxHeldEvents: 10 * settings.batchEvents };
  const groundOf = (deviceId: string) => ports.lookups.groundOf(deviceId);
  // Every lane's saves and delivery marks, grouped into one write each.
  const journal = groupedJournal(ports.registry, clock);
  // One parse of a record of topic events for all the integrations reading it.
  const parses = new SharedParses();
  // What deliveries give way to: the engine's backlog, or uplinks coming in while this thread has
  // no time to spare (an edge in the same process, answering as fast as it can).
  const engine = options.engine;
  const ingestion = engine === undefined ? undefined : new IngestionBusy({
    clock,
    inFlight: () => engine.stats.inFlight,
    received: () => engine.stats.received,
    utilization: loopUtilization(),
  });
  const busy = ingestion === undefined ? undefined : () => ingestion.busy();
  const delivery = (integration: Integration) => new IntegrationDelivery({
    integration,
    log: w.log,
    topic: ports.names.events,
    groupPrefix: ports.names.integrationGroupPrefix,
    clock,
    journal,
    transport: sender,
    secrets: (id) => ports.registry.integrationSecrets(id),
    groundOf,
    schedule,
    batching,
    parses,
    hooks: w.metrics.integrations.hooks(integration.kind, () => clock.now()),
    busy,
    logger,
  });
  const deliveries = new Deliveries({ registry: ports.registry, delivery, deleteGroup: (group) => ports.log.deleteGroup(group), groupPrefix: ports.names.integrationGroupPrefix, logger });
  w.metrics.integrations.watch(deliveries);
  let stopListening: () => unknown = () => undefined;
  let started = false;
  return {
    deliveries,
    async start() {
      stopListening = ports.registryChanges.add((change) => deliveries.changed(change));
      await deliveries.start();
      started = true;
    },
    async stop() {
      stopListening();
      await deliveries.stop();
      sender.close();
    },
    ready: () => started,
  };
}
