/**
 * The edge of a service process (role edge or all): its reader of topic `live`, the intake every
 * channel hands uplinks to, the MQTT gateway (its command transport offered to the command owners:
 * CommandRoutes) and the HTTP edge, started in that order and stopped in reverse.
 */
import type { Alarm } from '../engine/ports/alarmRegistry.ts';
import { alarmEvent, alarmEventsRecord } from '../engine/events/eventRecords.ts';
import { toFleetError } from '../engine/kernel/errors.ts';
import type { LiveHub } from '../engine/live/LiveHub.ts';
import { EdgePresence } from '../engine/connectivity/EdgePresence.ts';
import { newId } from '../engine/kernel/ids.ts';
import type { UplinkAdmissionPort } from '../engine/ports/uplinkAdmission.ts';
import type { EdgeCommands } from '../adapters/http/routes/commands/commandRoutes.ts';
import { edgeCommands, type Reservations } from './buildCommands.ts';
import type { CommandRoutes } from './commandRoutes.ts';
import { serveHttpEdge, startMqttEdge, type MqttGateway } from './buildEdges.ts';
import { buildIntake, type Intake } from './buildIntake.ts';
import { followGroundRates } from './groundRates.ts';
import { Closers } from './Closers.ts';
import { atWindowOf } from './deviceCompiler.ts';
import { listening } from './portInUse.ts';
import type { Role } from './Role.ts';
import type { Wiring } from './wiring.ts';

export interface EdgeRole extends Role {
  readonly hub: LiveHub;
  /** Once started. */
  readonly intake: Intake | undefined;
  readonly commands: EdgeCommands | undefined;
  readonly httpPort: number | undefined;
  /** The bound port of the embedded MQTT edge (none with an external broker or port -1). */
  readonly mqttPort: number | undefined;
  /** The MQTT gateway, once started (none with port -1). */
  readonly mqtt: MqttGateway | undefined;
}

export interface EdgeRoleOptions {
  /** The process's readiness, which GET /ready answers. */
  ready(): boolean;
  /** Where this edge's MQTT transport is offered to the command owners. */
  routes: CommandRoutes;
  /** The command actors, when they read every command record (the local log): HTTP reserves a place before the append. */
  reserve?: Reservations;
}

export function edgeRole(w: Wiring, options: EdgeRoleOptions): EdgeRole {
  const hub = w.hub;
  if (hub === undefined) throw new TypeError('edgeRole: the wiring of a process without an edge');
  const closers = new Closers(w.logger);
  let intake: Intake | undefined;
  let commands: EdgeCommands | undefined;
  let httpPort: number | undefined;
  let mqttPort: number | undefined;
  let gateway: MqttGateway | undefined;
  let started = false;

  const start = async () => {
    await hub.start();
    closers.add('live hub', () => hub.stop());
    // Streams of a revoked token, a deleted device or a user who left the ground end at once.
    closers.add('live registry changes', w.ports.registryChanges.add((change) => hub.apply(change)));
    w.metrics.watchLive({ publisher: w.live, hub });
    // The edge's lease: its MQTT sessions count while it is alive, and the grounds' rates are shared by the live edges.
    const presence = await startPresence(w, closers);
    const rates = followGroundRates(w.ports, w.clock, w.logger);
    await rates.start();
    closers.add('ground rates', async () => rates.stop());
    const edgeIntake = buildIntake({
      log: w.log, clock: w.clock, rejections: w.rejections, topics: w.ports.names, logger: w.logger, atWindow: atWindowOf(w.config),
      onDeadLetters: (letters) => w.live.rejections(letters),
      events: w.events,
      quota: rates.rates,
    });
    intake = edgeIntake;
    closers.add('intake', () => edgeIntake.close());
    const admission = w.metrics.admission(edgeIntake.admission);
    const mqtt = gateway = await startGateway(w, admission, presence, closers);
    mqttPort = mqtt?.port;
    if (mqtt !== undefined) {
      const attached = options.routes.attach(mqtt.commands, mqtt.port === undefined);
      await attached.start();
      closers.add('command deliveries', () => attached.stop());
    }
    commands = edgeCommands({ log: w.log, names: w.ports.names, history: w.ports.store.commands, reserve: options.reserve });
    httpPort = await startHttp(w, { admission, commands, ready: options.ready }, closers);
    // Before the server closes (closers run in reverse): open streams never end by themselves.
    closers.add('live streams', () => hub.stop());
    started = true;
  };

  return {
    hub,
    get intake() { return intake; },
    get commands() { return commands; },
    get httpPort() { return httpPort; },
    get mqttPort() { return mqttPort; },
    get mqtt() { return gateway; },
    start,
    stop: () => closers.closeAll(),
    ready: () => started,
  };
}

/**
 * The edge's lease in the registry, under an edge id of its own (each edge worker is an edge): the
 * grounds' rates are shared by the live edges (engine/quotas/GroundRates.ts), and an embedded MQTT
 * edge records its devices' sessions under it (GET /device/{id} `connected`, on any edge).
 */
async function startPresence(w: Wiring, closers: Closers): Promise<EdgePresence> {
  const presence = new EdgePresence({
    registry: w.ports.registry, clock: w.clock, edgeId: newId(), leaseMs: w.config.mqtt.edgeLeaseMs,
    onError: (error, what) => w.logger.warn(what === 'lease' ? 'the edge lease was not renewed' : 'MQTT sessions not recorded yet; retrying', { error }),
  });
  await presence.start();
  // Closed after the gateway (closers run in reverse): its connections are gone, then its lease.
  closers.add('edge lease', () => presence.stop());
  return presence;
}

/** The MQTT gateway the configuration asks for, its stats watched and feeds followed. */
async function startGateway(w: Wiring, admission: UplinkAdmissionPort, edgePresence: EdgePresence, closers: Closers): Promise<MqttGateway | undefined> {
  const { config, ports } = w;
  const presence = config.mqtt.url === undefined && config.mqtt.port >= 0 ? edgePresence : undefined;
  const mqtt = await listening({ name: 'MQTT', setting: 'mqtt-port', host: config.mqtt.host, port: config.mqtt.port, hint: 'or --mqtt-port=-1 to run without the embedded MQTT edge' },
    () => startMqttEdge({
      config, registry: ports.registry, lookups: ports.lookups, admission, clock: w.clock, logger: w.logger,
      // An embedded edge worker: its primary accepts MQTT connections and hands each to the worker of its client id.
      embedded: { handedOver: w.workers !== undefined && 'index' in w.workers && !w.usesKafka, presence, readingLive: () => w.hub!.readingFromNow() },
    }));
  if (mqtt === undefined) return undefined;
  w.metrics.watchMqtt(mqtt.stats);
  closers.add('mqtt', () => mqtt.close());
  // Connections of a revoked token, a deleted device or a user who left the ground close.
  const apply = mqtt.apply;
  if (apply !== undefined) closers.add('mqtt registry changes', ports.registryChanges.add((change) => apply(change)));
  // Feeds (device/<id>/asset/<name>/feed): states stored by any engine, read from topic `live`.
  w.hub!.followStates((rows) => mqtt.publishStates(rows), () => mqtt.followsFeeds());
  // Alarm topics (device/<id>/asset/<name>/alarm) of the embedded edge: alarm changes read from topic `live`.
  const { publishAlarms, followsAlarms } = mqtt;
  if (publishAlarms !== undefined && followsAlarms !== undefined) w.hub!.followAlarms((alarms) => publishAlarms(alarms), () => followsAlarms());
  return mqtt;
}

async function startHttp(w: Wiring, edge: { admission: UplinkAdmissionPort; commands: EdgeCommands; ready(): boolean }, closers: Closers): Promise<number> {
  const { config, ports, metrics } = w;
  const served = await listening({ name: 'HTTP', setting: 'port', host: config.http.host, port: config.http.port }, () => serveHttpEdge({
    config, registry: ports.registry, lookups: ports.lookups, registryChanges: ports.registryChanges, store: ports.store, exports: ports.exports, clock: w.clock, logger: w.logger,
    admission: edge.admission, commands: edge.commands, lpwanApplications: ports.lpwanApplications,
    observe: { ready: edge.ready, metrics: w.metricsToken, onRequest: (method, route, status, seconds) => metrics.httpRequest(method, route, status, seconds) },
    live: w.hub,
    alarmChanged: (change, alarm, by) => memberChangedAlarm(w, change, alarm, by),
  }));
  closers.add('http', () => served.close());
  return served.port;
}

/**
 * A member acknowledged or cleared an alarm: an `alarm` event on topic `live` and, while it is
 * written, on topic `events`, for the integrations taking alarm events and those its rule names.
 */
function memberChangedAlarm(w: Wiring, change: 'acknowledged' | 'cleared', alarm: Alarm, by: string): void {
  w.live.alarm(change, alarm, by);
  if (!w.events.wanted) return;
  void (async () => {
    const rule = await w.ports.registry.getRule(alarm.ruleId).catch(() => undefined);
    const integrations = rule?.actions.flatMap((action) => ('integration' in action ? [action.integration] : [])) ?? [];
    await w.events.add(alarmEventsRecord([alarmEvent(alarm, change, integrations, w.clock.now())], w.clock.now()));
  })().catch((error: unknown) => w.logger.warn('an alarm event was not written to topic events', { error: toFleetError(error) }));
}
