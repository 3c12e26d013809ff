/**
 * The device-facing edges of a process: the MQTT gateway (embedded, or a client of an external
 * broker) and the HTTP edge with its LPWAN webhooks, all handing uplinks to the one admission step.
 */
import type { EdgeCoreDeps } from '../adapters/http/EdgeContext.ts';
import { atWindowOf } from './deviceCompiler.ts';
import { readFileSync } from 'node:fs';
import type { Clock } from '../engine/kernel/clock.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import { LpwanUplinkIntake } from '../engine/lpwan/LpwanUplinkIntake.ts';
import type { StaticLpwanApplications } from '../engine/lpwan/StaticLpwanApplications.ts';
import type { Registry } from '../engine/ports/registry.ts';
import type { RegistryLookups } from '../engine/access/RegistryLookups.ts';
import type { RegistryChangeFanOut } from './RegistryChangeFanOut.ts';
import type { UplinkAdmissionPort } from '../engine/ports/uplinkAdmission.ts';
import type { EdgeCommands } from '../adapters/http/routes/commands/commandRoutes.ts';
import { AuditRecorder } from '../engine/audit/AuditRecorder.ts';
import { createEdgeApp, type EdgeObserver } from '../adapters/http/createEdgeApp.ts';
import { serveEdge, type ServedEdge } from '../adapters/http/serveEdge.ts';
import { EdgeAccess } from '../adapters/http/EdgeAccess.ts';
import { LiveConnections, type LiveSource } from '../adapters/http/live/liveRoutes.ts';
import { createLiveSocket } from '../adapters/http/live/liveSocket.ts';
import { createExternalMqtt, type ExternalMqtt, type ExternalMqttOptions } from '../adapters/mqtt/external/createExternalMqtt.ts';
import { createMqttEdge, type MqttEdge, type MqttEdgeOptions } from '../adapters/mqtt/gateway/createMqttEdge.ts';
import { outboundPolicy } from '../adapters/webhooks/OutboundPolicy.ts';
import { checkWebhookUrl } from '../adapters/webhooks/webhookUrl.ts';
import { WebhookSender } from '../adapters/webhooks/WebhookSender.ts';
import type { Config } from '../schemas/config.ts';
import { registryCacheTtlMs, type ServiceStore } from './openPorts.ts';

export type MqttGateway = Pick<MqttEdge, 'commands' | 'publishStates' | 'followsFeeds' | 'close' | 'stats'> & Partial<Pick<MqttEdge, 'port' | 'apply' | 'accept' | 'publishAlarms' | 'followsAlarms'>>;

export { registryCacheTtlMs } from './openPorts.ts';

/**
 * Bounds of the embedded MQTT edge other than the configuration's (createMqttEdge's defaults when
 * absent; docs/mqtt.md), and its certificate as bytes instead of the configuration's files.
 */
export type EmbeddedMqttBounds = Omit<MqttEdgeOptions, 'registry' | 'lookups' | 'changes' | 'cacheTtlMs' | 'admission' | 'clock' | 'port' | 'host' | 'logger'>;

/** Bounds of the client of an external broker other than the configuration's (createExternalMqtt's defaults when absent). */
export type ExternalMqttBounds = Omit<ExternalMqttOptions, 'url' | 'shareGroup' | 'clientIdPrefix' | 'sessionExpirySeconds' | 'registry' | 'lookups' | 'cacheTtlMs' | 'admission' | 'clock' | 'logger'>;

export interface MqttEdgeStart {
  config: Config; registry: Registry; lookups: RegistryLookups; admission: UplinkAdmissionPort; clock: Clock; logger: Logger;
  embedded?: EmbeddedMqttBounds;
  external?: ExternalMqttBounds;
}

/** The MQTT edge the configuration asks for: an external broker (MQTT_URL), the embedded one, or none (port < 0). */
export async function startMqttEdge(options: MqttEdgeStart): Promise<MqttGateway | undefined> {
  if (options.config.mqtt.url) return startExternalMqtt(options);
  if (options.config.mqtt.port < 0) return undefined;
  return startEmbeddedMqttEdge(options);
}

/** The client of the external broker the configuration names (MQTT_URL). */
export function startExternalMqtt(options: MqttEdgeStart): Promise<ExternalMqtt> {
  const { config, registry, lookups, admission, clock, logger } = options;
  const url = config.mqtt.url;
  if (url === undefined) throw new TypeError('startExternalMqtt: the configuration names no broker (mqtt.url)');
  return createExternalMqtt({
    ...options.external,
    url, shareGroup: config.mqtt.shareGroup, clientIdPrefix: config.mqtt.clientId, sessionExpirySeconds: config.mqtt.sessionExpirySeconds,
    registry, lookups, admission, clock, logger, cacheTtlMs: registryCacheTtlMs(config),
  });
}

/**
 * The embedded MQTT edge on the configuration's host and port. Its `apply` is the owner's to call
 * with every registry change (the process's RegistryChangeFanOut), as its lookups are shared.
 */
export function startEmbeddedMqttEdge(options: MqttEdgeStart): Promise<MqttEdge> {
  const { config, registry, lookups, admission, clock, logger } = options;
  const tls = config.mqtt.tlsCertFile && config.mqtt.tlsKeyFile
    ? { cert: readFileSync(config.mqtt.tlsCertFile), key: readFileSync(config.mqtt.tlsKeyFile) }
    : undefined;
  return createMqttEdge({
    tls, ...options.embedded,
    registry, lookups, cacheTtlMs: registryCacheTtlMs(config), admission, clock, port: config.mqtt.port, host: config.mqtt.host, logger,
  });
}

export async function serveHttpEdge(options: {
  config: Config; registry: Registry; lookups: RegistryLookups; registryChanges: RegistryChangeFanOut; store: ServiceStore; clock: Clock; logger: Logger; admission: UplinkAdmissionPort;
  /** State exports; absent: answered 503 EXPORT_UNAVAILABLE. */
  exports?: EdgeCoreDeps['exports'];
  /** Absent: no command routes. */
  commands?: EdgeCommands;
  lpwanApplications: StaticLpwanApplications;
  observe?: EdgeObserver;
  /** Live streams (SSE routes and the /live WebSocket); absent: none. */
  live?: LiveSource;
  /** A member acknowledged or cleared an alarm. */
  alarmChanged?: EdgeCoreDeps['alarmChanged'];
}): Promise<ServedEdge> {
  const { config, registry, store, clock, logger, admission } = options;
  const connections = new LiveConnections(10_000);
  const { lookups } = options;
  const liveAccess = new EdgeAccess({ registry, clock, cacheTtlMs: registryCacheTtlMs(config), lookups });
  // Throws VALIDATION_FAILED naming a bad entry of --integrations-allow-hosts before anything listens.
  const policy = outboundPolicy(config.integrationsAllowHosts ?? []);
  const sender = new WebhookSender({ policy, clock });
  const lpwanIntake = new LpwanUplinkIntake({ devices: registry, admission, clock, atWindow: atWindowOf(config), cacheTtlMs: registryCacheTtlMs(config) });
  const stopLpwanChanges = options.registryChanges.add((change) => lpwanIntake.apply(change));
  const liveSocket = options.live === undefined ? undefined : createLiveSocket({
    hub: options.live,
    access: liveAccess,
    clock,
    connections,
  });
  // The changes made through this edge, written to the registry every 200 ms (docs/grounds.md "Audit log").
  const audit = new AuditRecorder({
    log: registry,
    clock,
    onDropped: (entries, error) => logger.warn('audit entries not recorded', { entries, ...(error === undefined ? { reason: 'the buffer is full' } : { error }) }),
  });
  const app = createEdgeApp({
    registry,
    admission,
    audit,
    store,
    exports: options.exports,
    rejections: store.rejections,
    clock,
    lookups,
    cacheTtlMs: registryCacheTtlMs(config),
    limits: {
      maxBodyBytes: config.http.maxBodyBytes,
      rateLimit: config.http.rateLimitPerSecond > 0 ? { perSecond: config.http.rateLimitPerSecond, burst: config.http.rateLimitBurst } : undefined,
    },
    logger,
    lpwan: { applications: options.lpwanApplications, intake: lpwanIntake },
    commands: options.commands,
    integrations: { checkUrl: (url) => checkWebhookUrl(url, policy), send: (request) => sender.send(request) },
    observe: options.observe,
    // An external broker holds the sessions: the service cannot tell who is connected.
    sessionsSeen: config.mqtt.url === undefined,
    alarmChanged: options.alarmChanged,
    live: options.live === undefined ? undefined : { hub: options.live, connections },
  });
  const served = await serveEdge(app, { port: config.http.port, hostname: config.http.host, onUpgrade: liveSocket?.upgrade });
  return {
    port: served.port,
    async close() {
      // Live connections first: the server waits for open responses, and a stream never ends by itself.
      await liveSocket?.close();
      await served.close();
      await audit.stop();
      stopLpwanChanges();
      sender.close();
    },
  };
}
