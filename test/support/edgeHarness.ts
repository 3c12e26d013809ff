/**
 * The HTTP edge over real HTTP on loopback, for the http-*.test.ts suites: a registry from a
 * factory (PGlite in memory, or PostgreSQL in its own schema when DATABASE_URL_TEST is set), the
 * local log in a temp dir behind the service's intake (app/buildIntake.ts: ingest, dead letters,
 * admission), an optional chDB store, and fetch helpers.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEdgeApp, type EdgeDeps } from '../../adapters/http/createEdgeApp.ts';
import { serveEdge, type ServedEdge } from '../../adapters/http/serveEdge.ts';
import { createLocalLog, type LocalLog } from '../../adapters/local-log/LocalLog.ts';
import { createPgliteRegistry } from '../../adapters/pglite/createPgliteRegistry.ts';
import { createPostgresRegistry } from '../../adapters/postgres/createPostgresRegistry.ts';
import { SimulatedClock } from '../../engine/kernel/clock.ts';
import { decodeEnvelope } from '../../engine/uplink/envelope.ts';
import type { ProducerRecord, RecordPosition } from '../../engine/ports/log.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { RegistryChanges } from '../../engine/ports/registryChanges.ts';
import { publishingRegistry } from '../../engine/access/publishingRegistry.ts';
import { InProcessRegistryChanges } from '../../adapters/registry-changes/InProcessRegistryChanges.ts';
import type { RejectionQuery, RejectionRow, RejectionStore } from '../../engine/ports/rejections.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { UplinkIngest } from '../../engine/uplink/UplinkIngest.ts';
import { buildIntake, type Intake } from '../../app/buildIntake.ts';
import { withEnv } from './suite.ts';
import type { UplinkEnvelope } from '../../schemas/messages.ts';
import { dropSchema } from './postgresSchema.ts';

export interface RegistryFactory {
  name: string;
  create(): Promise<{ registry: Registry; dispose(): Promise<void> }>;
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

/** Rejections kept in memory (the edge only reads them). */
export class MemoryRejections implements RejectionStore {
  rows: RejectionRow[] = [];
  async append(rows: readonly RejectionRow[]): Promise<void> {
    this.rows.push(...rows);
  }
  async recent(deviceId: string, options: RejectionQuery = {}): Promise<RejectionRow[]> {
    return this.rows
      .filter((r) => r.deviceId === deviceId && (options.before === undefined || r.rejectedAt < options.before))
      .filter((r) => options.channels === undefined || options.channels.includes(r.channel))
      .sort((a, b) => b.rejectedAt - a.rejectedAt)
      .slice(0, options.limit ?? 100);
  }
}

const emptyStore: Pick<StateStore, 'latest' | 'history' | 'aggregate'> = {
  latest: async () => [],
  history: async () => [],
  aggregate: async () => [],
};

export interface HarnessOptions {
  registry: Registry;
  store?: Pick<StateStore, 'latest' | 'history' | 'aggregate'>;
  limits?: EdgeDeps['limits'];
  /** Awaited before every append to topic `uplinks` (e.g. to stall the log or make it refuse). */
  beforeAppend?(): Promise<void>;
  /** Bound of the real UplinkIngest. */
  maxPending?: number;
  retryAfterSeconds?: number;
  /** Called for every device change on the harness's registry changes, after it is recorded in `changed`. */
  onDeviceChanged?(deviceId: string): void;
  /** The registry changes the edge follows and `registry` publishes on (default: in-process ones, closed with the harness). */
  changes?: RegistryChanges;
  /** Cached lookups' lifetime, ms (EdgeDeps.cacheTtlMs). */
  cacheTtlMs?: number;
  clockStart?: number;
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
  readonly log: LocalLog;
  readonly intake: Intake;
  readonly ingest: UplinkIngest;
  readonly rejections = new MemoryRejections();
  /** Envelopes the log confirmed durable, in append order. */
  readonly appended: UplinkEnvelope[] = [];
  /** Ids of devices the registry changes said were created, changed or deleted. */
  readonly changed: string[] = [];
  /** What the edge follows; `registry` publishes every change it makes here. */
  readonly changes: RegistryChanges;
  readonly #ownChanges: boolean;
  readonly errors: unknown[] = [];
  #dir: string;
  #server!: ServedEdge;
  base = '';

  private constructor(options: HarnessOptions, dir: string, log: LocalLog) {
    this.clock = new SimulatedClock(options.clockStart ?? Date.UTC(2025, 0, 1));
    this.#ownChanges = options.changes === undefined;
    this.changes = options.changes ?? new InProcessRegistryChanges();
    this.registry = publishingRegistry(options.registry, this.changes);
    this.unpublished = options.registry;
    this.changes.subscribe((change) => {
      if (change.kind !== 'device-changed' && change.kind !== 'device-deleted') return;
      this.changed.push(change.deviceId);
      options.onDeviceChanged?.(change.deviceId);
    });
    this.#dir = dir;
    this.log = log;
    const appended = this.appended;
    const counting = {
      async append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
        if (topic !== 'uplinks') return log.append(topic, records);
        await options.beforeAppend?.();
        const positions = await log.append(topic, records);
        for (const r of records) appended.push(decodeEnvelope(r.value));
        return positions;
      },
    };
    this.intake = buildIntake({
      log: counting, clock: this.clock, rejections: this.rejections,
      ingest: { maxPending: options.maxPending, retryAfterSeconds: options.retryAfterSeconds },
    });
    this.ingest = this.intake.ingest;
  }

  static async start(options: HarnessOptions): Promise<EdgeHarness> {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-edge-'));
    const log = createLocalLog({ dir: join(dir, 'log') });
    await log.ensureTopics([{ name: 'uplinks', partitions: 4 }, { name: 'dead-letters', partitions: 1 }]);
    const h = new EdgeHarness(options, dir, log);
    const app = createEdgeApp({
      registry: h.registry,
      changes: h.changes,
      cacheTtlMs: options.cacheTtlMs,
      admission: h.intake.admission,
      store: options.store ?? emptyStore,
      rejections: h.rejections,
      clock: h.clock,
      limits: options.limits,
      logger: { error: (message, fields) => h.errors.push({ message, ...fields }) },
    });
    h.#server = await serveEdge(app, { port: 0 });
    h.base = `http://127.0.0.1:${h.#server.port}`;
    return h;
  }

  async close(): Promise<void> {
    await this.#server.close();
    await this.intake.close();
    await this.log.close();
    if (this.#ownChanges) await this.changes.close();
    rmSync(this.#dir, { recursive: true, force: true });
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
