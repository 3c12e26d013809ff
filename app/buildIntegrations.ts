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

/** Uplinks in flight in the engine past which deliveries give way (IntegrationDelivery busy). */
const BUSY_IN_FLIGHT = 2000;
const BUSY_HOLD_MS = 1000;

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
  // Busy from when the engine was last seen with more in flight than that, for BUSY_HOLD_MS: its
  // in-flight count dips each time a large store insert completes, and deliveries must not take
  // those moments as idle.
  let busySeenAt = Number.NEGATIVE_INFINITY;
  const busy = options.engine === undefined ? undefined : () => {
    if (options.engine!.stats.inFlight > BUSY_IN_FLIGHT) busySeenAt = clock.now();
    return clock.now() - busySeenAt < BUSY_HOLD_MS;
  };
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
