/**
 * Configuration from command-line flags and environment variables, flags winning, validated
 * against schemas/config.ts. The only place that reads process.env is bin/fleetstream.ts, which
 * passes it here.
 */
import { Compile } from 'typebox/compile';
import { FleetError } from '../engine/kernel/errors.ts';
import { Config, defaultConfig } from '../schemas/config.ts';

const checkConfig = Compile(Config);

/** flag name → [environment variable, config path, kind] */
export const settings = {
  role: ['FLEETSTREAM_ROLE', 'role', 'string'],
  'edge-workers': ['EDGE_WORKERS', 'edgeWorkers', 'workers'],
  'data-dir': ['DATA_DIR', 'dataDir', 'string'],
  host: ['HTTP_HOST', 'http.host', 'string'],
  port: ['HTTP_PORT', 'http.port', 'integer'],
  'max-body-bytes': ['MAX_BODY_BYTES', 'http.maxBodyBytes', 'integer'],
  'rate-limit-per-second': ['RATE_LIMIT_PER_SECOND', 'http.rateLimitPerSecond', 'number'],
  'rate-limit-burst': ['RATE_LIMIT_BURST', 'http.rateLimitBurst', 'integer'],
  'mqtt-host': ['MQTT_HOST', 'mqtt.host', 'string'],
  'mqtt-port': ['MQTT_PORT', 'mqtt.port', 'integer'],
  'mqtt-tls-cert': ['MQTT_TLS_CERT_FILE', 'mqtt.tlsCertFile', 'string'],
  'mqtt-tls-key': ['MQTT_TLS_KEY_FILE', 'mqtt.tlsKeyFile', 'string'],
  'mqtt-url': ['MQTT_URL', 'mqtt.url', 'string'],
  'mqtt-share-group': ['MQTT_SHARE_GROUP', 'mqtt.shareGroup', 'string'],
  'mqtt-client-id': ['MQTT_CLIENT_ID', 'mqtt.clientId', 'string'],
  'mqtt-session-expiry': ['MQTT_SESSION_EXPIRY_SECONDS', 'mqtt.sessionExpirySeconds', 'integer'],
  'mqtt-edge-lease-ms': ['MQTT_EDGE_LEASE_MS', 'mqtt.edgeLeaseMs', 'integer'],
  'metrics-host': ['METRICS_HOST', 'metrics.host', 'string'],
  'metrics-port': ['METRICS_PORT', 'metrics.port', 'integer'],
  'metrics-token': ['METRICS_TOKEN', 'metrics.token', 'string'],
  'sql-host': ['SQL_HOST', 'sql.host', 'string'],
  'sql-port': ['SQL_PORT', 'sql.port', 'integer'],
  'sql-user': ['SQL_USER', 'sql.user', 'string'],
  'sql-password': ['SQL_PASSWORD', 'sql.password', 'string'],
  'command-expiry-ms': ['COMMAND_EXPIRY_MS', 'commands.expiryMs', 'integer'],
  'command-queue': ['COMMAND_QUEUE', 'commands.maxQueuePerDevice', 'integer'],
  'kafka-brokers': ['KAFKA_BROKERS', 'kafkaBrokers', 'list'],
  'integrations-allow-hosts': ['INTEGRATIONS_ALLOW_HOSTS', 'integrationsAllowHosts', 'list'],
  'events-topic': ['EVENTS_TOPIC', 'eventsTopic', 'string'],
  'events-retention-hours': ['EVENTS_RETENTION_HOURS', 'eventsRetentionHours', 'integer'],
  'integrations-batch-events': ['INTEGRATIONS_BATCH_EVENTS', 'integrations.batchEvents', 'integer'],
  'integrations-batch-linger-ms': ['INTEGRATIONS_BATCH_LINGER_MS', 'integrations.batchLingerMs', 'integer'],
  'integrations-retry-window-ms': ['INTEGRATIONS_RETRY_WINDOW_MS', 'integrations.retryWindowMs', 'integer'],
  'kafka-append-timeout-ms': ['KAFKA_APPEND_TIMEOUT_MS', 'kafka.appendTimeoutMs', 'integer'],
  'kafka-session-timeout-ms': ['KAFKA_SESSION_TIMEOUT_MS', 'kafka.sessionTimeoutMs', 'integer'],
  'kafka-throughput-wait-ms': ['KAFKA_THROUGHPUT_WAIT_MS', 'kafka.throughputWaitMs', 'integer'],
  'clickhouse-url': ['CLICKHOUSE_URL', 'clickhouseUrl', 'string'],
  'database-url': ['DATABASE_URL', 'databaseUrl', 'string'],
  'database-schema': ['DATABASE_SCHEMA', 'databaseSchema', 'string'],
  'registry-cache-ttl-ms': ['REGISTRY_CACHE_TTL_MS', 'registryCacheTtlMs', 'integer'],
  'clickhouse-database': ['CLICKHOUSE_DATABASE', 'clickhouseDatabase', 'string'],
  'state-rollups': ['STATE_ROLLUPS', 'stateRollups', 'string'],
  'topic-prefix': ['TOPIC_PREFIX', 'topicPrefix', 'string'],
  'lpwan-applications': ['LPWAN_APPLICATIONS_FILE', 'lpwanApplicationsFile', 'string'],
  partitions: ['PARTITIONS', 'engine.partitions', 'integer'],
  'passivate-after-ms': ['PASSIVATE_AFTER_MS', 'engine.passivateAfterMs', 'integer'],
  'mailbox-capacity': ['MAILBOX_CAPACITY', 'engine.mailboxCapacity', 'integer'],
  'max-in-flight': ['MAX_IN_FLIGHT', 'engine.maxInFlight', 'integer'],
  'batch-rows': ['BATCH_ROWS', 'engine.batchRows', 'integer'],
  'batch-delay-ms': ['BATCH_DELAY_MS', 'engine.batchDelayMs', 'integer'],
  'at-max-ahead-ms': ['AT_MAX_AHEAD_MS', 'uplinks.atMaxAheadMs', 'integer'],
  'at-min-ms': ['AT_MIN_MS', 'uplinks.atMinMs', 'integer'],
  'quota-devices': ['QUOTA_DEVICES', 'quotas.devices', 'integer'],
  'quota-states-per-second': ['QUOTA_STATES_PER_SECOND', 'quotas.statesPerSecond', 'integer'],
  'quota-retention-days': ['QUOTA_RETENTION_DAYS', 'quotas.retentionDays', 'integer'],
  'retention-sweep-ms': ['RETENTION_SWEEP_MS', 'retentionSweepMs', 'integer'],
  'audit-retention-days': ['AUDIT_RETENTION_DAYS', 'auditRetentionDays', 'integer'],
  'log-level': ['LOG_LEVEL', 'log.level', 'string'],
  'log-format': ['LOG_FORMAT', 'log.format', 'string'],
} as const satisfies Record<string, readonly [string, string, 'string' | 'integer' | 'number' | 'list' | 'workers']>;

export type SettingName = keyof typeof settings;

function convert(name: string, raw: string, kind: string): unknown {
  if (kind === 'workers' && raw.trim() === 'auto') return 'auto';
  if (kind === 'list') return raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (kind === 'integer' || kind === 'number' || kind === 'workers') {
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value)) throw new FleetError('VALIDATION_FAILED', `${name} must be a number (got '${raw}')`, { detail: { field: name } });
    return value;
  }
  return raw;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[keys[keys.length - 1]] = value;
}

export function loadConfig(flags: Partial<Record<SettingName, string>>, env: Record<string, string | undefined>): Config {
  const config = structuredClone(defaultConfig) as unknown as Record<string, unknown>;
  for (const [flag, [variable, path, kind]] of Object.entries(settings)) {
    const raw = flags[flag as SettingName] ?? env[variable];
    if (raw === undefined || raw === '') continue;
    setPath(config, path, convert(`--${flag} / ${variable}`, raw, kind));
  }
  return checkedConfig(config);
}

/** A whole configuration (as loadConfig builds it, or as a primary hands it to its workers), checked. */
export function checkedConfig(config: unknown): Config {
  if (!checkConfig.Check(config)) {
    const problems = [...checkConfig.Errors(config)].map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new FleetError('VALIDATION_FAILED', `invalid configuration: ${problems.join('; ')}`);
  }
  const mqtt = (config as unknown as Config).mqtt;
  if ((mqtt.tlsCertFile === undefined) !== (mqtt.tlsKeyFile === undefined)) {
    throw new FleetError('VALIDATION_FAILED', 'invalid configuration: --mqtt-tls-cert and --mqtt-tls-key go together', { detail: { field: 'mqtt.tlsCertFile' } });
  }
  const sql = (config as unknown as Config).sql;
  if (sql !== undefined && sql.port >= 0) {
    if (sql.password === undefined) {
      throw new FleetError('VALIDATION_FAILED', 'invalid configuration: the SQL listener (--sql-port) needs --sql-password / SQL_PASSWORD (16+ characters)', { detail: { field: 'sql.password' } });
    }
    if ((config as unknown as Config).clickhouseUrl !== undefined) {
      throw new FleetError('VALIDATION_FAILED', 'invalid configuration: --sql-port serves the embedded store (chDB); with --clickhouse-url query that ClickHouse server directly, as a read-only user (docs/analytics.md)', { detail: { field: 'sql.port' } });
    }
  }
  return config as unknown as Config;
}
