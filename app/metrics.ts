/**
 * Every Prometheus metric of a Fleetstream process, named here and nowhere else (CONVENTIONS:
 * instrumentation that costs nothing when nobody listens). Two ways in, neither on the engine's
 * per-record path:
 * - what the engine already counts in plain numbers (pipeline stats, device actors, MQTT edge
 *   stats, in-flight uplinks) is read when Prometheus scrapes, in `collect()`;
 * - what it does not count is observed here by wrapping ports from outside: admission outcomes,
 *   log appends, store inserts, recorded rejections, command transitions, HTTP requests. Each costs
 *   a cached counter child's increment per call (per batch for appends and inserts).
 * The engine never imports prom-client (test/engine/kernel/engine-boundary.test.ts). Each service has its own
 * registry, so several services in one process (the tests) do not share counters.
 */
import type { RegistryChange } from '../engine/ports/registryChanges.ts';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Log } from '../engine/ports/log.ts';
import type { RejectionStore } from '../engine/ports/rejections.ts';
import type { StateStore } from '../engine/ports/store.ts';
import type { UplinkAdmissionPort } from '../engine/ports/uplinkAdmission.ts';
import type { UplinkPipeline } from '../engine/uplink/pipeline/UplinkPipeline.ts';
import type { DeviceActors } from '../engine/actors/DeviceActors.ts';
import type { CommandView } from '../schemas/commands.ts';
import { children } from './metricKinds.ts';
import { integrationMetrics, type IntegrationMetrics } from './integrationMetrics.ts';
import { watchEngine, watchLive, watchMqtt, watchRegistryChanges, type LiveFigures, type MqttFigures, type RegistryChangesLink } from './metricsWatch.ts';

export type { LiveFigures, MqttFigures, RegistryChangesLink } from './metricsWatch.ts';

/** Seconds; store inserts and log appends of a healthy node take milliseconds, an outage seconds. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH_BUCKETS = [1, 10, 100, 500, 1000, 2500, 5000, 10_000, 20_000, 40_000, 80_000];
/** Commands wait for offline devices: seconds up to their expiry (a day by default). */
const DELIVERY_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, 3600, 21_600, 86_400];
/** Queued commands remembered for their delivery latency; beyond this the oldest are forgotten. */
const MAX_TRACKED_COMMANDS = 100_000;

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
  watchEngine(pipeline: UplinkPipeline<DeviceActors>, log: Pick<Log, 'endOffsets' | 'committed'>, group: string): void;
  watchMqtt(stats: MqttFigures): void;
  /**
   * Registry changes this process heard (its own and others'), by kind, each counted by the
   * returned consumer; with `link`, the figures of its connection to the other processes
   * (PostgreSQL LISTEN/NOTIFY), read at scrape time.
   */
  watchRegistryChanges(link?: RegistryChangesLink): (change: RegistryChange) => void;
  /** Live data: events published on topic `live`, and (edges) events read, subscriptions, slow subscribers dropped. */
  watchLive(figures: LiveFigures): void;
  /** Integrations' deliveries, by kind (app/integrationMetrics.ts). */
  readonly integrations: IntegrationMetrics;
  /** The exposition text for GET /metrics. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

const seconds = (startedAt: number) => (performance.now() - startedAt) / 1000;

export function createMetrics(options: { defaultMetrics?: boolean } = {}): ServiceMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'fleetstream_' });
  return {
    registry,
    ...admissionMetrics(registry),
    ...portMetrics(registry),
    ...commandMetrics(registry),
    ...httpMetrics(registry),
    watchEngine: (pipeline, log, group) => watchEngine(registry, pipeline, log, group),
    watchRegistryChanges: (link) => watchRegistryChanges(registry, link),
    watchMqtt: (stats) => watchMqtt(registry, stats),
    watchLive: (figures) => watchLive(registry, figures),
    integrations: integrationMetrics(registry),
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

/** Uplinks received, admitted and refused, by channel (and code). */
function admissionMetrics(registry: Registry): Pick<ServiceMetrics, 'admission'> {
  const registers = [registry];
  const received = new Counter({ name: 'fleetstream_uplinks_received_total', help: 'Uplinks handed to admission by an edge', labelNames: ['channel'], registers });
  const admitted = new Counter({ name: 'fleetstream_uplinks_admitted_total', help: 'Uplinks admitted: durable on topic uplinks', labelNames: ['channel'], registers });
  const refused = new Counter({ name: 'fleetstream_uplinks_refused_total', help: 'Uplinks refused at admission, by the code of their first rejection', labelNames: ['channel', 'code'], registers });
  const receivedOf = children((channel) => received.labels(channel));
  const admittedOf = children((channel) => admitted.labels(channel));
  const refusedOf = children((channel, code) => refused.labels(channel, code));
  const counted = (channel: string, outcome: Awaited<ReturnType<UplinkAdmissionPort['admit']>>) => {
    if (outcome.status === 'accepted') admittedOf(channel).inc();
    else refusedOf(channel, outcome.rejections[0]?.code ?? 'UNKNOWN').inc();
    return outcome;
  };
  return {
    admission: (port) => ({
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
    }),
  };
}

/** Log appends, store inserts and recorded rejections, timed and counted around their ports. */
function portMetrics(registry: Registry): Pick<ServiceMetrics, 'log' | 'store' | 'rejections'> {
  const registers = [registry];
  const appendDuration = new Histogram({ name: 'fleetstream_log_append_duration_seconds', help: 'Log appends until durable', labelNames: ['topic'], buckets: LATENCY_BUCKETS, registers });
  const appendOf = children((topic) => appendDuration.labels(topic));
  const insertDuration = new Histogram({ name: 'fleetstream_store_insert_duration_seconds', help: 'State store inserts until durable', buckets: LATENCY_BUCKETS, registers });
  const insertRows = new Histogram({ name: 'fleetstream_store_insert_rows', help: 'Rows (data points) per state store insert', buckets: BATCH_BUCKETS, registers });
  const pointsStored = new Counter({ name: 'fleetstream_data_points_stored_total', help: 'States (data points) durable in the state store', registers });
  const insertFailures = new Counter({ name: 'fleetstream_store_insert_failures_total', help: 'State store inserts that failed (retried by the batcher)', registers });
  const deadLetters = new Counter({ name: 'fleetstream_dead_letters_total', help: 'Rejections recorded (dead letters), by code', labelNames: ['code'], registers });
  const deadLettersOf = children((code) => deadLetters.labels(code));
  return {
    log: (log) => ({
      ensureTopics: (topics) => log.ensureTopics(topics),
      partitionCount: (topic) => log.partitionCount(topic),
      consumer: (consumerOptions) => log.consumer(consumerOptions),
      committed: (group, topic, partition) => log.committed(group, topic, partition),
      endOffsets: (topic) => log.endOffsets(topic),
      startOffsets: (topic) => log.startOffsets(topic),
      deleteGroup: (group) => log.deleteGroup(group),
      close: () => log.close(),
      async append(topic, records) {
        const startedAt = performance.now();
        const positions = await log.append(topic, records);
        appendOf(topic).observe(seconds(startedAt));
        return positions;
      },
    }),
    store: (store) => ({
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
    }),
    rejections: (rejections) => ({
      async append(rows) {
        await rejections.append(rows);
        for (const row of rows) deadLettersOf(row.code).inc();
      },
    }),
  };
}

/** Command lifecycle changes, and the delivery latency of queued commands. */
function commandMetrics(registry: Registry): Pick<ServiceMetrics, 'commandChanged'> {
  const registers = [registry];
  const commandTransitions = new Counter({ name: 'fleetstream_command_transitions_total', help: 'Command lifecycle changes, by the status reached', labelNames: ['status'], registers });
  const transitionOf = children((status) => commandTransitions.labels(status));
  const deliverySeconds = new Histogram({ name: 'fleetstream_command_delivery_seconds', help: 'From a command queued to delivered', buckets: DELIVERY_BUCKETS, registers });
  const queuedAt = new Map<string, number>();
  return {
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
  };
}

function httpMetrics(registry: Registry): Pick<ServiceMetrics, 'httpRequest'> {
  const registers = [registry];
  const httpRequests = new Counter({ name: 'fleetstream_http_requests_total', help: 'HTTP requests answered, by route template and status', labelNames: ['method', 'route', 'status'], registers });
  const httpDuration = new Histogram({ name: 'fleetstream_http_request_duration_seconds', help: 'HTTP request handling time, by route template', labelNames: ['method', 'route'], buckets: LATENCY_BUCKETS, registers });
  const requestsOf = children((method, route, status) => httpRequests.labels(method, route, status));
  const durationOf = children((method, route) => httpDuration.labels(method, route));
  return {
    httpRequest(method, route, status, elapsed) {
      requestsOf(method, route, String(status)).inc();
      durationOf(method, route).observe(elapsed);
    },
  };
}
