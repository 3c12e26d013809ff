/**
 * The small parts of a service process around its roles: the metrics listener, the SQL listener,
 * the probes of a process without an HTTP edge, the admin socket, and the line that says what started.
 */
import type { Config } from '../schemas/config.ts';
import type { Logger } from '../engine/kernel/logger.ts';
import type { Registry } from '../engine/ports/registry.ts';
import { serveAdminSocket, type AdminSocket } from './adminSocket.ts';
import type { ServiceMetrics } from './metrics.ts';
import { listening } from './portInUse.ts';
import { serveMetrics, type ServedMetrics } from './serveMetrics.ts';
import { serveProbes, type ServedProbes } from './serveProbes.ts';
import { httpBaseOf, mqttUrlOf } from './startupLines.ts';
import type { Wiring } from './wiring.ts';
import { createChdbReadOnlySql } from '../adapters/chdb/createChdbReadOnlySql.ts';
import type { ReadOnlySql } from '../adapters/clickhouse-http/ReadOnlySql.ts';
import { serveClickHouseHttp, type ServedClickHouseHttp } from '../adapters/clickhouse-http/serveClickHouseHttp.ts';
import { dataPaths } from './openPorts.ts';

/** Read-only SQL on the embedded store, in the process holding its chDB directory; none on a ClickHouse server. */
export function embeddedSql(config: Config): ReadOnlySql | undefined {
  return config.clickhouseUrl ? undefined : createChdbReadOnlySql({ dir: dataPaths(config.dataDir).chdb });
}

/** The SQL listener, when a port is given (loadConfig has checked the password and the store). */
export async function startSqlListener(config: Config, sql: ReadOnlySql | undefined): Promise<ServedClickHouseHttp | undefined> {
  const settings = config.sql;
  if (settings === undefined || settings.port < 0 || sql === undefined || settings.password === undefined) return undefined;
  const { host, port, user, password } = settings;
  return listening(
    { name: 'SQL', setting: 'sql-port', host, port, hint: 'or leave --sql-port unset to run without the SQL listener' },
    () => serveClickHouseHttp({ host, port, user, password, sql }),
  );
}

/** The metrics listener, unless its port is -1. */
export async function startMetricsListener(config: Config, metrics: Pick<ServiceMetrics, 'scrape'>): Promise<ServedMetrics | undefined> {
  if (config.metrics.port < 0) return undefined;
  return listening(
    { name: 'metrics', setting: 'metrics-port', host: config.metrics.host, port: config.metrics.port, hint: 'or --metrics-port=-1 to run without the metrics listener' },
    () => serveMetrics({ host: config.metrics.host, port: config.metrics.port, scrape: () => metrics.scrape() }),
  );
}

/** /health and /ready of a process that runs no HTTP edge, up before its engine joins its group (/ready 503 until partitions come). */
export function startProbes(w: Wiring, probes: { alive(): boolean; ready(): boolean }): Promise<ServedProbes> {
  const { http } = w.config;
  return listening({ name: 'HTTP (probes)', setting: 'port', host: http.host, port: http.port }, () => serveProbes({
    port: http.port, host: http.host, alive: probes.alive, ready: probes.ready, metrics: w.metricsToken,
  }));
}

/** The admin socket of a process on the embedded registry (one process per data dir); none on PostgreSQL. */
export async function startAdminSocket(w: Wiring, registry: Registry, ports: { httpPort?: number; mqttPort?: number }, sql?: ReadOnlySql): Promise<AdminSocket | undefined> {
  const { config } = w;
  if (config.databaseUrl) return undefined;
  const context = {
    ...(ports.httpPort === undefined ? {} : { httpBase: httpBaseOf(config.http.host, ports.httpPort) }),
    // The embedded MQTT edge only: an external broker's URL may carry its credentials.
    ...(ports.mqttPort === undefined || config.mqtt.url ? {} : { mqttUrl: mqttUrlOf(config.mqtt.host, ports.mqttPort, config.mqtt.tlsCertFile !== undefined) }),
    clock: w.clock,
  };
  return serveAdminSocket({ path: w.ports.paths.adminSocket, registry, context, sql, logger: w.logger });
}

export function logStarted(logger: Logger, config: Config, message: string, started: {
  root: string; httpPort?: number; probesPort?: number; metricsPort?: number; mqttPort?: number; sqlPort?: number; metricsToken: boolean;
}): void {
  const runsEdge = config.role !== 'engine';
  logger.info(message, {
    role: config.role,
    pid: process.pid,
    http: started.httpPort !== undefined ? `${config.http.host}:${started.httpPort}` : undefined,
    probes: started.probesPort !== undefined ? `${config.http.host}:${started.probesPort} (/health, /ready${started.metricsToken ? ', /metrics with the metrics token' : ''})` : undefined,
    metrics: started.metricsPort !== undefined ? `${config.metrics.host}:${started.metricsPort}` : undefined,
    sql: started.sqlPort !== undefined ? `${config.sql?.host}:${started.sqlPort}` : undefined,
    mqtt: config.mqtt.url && runsEdge ? 'external broker' : started.mqttPort !== undefined ? `${config.mqtt.host}:${started.mqttPort}` : undefined,
    log: config.kafkaBrokers ? 'kafka' : 'local',
    store: config.clickhouseUrl ? 'clickhouse' : 'chdb',
    registry: config.databaseUrl ? 'postgres' : 'pglite',
    dataDir: started.root,
  });
}
