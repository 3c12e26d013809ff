/**
 * Process configuration (validated where the process is wired, bin/fleetstream.ts). Every field has
 * a default that runs everything embedded under `dataDir`; a URL switches a port to its distributed
 * adapter (DESIGN.md §2).
 */
import Type, { type Static } from 'typebox';
import { QuotaLimits } from './quotas.ts';

export const Role = Type.Union([Type.Literal('all'), Type.Literal('edge'), Type.Literal('engine')]);
export type Role = Static<typeof Role>;

export const Config = Type.Object({
  /** What this process runs: the HTTP edge, the engine (device actors), or both. */
  role: Role,
  /**
   * Edge processes sharing the HTTP and MQTT ports (role edge on Kafka, PostgreSQL and ClickHouse;
   * app/edgeWorkers.ts). `auto` (the default): one per core but one there, 1 elsewhere.
   */
  edgeWorkers: Type.Union([Type.Literal('auto'), Type.Integer({ minimum: 1, maximum: 256 })]),
  /** Embedded data: local log, chDB, PGlite. */
  dataDir: Type.String({ minLength: 1 }),
  http: Type.Object({
    host: Type.String(),
    port: Type.Integer({ minimum: 0, maximum: 65535 }),
    /** Largest accepted request body, bytes. */
    maxBodyBytes: Type.Integer({ minimum: 1 }),
    /** Sustained requests per second per token; 0 disables the limit. */
    rateLimitPerSecond: Type.Number({ minimum: 0 }),
    /** Requests a token may burst above the sustained rate. */
    rateLimitBurst: Type.Integer({ minimum: 1 }),
  }),
  mqtt: Type.Object({
    host: Type.String(),
    /** MQTT edge port (spec §4.1, §4.3); 0 picks a free port; -1 runs no MQTT edge. */
    port: Type.Integer({ minimum: -1, maximum: 65535 }),
    /** PEM certificate and key files: the embedded edge speaks MQTT over TLS. Both or neither. */
    tlsCertFile: Type.Optional(Type.String({ minLength: 1 })),
    tlsKeyFile: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * External broker (mqtt://user:pass@host:1883, MQTT 5): Fleetstream connects to it as a client
     * instead of running the embedded edge (host/port unused); the broker authenticates devices
     * (docs/mqtt.md). Unset: the embedded edge.
     */
    url: Type.Optional(Type.String({ minLength: 1 })),
    /** Shared subscription group of the instances splitting the broker's uplinks. Default 'fleetstream'. */
    shareGroup: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' })),
    /** Client id prefix of this instance at the external broker, stable and unique per instance when sessions persist. Default random. */
    clientId: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' })),
    /** External broker session expiry, seconds: 0 clean sessions; > 0 the broker keeps this instance's uplinks while it is away (docs/mqtt.md). */
    sessionExpirySeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 4294967295 })),
    /**
     * Lease of an embedded MQTT edge in the registry, ms, renewed every third of it: the sessions of
     * an edge that died without stopping (kill -9) count as connected until it lapses. Default 30 000.
     */
    edgeLeaseMs: Type.Optional(Type.Integer({ minimum: 300, maximum: 3_600_000 })),
  }),
  /**
   * GET /metrics (Prometheus). Metrics tell who is connected, from where and how much: they are
   * served on a listener of their own, loopback by default, not on the public API port.
   */
  metrics: Type.Object({
    host: Type.String(),
    /** Port of the metrics listener; 0 picks a free port; -1 runs no metrics listener. */
    port: Type.Integer({ minimum: -1, maximum: 65535 }),
    /**
     * When set, the HTTP port (the API, or the probes of role engine) serves GET /metrics too, to a
     * request bearing `Authorization: Bearer <token>`: for a Prometheus that reaches only that port.
     * An RFC 6750 token of at least 16 characters (`openssl rand -hex 32` makes one). Unset: the
     * HTTP port answers /metrics 404.
     */
    token: Type.Optional(Type.String({ minLength: 16, maxLength: 1024, pattern: '^[A-Za-z0-9._~+/-]+=*$' })),
  }),
  /**
   * The read-only SQL endpoint of the embedded store (docs/analytics.md): ClickHouse's HTTP
   * interface on a listener of its own, for analysts, Grafana and ClickHouse clients while the
   * service holds chDB's data directory. Off unless a port is given; it then needs `password`.
   * Not with `clickhouseUrl`: analysts query that server directly.
   */
  sql: Type.Optional(Type.Object({
    /** Address of the SQL listener; loopback by default. */
    host: Type.String(),
    /** Port of the SQL listener; 0 picks a free port; -1 (the default) runs none. */
    port: Type.Integer({ minimum: -1, maximum: 65535 }),
    /** The user name clients present (Basic auth, X-ClickHouse-User, `user`). Default `default`, as ClickHouse clients assume. */
    user: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.@-]+$' }),
    /** The operator's password for it (16+ characters, e.g. `openssl rand -hex 32`). */
    password: Type.Optional(Type.String({ minLength: 16, maxLength: 1024 })),
  })),
  commands: Type.Object({
    /** A command for a device that stays offline this long expires, ms. */
    expiryMs: Type.Integer({ minimum: 1 }),
    /** Commands queued per device before new ones are refused. */
    maxQueuePerDevice: Type.Integer({ minimum: 1 }),
  }),
  /**
   * Where integrations may send although the address is internal (loopback, private, link-local):
   * host names and CIDRs, comma separated (adapters/webhooks/OutboundPolicy.ts). Plain http:// goes
   * only to these. Unset: public https:// receivers only.
   */
  integrationsAllowHosts: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { maxItems: 1000 })),
  /**
   * Topic `events` on the embedded log: `auto` writes it only while an integration exists (its only
   * readers are the integrations), `on` always. With Kafka it is always written.
   */
  eventsTopic: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('on')])),
  /**
   * How long topic `events` keeps its records, read or not, hours (default 168: 7 days, Kafka's own
   * default). Set when Kafka creates the topic; the embedded log applies it at every start. An
   * integration that was behind by more (disabled, or its receiver away past the retry window)
   * counts what it missed as dropped.
   */
  eventsRetentionHours: Type.Optional(Type.Integer({ minimum: 1, maximum: 87_600 })),
  /** How integrations deliver (docs/integrations.md). */
  integrations: Type.Object({
    /** Events per request at most. */
    batchEvents: Type.Integer({ minimum: 1, maximum: 1000 }),
    /** Longest the first event of a batch waits for more before it is sent, ms. */
    batchLingerMs: Type.Integer({ minimum: 0, maximum: 60_000 }),
    /** How long a batch that keeps failing is retried before its events are counted as dropped, ms (24 h; at most 7 days). */
    retryWindowMs: Type.Integer({ minimum: 1000, maximum: 604_800_000 }),
  }),
  /** Kafka brokers (host:port, comma separated). Unset: the embedded local log. */
  kafkaBrokers: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  /** Kafka client settings (used only with kafkaBrokers). */
  kafka: Type.Object({
    /**
     * How long an append waits for Kafka's acknowledgement before it fails, ms: the edge answers an
     * uplink it could not append within this time with 503 + Retry-After. Unset: 30 000.
     */
    appendTimeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
    /**
     * How long the group waits for a silent engine before giving its partitions to the others, ms
     * (the broker's group.min/max.session.timeout.ms bound it, 6 000..1 800 000 by default). Unset: 30 000.
     */
    sessionTimeoutMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 3_600_000 })),
    /**
     * How long a fetch of the busy readers (the engine's uplinks, every edge's live feed) waits for
     * 64 KiB of records, ms: fewer, fuller fetches under load, at most this much added latency when
     * records trickle in. Unset: 5.
     */
    throughputWaitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  }),
  /** ClickHouse server HTTP URL. Unset: embedded chDB. */
  clickhouseUrl: Type.Optional(Type.String({ minLength: 1 })),
  /** PostgreSQL URL. Unset: embedded PGlite. */
  databaseUrl: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * PostgreSQL schema of the registry's tables (created when missing). Unset: the server's
   * search_path (normally `public`). Lets several deployments or test runs share one database.
   */
  databaseSchema: Type.Optional(Type.String({ pattern: '^[a-z_][a-z0-9_]{0,62}$' })),
  /**
   * How long the edges (HTTP, MQTT) reuse a token's principal, a device with its assets and a
   * membership, ms; 0 asks the registry every time. Registry changes drop what they touch at once
   * (docs/operations.md), so this only ages out quiet devices and bounds a feed cut off without
   * notice. Unset: 600 000 (on PostgreSQL every committed change is announced by its transaction).
   */
  registryCacheTtlMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
  /**
   * Per-minute, per-hour and per-day rollups of the states (docs/analytics.md), refreshed every
   * few seconds beside ingest and read by the aggregate API: `on` (the default) or `off`, where
   * aggregates scan raw states. Turned on again, they are rebuilt from every stored state at the
   * next start.
   */
  stateRollups: Type.Optional(Type.Union([Type.Literal('on'), Type.Literal('off')])),
  /** ClickHouse database of the states and rejections tables (chDB or server). Unset: `fleetstream`. */
  clickhouseDatabase: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$' })),
  /**
   * Put before every topic name (`uplinks`, `commands`, `dead-letters`) and consumer group name
   * (`fleetstream-engine`, `fleetstream-commands`), e.g. `staging.`: deployments sharing one Kafka
   * cluster stay apart. Unset: no prefix.
   */
  topicPrefix: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9._-]{0,200}$' })),
  /** JSON file of the LPWAN applications whose webhooks are accepted (schemas/lpwan.ts). Unset: none. */
  lpwanApplicationsFile: Type.Optional(Type.String({ minLength: 1 })),
  engine: Type.Object({
    /** Partitions of the `uplinks` topic (fixed once created). */
    partitions: Type.Integer({ minimum: 1, maximum: 1024 }),
    /** Idle time after which a device actor is passivated, ms. */
    passivateAfterMs: Type.Integer({ minimum: 1 }),
    /** Uplinks queued per device before its partition is paused. */
    mailboxCapacity: Type.Integer({ minimum: 1 }),
    /** Uplinks dispatched but not yet durable before all fetching pauses. */
    maxInFlight: Type.Integer({ minimum: 1 }),
    /** Rows per state-store insert. */
    batchRows: Type.Integer({ minimum: 1 }),
    /** Longest a row waits before its batch is inserted, ms. */
    batchDelayMs: Type.Integer({ minimum: 0 }),
  }),
  /**
   * The limits each new ground starts with (docs/grounds.md "Quotas"); the operator changes a
   * ground's with `fleetstream admin set-quota`. Unset: no limit of that kind.
   */
  quotas: QuotaLimits,
  /** How often each engine expires the states of grounds with a retention quota, ms. Unset: 3 600 000 (an hour). */
  retentionSweepMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 86_400_000 })),
  /** How long the grounds' audit logs keep an entry, days (docs/grounds.md "Audit log"); pruned by the engines at each retention sweep. Unset: 90. */
  auditRetentionDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 36_500 })),
  /** What admission accepts of an uplink (the same on every channel). */
  uplinks: Type.Object({
    /** How far a state's `at` (or an LPWAN network's receive time) may lie ahead of its receive time, ms. */
    atMaxAheadMs: Type.Integer({ minimum: 0 }),
    /** The earliest `at` accepted, epoch ms (0 = 1970-01-01T00:00:00Z). */
    atMinMs: Type.Integer({ minimum: 0 }),
  }),
  log: Type.Object({
    level: Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')]),
    /** json: one JSON object per line; text: lines for a person; auto: text on a terminal, json otherwise. */
    format: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('json'), Type.Literal('text')])),
  }),
});
export type Config = Static<typeof Config>;

export const defaultConfig: Config = {
  role: 'all',
  edgeWorkers: 'auto',
  dataDir: './data',
  http: { host: '0.0.0.0', port: 8080, maxBodyBytes: 64 * 1024, rateLimitPerSecond: 0, rateLimitBurst: 100 },
  mqtt: { host: '0.0.0.0', port: 1883 },
  // 9464: the port OpenTelemetry's Prometheus exporters listen on, free of the common services.
  metrics: { host: '127.0.0.1', port: 9464 },
  sql: { host: '127.0.0.1', port: -1, user: 'default' },
  commands: { expiryMs: 3_600_000, maxQueuePerDevice: 100 },
  integrations: { batchEvents: 100, batchLingerMs: 1000, retryWindowMs: 86_400_000 },
  kafka: {},
  engine: { partitions: 8, passivateAfterMs: 60_000, mailboxCapacity: 256, maxInFlight: 40_000, batchRows: 40_000, batchDelayMs: 100 },
  uplinks: { atMaxAheadMs: 86_400_000, atMinMs: 0 },
  quotas: {},
  log: { level: 'info' },
  stateRollups: 'on',
};
