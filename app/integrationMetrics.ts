/**
 * Integrations' metrics (docs/integrations.md, "Observe"): by kind of integration (`webhook`),
 * never by integration id — an id per label would grow without bound. Per integration, the same
 * figures are in `GET /integrations/{id}`.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { LaneHooks } from '../engine/integrations/DeliveryLane.ts';
import { children, liveGauge } from './metricKinds.ts';

/** Seconds from a batch's first attempt to its delivery: milliseconds when receivers answer, up to the retry window. */
const DELIVERY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120, 600, 3600, 21_600, 86_400];

export interface IntegrationFigures {
  /** Integrations this process delivers. */
  readonly active: number;
  /** Events gathered and not yet delivered here. */
  readonly held: number;
}

export interface IntegrationMetrics {
  /** Hooks of one integration's deliveries, counted under its kind. */
  hooks(kind: string, now: () => number): LaneHooks;
  watch(figures: IntegrationFigures): void;
}

export function integrationMetrics(registry: Registry): IntegrationMetrics {
  const registers = [registry];
  const delivered = new Counter({ name: 'fleetstream_integration_events_delivered_total', help: 'Events delivered to integrations (2xx)', labelNames: ['kind'], registers });
  const requests = new Counter({ name: 'fleetstream_integration_requests_total', help: 'Delivery requests by outcome: delivered, failed (retried), disabled (410)', labelNames: ['kind', 'outcome'], registers });
  const dropped = new Counter({ name: 'fleetstream_integration_events_dropped_total', help: 'Events never delivered: retried past the retry window, or lost to the log\'s retention', labelNames: ['kind'], registers });
  const malformed = new Counter({ name: 'fleetstream_integration_records_malformed_total', help: 'Records of topic events that were not events of their device, skipped', labelNames: ['kind'], registers });
  const repeated = new Counter({ name: 'fleetstream_integration_records_repeated_total', help: 'Records of topic events the engine wrote again after a crash, recognised by their source and not sent again', labelNames: ['kind'], registers });
  const latency = new Histogram({ name: 'fleetstream_integration_delivery_seconds', help: 'From a batch\'s first attempt to its delivery', labelNames: ['kind'], buckets: DELIVERY_BUCKETS, registers });
  const deliveredOf = children((kind) => delivered.labels(kind));
  const requestsOf = children((kind, outcome) => requests.labels(kind, outcome));
  const droppedOf = children((kind) => dropped.labels(kind));
  const malformedOf = children((kind) => malformed.labels(kind));
  const latencyOf = children((kind) => latency.labels(kind));
  const repeatedOf = children((kind) => repeated.labels(kind));
  return {
    hooks: (kind, now) => ({
      delivered(events, batch) {
        deliveredOf(kind).inc(events);
        requestsOf(kind, 'delivered').inc();
        latencyOf(kind).observe(Math.max(0, now() - batch.createdAt) / 1000);
      },
      failedAttempt: () => requestsOf(kind, 'failed').inc(),
      dropped: (events) => droppedOf(kind).inc(events),
      disabled: () => requestsOf(kind, 'disabled').inc(),
      malformed: () => malformedOf(kind).inc(),
      repeated: () => repeatedOf(kind).inc(),
    }),
    watch(figures) {
      liveGauge(registry, 'fleetstream_integrations_active', 'Integrations this process delivers', () => figures.active);
      liveGauge(registry, 'fleetstream_integration_events_held', 'Events gathered for integrations and not yet delivered, in this process', () => figures.held);
    },
  };
}
