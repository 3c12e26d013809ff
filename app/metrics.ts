/**
 * Every Prometheus metric of a Fleetstream process, named here and nowhere else (CONVENTIONS:
 * instrumentation that costs nothing when nobody listens). Two ways in, neither on the engine's
 * per-record path:
 * - what the engine already counts in plain numbers (pipeline stats, device actors, MQTT edge
 *   stats, in-flight uplinks) is read when Prometheus scrapes, in `collect()`;
 * - what it does not count is observed here by wrapping ports from outside: admission outcomes,
 *   log appends, store inserts, recorded rejections, command transitions, HTTP requests. Each costs
 *   a cached counter child's increment per call (per batch for appends and inserts).
 * The engine never imports prom-client (test/engine-boundary.test.ts). Each service has its own
 * registry, so several services in one process (the tests) do not share counters.
 */
import type { RegistryChanges } from '../engine/ports/registryChanges.ts';
import type { PostgresRegistryChangesStats } from '../adapters/registry-changes/PostgresRegistryChanges.ts';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Log } from '../engine/ports/log.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { StateStore } from '../engine/ports/store.ts';
import type { UplinkAdmissionPort } from '../engine/ports/uplinkAdmission.ts';
import type { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import type { CommandView } from '../schemas/commands.ts';

/** Seconds; store inserts and log appends of a healthy node take milliseconds, an outage seconds. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH_BUCKETS = [1, 10, 100, 500, 1000, 2500, 5000, 10_000, 20_000, 40_000, 80_000];
/** Commands wait for offline devices: seconds up to their expiry (a day by default). */
const DELIVERY_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, 3600, 21_600, 86_400];
/** Queued commands remembered for their delivery latency; beyond this the oldest are forgotten. */
const MAX_TRACKED_COMMANDS = 100_000;

/** The live figures of the MQTT edge (adapters/mqtt createMqttEdge / createExternalMqtt `stats`). */
export interface MqttFigures {
  readonly accepted: number;
  readonly refused: number;
  readonly disconnected: number;
  readonly connectionsRefused?: number;
  readonly connected?: number;
  /** External broker mode: uplinks Fleetstream gave up (failed for good). */
  readonly dropped?: number;
  /** External broker mode: rises of the broker's dropped-messages counter (adapters/mqtt/BrokerWatch.ts). */
  readonly brokerDropped?: number;
}

/** The plain counts of engine/live LivePublisher and LiveHub. */
export interface LiveFigures {
  publisher: { readonly published: number; readonly dropped: number; readonly unwatched: number };
  hub?: { readonly eventsIn: number; readonly subscribers: number; readonly subscribersDropped: number };
}

export interface ServiceMetrics {
  readonly registry: Registry;
  /** Uplinks received, admitted and refused, by channel (and code), as every edge hands them over. */
  admission(port: UplinkAdmissionPort): UplinkAdmissionPort;
  /** Append latency per topic. */
  log(log: Log): Log;
  /** Insert latency and batch size of the state store. */
  store<S extends Pick<StateStore, 'append'>>(store: S): Pick<StateStore, 'append'>;
  /** Dead letters by code, as they are recorded in the devices' rejections (every channel, both sides). */
  rejections<R extends Pick<RejectionStore, 'append'>>(rejections: R): Pick<RejectionStore, 'append'>;
  /** A command's lifecycle change (CommandActors onChange). */
  commandChanged(view: CommandView): void;
  /** One HTTP request answered: `route` is the route template (/device/:id), never the raw path. */
  httpRequest(method: string, route: string, status: number, seconds: number): void;
  /** The engine's figures, read at scrape time: stored data points, actors, mailboxes, in flight, lag. */
  watchEngine(pipeline: UplinkPipeline, log: Pick<Log, 'endOffsets' | 'committed'>, group: string): void;
  watchMqtt(stats: MqttFigures): void;
  /**
   * Registry changes this process heard (its own and others'), by kind; with `link`, the figures
   * of its connection to the other processes (PostgreSQL LISTEN/NOTIFY), read at scrape time.
   */
  watchRegistryChanges(changes: Pick<RegistryChanges, 'subscribe'>, link?: RegistryChangesLink): void;
  /** Live data: events published on topic `live`, and (edges) events read, subscriptions, slow subscribers dropped. */
  watchLive(figures: LiveFigures): void;
  /** The exposition text for GET /metrics. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

/** Counters mirroring a total the engine keeps itself, read at scrape time. */
function mirroredCounter(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name, help, registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

function liveGauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({ name, help, registers: [registry], collect() { this.set(read()); } });
}

/** Children of a labelled metric, cached by key: no label hashing per increment. */
function children<T>(make: (...values: string[]) => T): (...values: string[]) => T {
  const cache = new Map<string, T>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = cache.get(key);
    if (child === undefined) cache.set(key, child = make(...values));
    return child;
  };
}

const seconds = (startedAt: number) => (performance.now() - startedAt) / 1000;

/** The connection of a process's registry changes to the other processes. */
export interface RegistryChangesLink {
  readonly stats: PostgresRegistryChangesStats;
  readonly connected: boolean;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): ServiceMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'fleetstream_' });
  const registers = [registry];

  const received = new Counter({ name: 'fleetstream_uplinks_received_total', help: 'Uplinks handed to admission by an edge', labelNames: ['channel'], registers });
  const admitted = new Counter({ name: 'fleetstream_uplinks_admitted_total', help: 'Uplinks admitted: durable on topic uplinks', labelNames: ['channel'], registers });
  const refused = new Counter({ name: 'fleetstream_uplinks_refused_total', help: 'Uplinks refused at admission, by the code of their first rejection', labelNames: ['channel', 'code'], registers });
  const receivedOf = children((channel) => received.labels(channel));
  const admittedOf = children((channel) => admitted.labels(channel));
  const refusedOf = children((channel, code) => refused.labels(channel, code));

  const appendDuration = new Histogram({ name: 'fleetstream_log_append_duration_seconds', help: 'Log appends until durable', labelNames: ['topic'], buckets: LATENCY_BUCKETS, registers });
  const appendOf = children((topic) => appendDuration.labels(topic));
  const insertDuration = new Histogram({ name: 'fleetstream_store_insert_duration_seconds', help: 'State store inserts until durable', buckets: LATENCY_BUCKETS, registers });
  const insertRows = new Histogram({ name: 'fleetstream_store_insert_rows', help: 'Rows (data points) per state store insert', buckets: BATCH_BUCKETS, registers });
  const pointsStored = new Counter({ name: 'fleetstream_data_points_stored_total', help: 'States (data points) durable in the state store', registers });
  const insertFailures = new Counter({ name: 'fleetstream_store_insert_failures_total', help: 'State store inserts that failed (retried by the batcher)', registers });

  const deadLetters = new Counter({ name: 'fleetstream_dead_letters_total', help: 'Rejections recorded (dead letters), by code', labelNames: ['code'], registers });
  const deadLettersOf = children((code) => deadLetters.labels(code));

  const commandTransitions = new Counter({ name: 'fleetstream_command_transitions_total', help: 'Command lifecycle changes, by the status reached', labelNames: ['status'], registers });
  const transitionOf = children((status) => commandTransitions.labels(status));
  const deliverySeconds = new Histogram({ name: 'fleetstream_command_delivery_seconds', help: 'From a command queued to delivered', buckets: DELIVERY_BUCKETS, registers });
  const queuedAt = new Map<string, number>();

  const httpRequests = new Counter({ name: 'fleetstream_http_requests_total', help: 'HTTP requests answered, by route template and status', labelNames: ['method', 'route', 'status'], registers });
  const httpDuration = new Histogram({ name: 'fleetstream_http_request_duration_seconds', help: 'HTTP request handling time, by route template', labelNames: ['method', 'route'], buckets: LATENCY_BUCKETS, registers });
  const requestsOf = children((method, route, status) => httpRequests.labels(method, route, status));
  const durationOf = children((method, route) => httpDuration.labels(method, route));

  return {
    registry,

    admission(port) {
      const counted = (channel: string, outcome: Awaited<ReturnType<UplinkAdmissionPort['admit']>>) => {
        if (outcome.status === 'accepted') admittedOf(channel).inc();
        else refusedOf(channel, outcome.rejections[0]?.code ?? 'UNKNOWN').inc();
        return outcome;
      };
      return {
        admit(device, submission) {
          receivedOf(submission.channel).inc();
          return port.admit(device, submission).then((outcome) => counted(submission.channel, outcome));
        },
        admitThen(device, submission, done) {
          receivedOf(submission.channel).inc();
          port.admitThen(device, submission, (error, outcome) => {
            if (outcome !== undefined) counted(submission.channel, outcome);
            done(error, outcome);
          });
        },
        refuse(submission, refusal) {
          receivedOf(submission.channel).inc();
          return port.refuse(submission, refusal).then((outcome) => counted(submission.channel, outcome));
        },
      };
    },

    log(log) {
      return {
        ensureTopics: (topics) => log.ensureTopics(topics),
        partitionCount: (topic) => log.partitionCount(topic),
        consumer: (consumerOptions) => log.consumer(consumerOptions),
        committed: (group, topic, partition) => log.committed(group, topic, partition),
        endOffsets: (topic) => log.endOffsets(topic),
        close: () => log.close(),
        async append(topic, records) {
          const startedAt = performance.now();
          const positions = await log.append(topic, records);
          appendOf(topic).observe(seconds(startedAt));
          return positions;
        },
      };
    },

    store(store) {
      return {
        async append(rows) {
          const startedAt = performance.now();
          try {
            await store.append(rows);
          } catch (error) {
            insertFailures.inc();
            throw error;
          }
          insertDuration.observe(seconds(startedAt));
          insertRows.observe(rows.length);
          pointsStored.inc(rows.length);
        },
      };
    },

    rejections(rejections) {
      return {
        async append(rows) {
          await rejections.append(rows);
          for (const row of rows) deadLettersOf(row.code).inc();
        },
      };
    },

    commandChanged(view) {
      transitionOf(view.status).inc();
      if (view.status === 'queued') {
        if (queuedAt.size >= MAX_TRACKED_COMMANDS) queuedAt.delete(queuedAt.keys().next().value!);
        if (!queuedAt.has(view.id)) queuedAt.set(view.id, view.updatedAt);
        return;
      }
      if (view.status === 'sent') return;
      const since = queuedAt.get(view.id);
      queuedAt.delete(view.id);
      if (view.status === 'delivered' && since !== undefined) deliverySeconds.observe(Math.max(0, view.updatedAt - since) / 1000);
    },

    httpRequest(method, route, status, elapsed) {
      requestsOf(method, route, String(status)).inc();
      durationOf(method, route).observe(elapsed);
    },

    watchEngine(pipeline, log, group) {
      const { stats, actors } = pipeline;
      mirroredCounter(registry, 'fleetstream_engine_uplinks_total', 'Uplinks the engine took from topic uplinks', () => stats.received);
      mirroredCounter(registry, 'fleetstream_engine_rejections_total', 'Rejections the engine made while processing uplinks', () => stats.rejected);
      mirroredCounter(registry, 'fleetstream_actors_created_total', 'Device actors started', () => actors.created);
      mirroredCounter(registry, 'fleetstream_engine_admitted_direct_total', 'Uplinks admitted at the edge, stored without a device actor', () => actors.admittedDirect);
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
        registers,
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
    },

    watchRegistryChanges(changes, link) {
      const heard = new Counter({ name: 'fleetstream_registry_changes_total', help: 'Registry changes heard by this process (its own and other processes\'), by kind', labelNames: ['kind'], registers });
      const byKind = children((kind) => heard.labels(kind));
      changes.subscribe((change) => byKind(change.kind).inc());
      if (link === undefined) return;
      mirroredCounter(registry, 'fleetstream_registry_changes_sent_total', 'Registry change notifications sent to other processes', () => link.stats.sent);
      mirroredCounter(registry, 'fleetstream_registry_changes_ignored_total', 'Notifications on the registry changes channel that were not a change (malformed, forged, oversized)', () => link.stats.ignored);
      mirroredCounter(registry, 'fleetstream_registry_changes_dropped_total', 'Registry changes of this process never sent to the others (queue full while disconnected)', () => link.stats.dropped);
      mirroredCounter(registry, 'fleetstream_registry_changes_reconnects_total', 'Times the registry changes connection was reopened (each followed by a resync)', () => link.stats.reconnects);
      liveGauge(registry, 'fleetstream_registry_changes_connected', '1 while the registry changes connection listens', () => (link.connected ? 1 : 0));
    },

    watchMqtt(stats) {
      mirroredCounter(registry, 'fleetstream_mqtt_publishes_accepted_total', 'MQTT publishes admitted', () => stats.accepted);
      mirroredCounter(registry, 'fleetstream_mqtt_refusals_total', 'MQTT publishes and subscriptions refused', () => stats.refused);
      mirroredCounter(registry, 'fleetstream_mqtt_disconnects_total', 'MQTT connections closed by the edge (too many refusals, log unavailable)', () => stats.disconnected);
      mirroredCounter(registry, 'fleetstream_mqtt_connections_refused_total', 'MQTT connections refused at CONNECT', () => stats.connectionsRefused ?? 0);
      liveGauge(registry, 'fleetstream_mqtt_connections', 'MQTT clients connected now', () => stats.connected ?? 0);
      mirroredCounter(registry, 'fleetstream_mqtt_uplinks_dropped_total', 'External broker mode: uplinks given up after failing for good', () => stats.dropped ?? 0);
      mirroredCounter(registry, 'fleetstream_mqtt_broker_dropped_total', 'External broker mode: messages the broker reports dropped ($SYS/broker/publish/messages/dropped, all its clients)', () => stats.brokerDropped ?? 0);
    },

    watchLive({ publisher, hub }) {
      mirroredCounter(registry, 'fleetstream_live_events_published_total', 'Live events (stored states, rejections, command changes) appended to topic live', () => publisher.published);
      mirroredCounter(registry, 'fleetstream_live_events_dropped_total', 'Live events dropped before topic live (publisher full or append failed)', () => publisher.dropped);
      mirroredCounter(registry, 'fleetstream_live_events_unwatched_total', 'Live events not built: nobody could read them (embedded log, no subscription or feed)', () => publisher.unwatched);
      if (hub === undefined) return;
      mirroredCounter(registry, 'fleetstream_live_events_received_total', 'Live events read from topic live by this edge', () => hub.eventsIn);
      mirroredCounter(registry, 'fleetstream_live_subscribers_dropped_total', 'Live subscriptions dropped for not keeping up (overflow)', () => hub.subscribersDropped);
      liveGauge(registry, 'fleetstream_live_subscriptions', 'Live subscriptions (SSE streams and WebSocket subscriptions) open now', () => hub.subscribers);
    },

    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
