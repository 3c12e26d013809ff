/**
 * What `fleetstream start` tells a person at a terminal once the service is up: where HTTP, the
 * console and MQTT listen, and the next command to run. Logs for machines stay JSON (bin/
 * fleetstream.ts picks the format); these lines are only printed for a terminal.
 */
import type { Config } from '../schemas/config.ts';

export interface StartupFacts {
  config: Config;
  httpPort: number | undefined;
  mqttPort: number | undefined;
  probesPort: number | undefined;
  /** The bound port of the metrics listener; none with --metrics-port -1. */
  metricsPort?: number;
  /** The bound port of the SQL listener; none unless --sql-port is given. */
  sqlPort?: number;
  /** The data directory, absolute. */
  dataDir: string;
}

/** The HTTP base URL a person on this machine opens for a listen address and port. */
export function httpBaseOf(host: string, port: number): string {
  return `http://${reachable(host)}:${port}`;
}

/** The embedded MQTT edge's URL a device on this machine connects to (TLS: mqtts). */
export function mqttUrlOf(host: string, port: number, tls: boolean): string {
  return `mqtt${tls ? 's' : ''}://${reachable(host)}:${port}`;
}

/** A wildcard listen address is reached on this machine as localhost. */
function reachable(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

export function startupLines(facts: StartupFacts): string[] {
  const { config } = facts;
  const embedded = [
    config.kafkaBrokers ? 'Kafka' : 'local log',
    config.clickhouseUrl ? 'ClickHouse server' : 'chDB',
    config.databaseUrl ? 'PostgreSQL' : 'PGlite',
  ].join(', ');
  const lines = [`Fleetstream is running (role ${config.role}; ${embedded}; data in ${facts.dataDir})`];
  if (facts.httpPort !== undefined) {
    const base = httpBaseOf(config.http.host, facts.httpPort);
    lines.push(`  Console   ${base}/console/`);
    lines.push(`  HTTP API  ${base}   (described at ${base}/openapi.json)`);
  }
  if (config.mqtt.url && config.role !== 'engine') lines.push(`  MQTT      external broker ${redact(config.mqtt.url)}`);
  else if (facts.mqttPort !== undefined) lines.push(`  MQTT      ${mqttUrlOf(config.mqtt.host, facts.mqttPort, config.mqtt.tlsCertFile !== undefined)}   (username: a device token)`);
  if (facts.probesPort !== undefined) lines.push(`  Probes    http://${reachable(config.http.host)}:${facts.probesPort}/ready   (engine only: no HTTP API here)`);
  if (facts.metricsPort !== undefined) lines.push(`  Metrics   http://${reachable(config.metrics.host)}:${facts.metricsPort}/metrics   (Prometheus; --metrics-host, --metrics-port)`);
  if (facts.sqlPort !== undefined) lines.push(`  SQL       http://${reachable(config.sql?.host ?? '127.0.0.1')}:${facts.sqlPort}/   (ClickHouse HTTP, read-only, user ${config.sql?.user ?? 'default'}; docs/analytics.md)`);
  if (facts.httpPort !== undefined) {
    // `npm run quickstart` = `fleetstream admin quickstart --demo` (package.json).
    const dataDirFlag = config.dataDir === './data' ? '' : ` -- --data-dir ${facts.dataDir}`;
    lines.push('Next, in another terminal: a user, a ground and a demo device that sends states and answers commands:');
    lines.push(`  npm run quickstart${dataDirFlag}`);
  }
  lines.push('Stop with Ctrl-C. Logs for machines: --log-format json (LOG_FORMAT=json).');
  return lines;
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}
