/**
 * The HTTP edge over real HTTP on loopback, for the http-*.test.ts suites, composed as the service
 * composes it: the ports from app/openPorts.ts (a registry from a factory — PGlite in memory, or
 * PostgreSQL in its own schema when DATABASE_URL_TEST is set — made to publish its changes, the
 * process's one registry lookup cache and change subscription, the local log in a temp dir, a state
 * store in memory), the service's intake (app/buildIntake.ts) and its HTTP edge
 * (app/buildEdges.ts serveHttpEdge), all on a SimulatedClock; and fetch helpers.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { EdgeDeps } from '../../adapters/http/createEdgeApp.ts';
import type { ServedEdge } from '../../adapters/http/serveEdge.ts';
import { createPgliteRegistry } from '../../adapters/pglite/createPgliteRegistry.ts';
import { createPostgresRegistry } from '../../adapters/postgres/createPostgresRegistry.ts';
import { SimulatedClock } from '../../engine/kernel/clock.ts';
import { silentLogger, type Logger } from '../../engine/kernel/logger.ts';
import { decodeEnvelope } from '../../engine/uplink/envelope.ts';
import type { Log, ProducerRecord, RecordPosition } from '../../engine/ports/log.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { RegistryChanges } from '../../engine/ports/registryChanges.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { UplinkIngest } from '../../engine/uplink/UplinkIngest.ts';
import { serveHttpEdge } from '../../app/buildEdges.ts';
import { followGroundRates, type FollowedRates } from '../../app/groundRates.ts';
import { buildIntake, type Intake } from '../../app/buildIntake.ts';
import { openPorts, type Ports } from '../../app/openPorts.ts';
import { defaultConfig, type Config } from '../../schemas/config.ts';
import type { UplinkEnvelope } from '../../schemas/messages.ts';
import { withEnv } from './suite.ts';
import { dropSchema } from './postgresSchema.ts';
import { emptyReads, MemoryRejections, memoryServiceStore } from './memoryServiceStore.ts';
import { loopbackConfig } from './loopbackConfig.ts';
import { tempDir } from './tmp.ts';

export { MemoryRejections } from './memoryServiceStore.ts';

/** Where a PostgreSQL registry lives: the service then follows its changes over LISTEN/NOTIFY there. */
export interface RegistryDatabase {
  url: string;
  schema: string;
}

export interface RegistryFactory {
  name: string;
  create(): Promise<{ registry: Registry; dispose(): Promise<void>; database?: RegistryDatabase }>;
}

/**
 * `build` once per registry factory: PGlite always, PostgreSQL when DATABASE_URL_TEST names a
 * server; without it the PostgreSQL suite's tests count as skipped.
 */
export function suitePerRegistry<S>(label: string, build: (factory: RegistryFactory) => S): S[] {
  const suites = registryFactories().map(build);
  if (!process.env.DATABASE_URL_TEST) {
    // Registered as skips only: the stand-in's create is never called.
    const standIn: RegistryFactory = { name: 'postgres', create: () => Promise.reject(new Error('DATABASE_URL_TEST is not set')) };
    withEnv(`${label} on PostgreSQL`, ['DATABASE_URL_TEST'], 'a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/postgres', () => {
      suites.push(build(standIn));
    });
  }
  return suites;
}

/** PGlite always; PostgreSQL too when DATABASE_URL_TEST names a server. */
export function registryFactories(): RegistryFactory[] {
  const factories: RegistryFactory[] = [{
    name: 'pglite',
    async create() {
      const registry = await createPgliteRegistry();
      return { registry, dispose: () => registry.close() };
    },
  }];
  const url = process.env.DATABASE_URL_TEST;
  if (url) {
    factories.push({
      name: 'postgres',
      async create() {
        const schema = `edge_test_${process.pid}_${randomBytes(4).toString('hex')}`;
        const registry = await createPostgresRegistry({ url, schema, poolSize: 4 });
        return {
          registry,
          database: { url, schema },
          async dispose() {
            await registry.close();
            await dropSchema(url, schema);
          },
        };
      },
    });
  }
  return factories;
}

export interface HarnessOptions {
  /** As its adapter opened it (not publishing); the caller closes it. */
  registry: Registry;
  /** Where `registry` lives when it is PostgreSQL (RegistryFactory's `database`): changes then go over LISTEN/NOTIFY, announced by the database's transactions too. */
  database?: RegistryDatabase;
  store?: Pick<StateStore, 'latest' | 'history' | 'aggregate'>;
  limits?: EdgeDeps['limits'];
  /** Awaited before every append to topic `uplinks` (e.g. to stall the log or make it refuse). */
  beforeAppend?(): Promise<void>;
  /** Bound of the real UplinkIngest. */
  maxPending?: number;
  retryAfterSeconds?: number;
  /** Called for every device change on the harness's registry changes, after it is recorded in `changed`. */
  onDeviceChanged?(deviceId: string): void;
  /** The registry changes the edge follows and `registry` publishes on (default: the service's, closed with the harness). */
  changes?: RegistryChanges;
  /**
   * Cached lookups' lifetime, ms (the setting registryCacheTtlMs). Default 2000: the suites change
   * the registry behind the edge's back (`unpublished`), which only PostgreSQL announces.
   */
  cacheTtlMs?: number;
  clockStart?: number;
  /** The setting integrationsAllowHosts: where integrations may send although internal (a receiver on loopback). */
  integrationsAllowHosts?: string[];
}

/** The service's configuration for the harness: loopback HTTP with the suites' limits, 4 partitions. */
function harnessConfig(dataDir: string, options: HarnessOptions): Config {
  const limits: EdgeDeps['limits'] = options.limits ?? {};
  return loopbackConfig(dataDir, {
    http: {
      ...defaultConfig.http, host: '127.0.0.1', port: 0,
      maxBodyBytes: limits.maxBodyBytes ?? defaultConfig.http.maxBodyBytes,
      rateLimitPerSecond: limits.rateLimit?.perSecond ?? 0,
      rateLimitBurst: limits.rateLimit?.burst ?? defaultConfig.http.rateLimitBurst,
    },
    engine: { ...defaultConfig.engine, partitions: 4 },
    registryCacheTtlMs: options.cacheTtlMs ?? 2000,
    ...(options.integrationsAllowHosts === undefined ? {} : { integrationsAllowHosts: options.integrationsAllowHosts }),
    ...(options.database === undefined ? {} : { databaseUrl: options.database.url, databaseSchema: options.database.schema }),
  });
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: any;
}

export interface Seeded {
  userToken: string;
  userId: string;
  groundId: string;
  deviceId: string;
  deviceToken: string;
  assetIds: Record<string, string>;
}

export class EdgeHarness {
  readonly clock: SimulatedClock;
  /** Publishes every change it makes on `changes`, as the service's registry does. */
  readonly registry: Registry;
  /** The same registry without publishing: a change made by a process that never announced it. */
  readonly unpublished: Registry;
  readonly log: Log;
  /** The grounds' states per second, as an edge of the service keeps them (app/groundRates.ts). */
  readonly rates: FollowedRates;
  readonly intake: Intake;
  readonly ingest: UplinkIngest;
  /** The store's rejections: what the edge recorded, and what a suite appends itself. */
  readonly rejections: MemoryRejections;
  /** Envelopes the log confirmed durable, in append order. */
  readonly appended: UplinkEnvelope[] = [];
  /** Ids of devices the registry changes said were created, changed or deleted. */
  readonly changed: string[] = [];
  /** What the edge follows; `registry` publishes every change it makes here. */
  readonly changes: RegistryChanges;
  /** Errors the edge logged. */
  readonly errors: unknown[] = [];
  /** The ports the edge runs on (app/openPorts.ts). */
  readonly ports: Ports;
  readonly #tmp: { dir: string; remove(): void };
  #server!: ServedEdge;
  base = '';

  private constructor(options: HarnessOptions, ports: Ports, clock: SimulatedClock, tmp: { dir: string; remove(): void }, rejections: MemoryRejections) {
    this.clock = clock;
    this.rejections = rejections;
    this.ports = ports;
    this.#tmp = tmp;
    this.registry = ports.registry;
    this.unpublished = options.registry;
    this.changes = ports.changes;
    this.log = ports.log;
    // The process's one subscription to its changes (app/RegistryChangeFanOut.ts) tells the harness too.
    ports.registryChanges.add((change) => {
      if (change.kind !== 'device-changed' && change.kind !== 'device-deleted') return;
      this.changed.push(change.deviceId);
      options.onDeviceChanged?.(change.deviceId);
    });
    const log = ports.log;
    const { uplinks } = ports.names;
    const appended = this.appended;
    const counting = {
      async append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
        if (topic !== uplinks) return log.append(topic, records);
        await options.beforeAppend?.();
        const positions = await log.append(topic, records);
        for (const r of records) appended.push(decodeEnvelope(r.value));
        return positions;
      },
    };
    this.rates = followGroundRates(ports, clock);
    this.intake = buildIntake({
      log: counting, clock, rejections: this.rejections, topics: ports.names, logger: this.#logger(),
      ingest: { maxPending: options.maxPending, retryAfterSeconds: options.retryAfterSeconds },
      quota: this.rates.rates,
    });
    this.ingest = this.intake.ingest;
  }

  static async start(options: HarnessOptions): Promise<EdgeHarness> {
    const tmp = tempDir('edge');
    const clock = new SimulatedClock(options.clockStart ?? Date.UTC(2025, 0, 1));
    const config = harnessConfig(join(tmp.dir, 'data'), options);
    const rejections = new MemoryRejections();
    let ports: Ports;
    try {
      ports = await openPorts({
        config, clock, logger: silentLogger,
        given: { registry: options.registry, changes: options.changes, store: memoryServiceStore({ reads: options.store ?? emptyReads, rejections }) },
      });
    } catch (error) {
      tmp.remove();
      throw error;
    }
    const h = new EdgeHarness(options, ports, clock, tmp, rejections);
    try {
      await h.rates.start();
      h.#server = await serveHttpEdge({
        config, registry: ports.registry, lookups: ports.lookups, registryChanges: ports.registryChanges, store: ports.store, clock,
        logger: h.#logger(), admission: h.intake.admission, lpwanApplications: ports.lpwanApplications,
      });
    } catch (error) {
      await h.#closePorts();
      throw error;
    }
    h.base = `http://127.0.0.1:${h.#server.port}`;
    return h;
  }

  async close(): Promise<void> {
    await this.#server.close();
    await this.#closePorts();
  }

  async #closePorts(): Promise<void> {
    this.rates.stop();
    await this.intake.close();
    await this.ports.close();
    this.#tmp.remove();
  }

  /** Silent but for errors, which are kept in `errors`. */
  #logger(): Logger {
    const logger: Logger = { ...silentLogger, error: (message, fields) => this.errors.push({ message, ...fields }), child: () => logger };
    return logger;
  }

  async request(method: string, path: string, options: {
    token?: string;
    json?: unknown;
    body?: string | Uint8Array | ReadableStream<Uint8Array>;
    contentType?: string;
    headers?: Record<string, string>;
  } = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    let body = options.body;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    }
    if (options.contentType !== undefined) headers['content-type'] = options.contentType;
    const res = await fetch(this.base + path, { method, headers, body, duplex: 'half' } as RequestInit);
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  /** A user who is a member of a new ground holding one device with the given assets. */
  async seed(assets: { name: string; is?: 'sensor' | 'actuator' | 'virtual'; profile?: Record<string, unknown> }[] = [
    { name: 'temperature', profile: { type: 'number' } },
    { name: 'door', profile: { type: 'boolean' } },
  ]): Promise<Seeded> {
    const tag = randomBytes(4).toString('hex');
    const user = await this.registry.createUser({ name: `user-${tag}` });
    const ground = await this.registry.createGround({ name: `ground-${tag}`, userId: user.entity.id });
    const created = await this.registry.createDevice({
      groundId: ground.id,
      name: `device-${tag}`,
      assets: assets.map((a) => ({ name: a.name, is: a.is ?? 'sensor', profile: a.profile ?? {} })),
    });
    return {
      userToken: user.token,
      userId: user.entity.id,
      groundId: ground.id,
      deviceId: created.device.id,
      deviceToken: created.token,
      assetIds: Object.fromEntries(created.device.assets.map((a) => [a.name, a.id])),
    };
  }
}
