/**
 * The embedded stack with the LPWAN webhooks, over real HTTP on loopback, for the lpwan-*.test.ts
 * suites: PGlite registry, local log in a temp dir, the service's intake and engine (app/buildIntake.ts,
 * app/buildEngine.ts) and a state store — chDB, or rows kept in memory when a suite does not read
 * states back.
 */
import { randomBytes } from 'node:crypto';
import { createChdbStore } from '../../adapters/chdb/createChdbStore.ts';
import { createEdgeApp } from '../../adapters/http/createEdgeApp.ts';
import { serveEdge, type ServedEdge } from '../../adapters/http/serveEdge.ts';
import { createLocalLog, type LocalLog } from '../../adapters/local-log/LocalLog.ts';
import { createPgliteRegistry } from '../../adapters/pglite/createPgliteRegistry.ts';
import { systemClock } from '../../engine/kernel/clock.ts';
import { LpwanUplinkIntake } from '../../engine/lpwan/LpwanUplinkIntake.ts';
import { StaticLpwanApplications } from '../../engine/lpwan/StaticLpwanApplications.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import { registryDirectory } from '../../engine/ports/registry.ts';
import { publishingRegistry } from '../../engine/access/publishingRegistry.ts';
import { InProcessRegistryChanges } from '../../adapters/registry-changes/InProcessRegistryChanges.ts';
import type { UplinkPipeline } from '../../engine/uplink/pipeline/UplinkPipeline.ts';
import { buildEngine, type Engine } from '../../app/buildEngine.ts';
import { buildIntake, type Intake } from '../../app/buildIntake.ts';
import type { LpwanApplicationConfig } from '../../schemas/lpwan.ts';
import { Topics, type DeadLetter, type StateRow } from '../../schemas/messages.ts';
import { MemoryRejections, type Reply } from './edgeHarness.ts';
import { tempDir } from './tmp.ts';

export interface LpwanStackOptions {
  applications: LpwanApplicationConfig[];
  /** chDB (states readable over HTTP) or rows kept in `rows`. Default memory. */
  store?: 'chdb' | 'memory';
  maxBodyBytes?: number;
}

export interface Activated {
  deviceId: string;
  deviceToken: string;
  userToken: string;
}

const emptyReads: Pick<StateStore, 'latest' | 'history' | 'aggregate'> = {
  latest: async () => [],
  history: async () => [],
  aggregate: async () => [],
};

export class LpwanStack {
  readonly registry: Registry;
  readonly log: LocalLog;
  readonly rejections = new MemoryRejections();
  /** Every dead letter once durable (also those without a device). */
  readonly deadLetters: DeadLetter[] = [];
  /** Rows stored (memory store only). */
  readonly rows: StateRow[] = [];
  readonly engine: Engine;
  readonly intake: Intake;
  base = '';
  #server!: ServedEdge;
  #closers: (() => Promise<void>)[] = [];
  #tmp: { dir: string; remove(): void };

  private constructor(registry: Registry, log: LocalLog, tmp: { dir: string; remove(): void }, store: Pick<StateStore, 'append'>) {
    this.registry = registry;
    this.log = log;
    this.#tmp = tmp;
    const onDeadLetters = (letters: readonly DeadLetter[]) => { this.deadLetters.push(...letters); };
    this.engine = buildEngine({
      log, store, rejections: this.rejections, directory: registryDirectory(registry), clock: systemClock,
      settings: { commitIntervalMs: 20, batchDelayMs: 10 }, onDeadLetters,
    });
    this.intake = buildIntake({ log, clock: systemClock, rejections: this.rejections, onDeadLetters });
  }

  get pipeline(): UplinkPipeline {
    return this.engine.pipeline;
  }

  static async start(options: LpwanStackOptions): Promise<LpwanStack> {
    const tmp = tempDir('lpwan');
    // As the service opens it: every change published, the engine's device actors following them.
    const changes = new InProcessRegistryChanges();
    const registry = publishingRegistry(await createPgliteRegistry(), changes);
    const log = createLocalLog({ dir: `${tmp.dir}/log` });
    await log.ensureTopics([{ name: Topics.uplinks, partitions: 2 }, { name: Topics.deadLetters, partitions: 1 }]);
    let reads = emptyReads;
    let stack: LpwanStack;
    if (options.store === 'chdb') {
      const store = createChdbStore({ dir: `${tmp.dir}/chdb` });
      await store.init();
      reads = store;
      stack = new LpwanStack(registry, log, tmp, store);
      stack.#closers.push(() => store.close());
    } else {
      const rows: StateRow[] = [];
      stack = new LpwanStack(registry, log, tmp, { append: async (r) => { rows.push(...r); } });
      (stack as { rows: StateRow[] }).rows = rows;
    }
    await stack.engine.start();
    changes.subscribe((change) => {
      if (change.kind === 'device-changed' || change.kind === 'device-deleted') stack.pipeline.actors.invalidate(change.deviceId);
    });
    const applications = new StaticLpwanApplications({ applications: options.applications });
    const intake = new LpwanUplinkIntake({ devices: registry, admission: stack.intake.admission, clock: systemClock });
    const app = createEdgeApp({
      registry,
      admission: stack.intake.admission,
      store: reads,
      rejections: stack.rejections,
      clock: systemClock,
      changes,
      limits: { maxBodyBytes: options.maxBodyBytes },
      lpwan: { applications, intake },
    });
    stack.#server = await serveEdge(app, { port: 0, hostname: '127.0.0.1' });
    stack.base = `http://127.0.0.1:${stack.#server.port}`;
    return stack;
  }

  async close(): Promise<void> {
    await this.#server.close();
    await this.intake.close();
    await this.engine.stop();
    for (const close of this.#closers) await close();
    await this.log.close();
    await this.registry.close();
    this.#tmp.remove();
  }

  async request(method: string, path: string, options: { token?: string; json?: unknown; body?: string | Uint8Array; headers?: Record<string, string> } = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    let body = options.body;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(this.base + path, { method, headers, body });
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  /** A webhook post with the application's secret. */
  webhook(network: 'thethingsnetwork' | 'loriot', secret: string | undefined, body: unknown): Promise<Reply> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (secret !== undefined) headers.authorization = `Bearer ${secret}`;
    return this.request('POST', `/lpwan/${network}/uplink`, { headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  }

  /** See activateOverHttp. */
  activate(definition: Record<string, unknown>, network: { networkId: string; data: Record<string, unknown> }, hardwareId: string): Promise<Activated> {
    return activateOverHttp(this.base, this.registry, definition, network, hardwareId);
  }
}

/** A JSON request on the edge at `base`. */
export async function requestJson(base: string, method: string, path: string, options: { token?: string; json?: unknown } = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: options.json === undefined ? undefined : JSON.stringify(options.json) });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * A partner saves `definition` as a device type and creates an activation on `network`; a user
 * redeems it into a new ground — over the HTTP activation routes of the edge at `base` (the
 * option's `:latest` publishes the draft as version 1, spec §2.7).
 */
export async function activateOverHttp(
  base: string, registry: Registry, definition: Record<string, unknown>, network: { networkId: string; data: Record<string, unknown> }, hardwareId: string,
): Promise<Activated> {
  const tag = randomBytes(4).toString('hex');
  const partner = await registry.createPartner({ name: `partner-${tag}` });
  const user = await registry.createUser({ name: `user-${tag}` });
  const ground = await registry.createGround({ name: `ground-${tag}`, userId: user.entity.id });
  const pid = partner.entity.id;
  const saved = await requestJson(base, 'PUT', `/partner/${pid}/device-types/sensor-${tag}`, { token: partner.token, json: definition });
  if (saved.status !== 201) throw new Error(`device type: ${saved.status} ${saved.text}`);
  const created = await requestJson(base, 'POST', `/partner/${pid}/activations`, {
    token: partner.token,
    json: { description: 'lpwan test', hardware: { id: hardwareId }, options: [{ description: '', device: { type: `${pid}/sensor-${tag}` }, network }] },
  });
  if (created.status !== 201) throw new Error(`activation: ${created.status} ${created.text}`);
  const activated = await requestJson(base, 'POST', '/activate', {
    token: user.token,
    json: { code: created.json.code, option: created.json.options[0].id, groundId: ground.id },
  });
  if (activated.status !== 201) throw new Error(`activate: ${activated.status} ${activated.text}`);
  return { deviceId: activated.json.id, deviceToken: activated.json.token, userToken: user.token };
}
