/**
 * The figures the engine, the MQTT edge, live data and the registry changes keep themselves, read
 * when Prometheus scrapes (app/metrics.ts names the rest).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Log } from '../engine/ports/log.ts';
import type { RegistryChange } from '../engine/ports/registryChanges.ts';
import type { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import type { DeviceActors } from '../engine/actors/DeviceActors.ts';
import type { PostgresRegistryChangesStats } from '../adapters/registry-changes/PostgresRegistryChanges.ts';
import { children, liveGauge, mirroredCounter } from './metricKinds.ts';

/** The live figures of the MQTT edge (adapters/mqtt createMqttEdge / createExternalMqtt `stats`). */
export interface MqttFigures {
  readonly accepted: number;
  readonly refused: number;
  readonly disconnected: number;
  readonly connectionsRefused?: number;
  readonly connected?: number;
  /** External broker mode: uplinks Fleetstream gave up (failed for good). */
  readonly dropped?: number;
  /** External broker mode: rises of the broker's dropped-messages counter (adapters/mqtt/external/BrokerWatch.ts). */
  readonly brokerDropped?: number;
}

/** The plain counts of engine/live LivePublisher and LiveHub. */
export interface LiveFigures {
  publisher: { readonly published: number; readonly dropped: number; readonly unwatched: number };
  hub?: { readonly eventsIn: number; readonly subscribers: number; readonly subscribersDropped: number; readonly reading: boolean };
}

/** The connection of a process's registry changes to the other processes. */
export interface RegistryChangesLink {
  readonly stats: PostgresRegistryChangesStats;
  readonly connected: boolean;
}

/** The engine's figures: stored data points, actors, mailboxes, in flight, lag. */
export function watchEngine(registry: Registry, pipeline: UplinkPipeline<DeviceActors>, log: Pick<Log, 'endOffsets' | 'committed'>, group: string): void {
  const { stats, actors } = pipeline;
  mirroredCounter(registry, 'fleetstream_engine_uplinks_total', 'Uplinks the engine took from topic uplinks', () => stats.received);
  mirroredCounter(registry, 'fleetstream_engine_rejections_total', 'Rejections the engine made while processing uplinks', () => stats.rejected);
  mirroredCounter(registry, 'fleetstream_actors_created_total', 'Device actors started', () => actors.created);
  mirroredCounter(registry, 'fleetstream_engine_admitted_direct_total', 'Uplinks admitted at the edge, stored without a device actor', () => stats.admittedDirect);
  mirroredCounter(registry, 'fleetstream_actors_passivated_total', 'Device actors passivated after being idle', () => actors.passivated);
  liveGauge(registry, 'fleetstream_actors', 'Device actors alive', () => actors.size);
  liveGauge(registry, 'fleetstream_actor_mailbox_depth', 'Uplinks waiting in device actor mailboxes (all actors)', () => actors.queued);
  liveGauge(registry, 'fleetstream_uplinks_in_flight', 'Uplinks taken from the log and not yet durable', () => stats.inFlight);
  liveGauge(registry, 'fleetstream_engine_up', '1 while the engine makes progress, 0 once it stopped for good', () => (pipeline.failure === undefined ? 1 : 0));
  liveGauge(registry, 'fleetstream_partitions_assigned', 'Partitions of topic uplinks this process holds', () => pipeline.positions().size);
  new Gauge({
    name: 'fleetstream_consumer_lag',
    help: 'Records of a partition not yet stored by this process: end offset minus the stored watermark (the committed offset before the first batch)',
    labelNames: ['topic', 'partition'],
    registers: [registry],
    async collect() {
      this.reset();
      const positions = pipeline.positions();
      if (positions.size === 0) return;
      const topic = pipeline.topic;
      // A log away leaves the lag out of this scrape (Prometheus shows a gap) rather than failing it.
      const ends = await log.endOffsets(topic).catch(() => undefined);
      if (ends === undefined) return;
      await Promise.all([...positions].map(async ([partition, at]) => {
        const position = at ?? await log.committed(group, topic, partition).catch(() => undefined);
        if (position !== undefined) this.set({ topic, partition: String(partition) }, Math.max(0, (ends[partition] ?? 0) - position));
      }));
    },
  });
}

/** Registry changes heard, by kind (the returned consumer counts one); with `link`, its figures. */
export function watchRegistryChanges(registry: Registry, link?: RegistryChangesLink): (change: RegistryChange) => void {
  const heard = new Counter({ name: 'fleetstream_registry_changes_total', help: 'Registry changes heard by this process (its own and other processes\'), by kind', labelNames: ['kind'], registers: [registry] });
  const byKind = children((kind) => heard.labels(kind));
  const count = (change: RegistryChange) => byKind(change.kind).inc();
  if (link === undefined) return count;
  mirroredCounter(registry, 'fleetstream_registry_changes_sent_total', 'Registry change notifications sent to other processes', () => link.stats.sent);
  mirroredCounter(registry, 'fleetstream_registry_changes_ignored_total', 'Notifications on the registry changes channel that were not a change (malformed, forged, oversized)', () => link.stats.ignored);
  mirroredCounter(registry, 'fleetstream_registry_changes_dropped_total', 'Registry changes of this process never sent to the others (queue full while disconnected)', () => link.stats.dropped);
  mirroredCounter(registry, 'fleetstream_registry_changes_reconnects_total', 'Times the registry changes connection was reopened (each followed by a resync)', () => link.stats.reconnects);
  liveGauge(registry, 'fleetstream_registry_changes_connected', '1 while the registry changes connection listens', () => (link.connected ? 1 : 0));
  return count;
}

export function watchMqtt(registry: Registry, stats: MqttFigures): void {
  mirroredCounter(registry, 'fleetstream_mqtt_publishes_accepted_total', 'MQTT publishes admitted', () => stats.accepted);
  mirroredCounter(registry, 'fleetstream_mqtt_refusals_total', 'MQTT publishes and subscriptions refused', () => stats.refused);
  mirroredCounter(registry, 'fleetstream_mqtt_disconnects_total', 'MQTT connections closed by the edge (too many refusals, log unavailable)', () => stats.disconnected);
  mirroredCounter(registry, 'fleetstream_mqtt_connections_refused_total', 'MQTT connections refused at CONNECT', () => stats.connectionsRefused ?? 0);
  liveGauge(registry, 'fleetstream_mqtt_connections', 'MQTT clients connected now', () => stats.connected ?? 0);
  mirroredCounter(registry, 'fleetstream_mqtt_uplinks_dropped_total', 'External broker mode: uplinks given up after failing for good', () => stats.dropped ?? 0);
  mirroredCounter(registry, 'fleetstream_mqtt_broker_dropped_total', 'External broker mode: messages the broker reports dropped ($SYS/broker/publish/messages/dropped, all its clients)', () => stats.brokerDropped ?? 0);
}

export function watchLive(registry: Registry, { publisher, hub }: LiveFigures): void {
  mirroredCounter(registry, 'fleetstream_live_events_published_total', 'Live events (stored states, rejections, command changes) appended to topic live', () => publisher.published);
  mirroredCounter(registry, 'fleetstream_live_events_dropped_total', 'Live events dropped before topic live (publisher full or append failed)', () => publisher.dropped);
  mirroredCounter(registry, 'fleetstream_live_events_unwatched_total', 'Live events not built: nobody could read them (embedded log, no subscription or feed)', () => publisher.unwatched);
  if (hub === undefined) return;
  mirroredCounter(registry, 'fleetstream_live_events_received_total', 'Live events read from topic live by this edge', () => hub.eventsIn);
  mirroredCounter(registry, 'fleetstream_live_subscribers_dropped_total', 'Live subscriptions dropped for not keeping up (overflow)', () => hub.subscribersDropped);
  liveGauge(registry, 'fleetstream_live_subscriptions', 'Live subscriptions (SSE streams and WebSocket subscriptions) open now', () => hub.subscribers);
  liveGauge(registry, 'fleetstream_live_reading', 'Whether this edge reads topic live now (0: on Kafka, nobody listens to it, so it reads none of it)', () => (hub.reading ? 1 : 0));
}
