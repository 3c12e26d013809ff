/**
 * The embedded stack with the LPWAN webhooks, over real HTTP on loopback, for the lpwan-*.test.ts
 * suites: the service's ports in a temp dir (app/openPorts.ts: PGlite registry, local log, chDB,
 * the applications file), its intake, engine and HTTP edge (app/buildIntake.ts, app/buildEngine.ts,
 * app/buildEdges.ts); the engine stores into chDB, or keeps rows in memory when a suite does not
 * read states back.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { ServedEdge } from '../../adapters/http/serveEdge.ts';
import { systemClock } from '../../engine/kernel/clock.ts';
import { silentLogger } from '../../engine/kernel/logger.ts';
import type { Log } from '../../engine/ports/log.ts';
import type { Registry } from '../../engine/ports/registry.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import { registryDirectory } from '../../engine/ports/registry.ts';
import type { UplinkPipeline } from '../../engine/uplink/pipeline/UplinkPipeline.ts';
import type { DeviceActors } from '../../engine/actors/DeviceActors.ts';
import { actorsFollowing, buildEngine, type Engine } from '../../app/buildEngine.ts';
import { serveHttpEdge } from '../../app/buildEdges.ts';
import { followGroundRates, type FollowedRates } from '../../app/groundRates.ts';
import { buildIntake, type Intake } from '../../app/buildIntake.ts';
import { openPorts, type Ports } from '../../app/openPorts.ts';
import { prepareDataDir } from '../../app/prepareDataDir.ts';
import { defaultConfig } from '../../schemas/config.ts';
import type { LpwanApplicationConfig } from '../../schemas/lpwan.ts';
import type { DeadLetter, StateRow } from '../../schemas/messages.ts';
import type { Reply } from './edgeHarness.ts';
import { loopbackConfig } from './loopbackConfig.ts';
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

export class LpwanStack {
  readonly registry: Registry;
  readonly log: Log;
  /** Every dead letter once durable (also those without a device). */
  readonly deadLetters: DeadLetter[] = [];
  /** Rows stored (memory store only). */
  readonly rows: StateRow[] = [];
  readonly engine: Engine;
  readonly intake: Intake;
  base = '';
  #server!: ServedEdge;
  /** The grounds' states per second, as an edge of the service keeps them (app/groundRates.ts). */
  readonly rates: FollowedRates;
  readonly #ports: Ports;
  #tmp: { dir: string; remove(): void };

  private constructor(ports: Ports, tmp: { dir: string; remove(): void }, store: 'chdb' | 'memory') {
    this.#ports = ports;
    this.registry = ports.registry;
    this.log = ports.log;
    this.#tmp = tmp;
    const onDeadLetters = (letters: readonly DeadLetter[]) => { this.deadLetters.push(...letters); };
    const rows: Pick<StateStore, 'append'> = store === 'chdb' ? ports.store : { append: async (r) => { this.rows.push(...r); } };
    this.engine = buildEngine({
      log: ports.log, store: rows, rejections: ports.store.rejections, directory: registryDirectory(ports.registry), clock: systemClock,
      names: ports.names, settings: { commitIntervalMs: 20, batchDelayMs: 10 }, onDeadLetters,
    });
    this.rates = followGroundRates(ports, systemClock);
    this.intake = buildIntake({ log: ports.log, clock: systemClock, rejections: ports.store.rejections, topics: ports.names, onDeadLetters, quota: this.rates.rates });
  }

  get pipeline(): UplinkPipeline<DeviceActors> {
    return this.engine.pipeline;
  }

  static async start(options: LpwanStackOptions): Promise<LpwanStack> {
    const tmp = tempDir('lpwan');
    const lpwanApplicationsFile = `${tmp.dir}/lpwan-applications.json`;
    writeFileSync(lpwanApplicationsFile, JSON.stringify({ applications: options.applications }));
    const config = loopbackConfig(`${tmp.dir}/data`, {
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0, maxBodyBytes: options.maxBodyBytes ?? defaultConfig.http.maxBodyBytes },
      lpwanApplicationsFile,
    });
    prepareDataDir(config.dataDir, silentLogger);
    const ports = await openPorts({ config, clock: systemClock, logger: silentLogger });
    const stack = new LpwanStack(ports, tmp, options.store ?? 'memory');
    await stack.rates.start();
    await stack.engine.start();
    ports.registryChanges.add(actorsFollowing(stack.pipeline));
    stack.#server = await serveHttpEdge({
      config, registry: ports.registry, lookups: ports.lookups, registryChanges: ports.registryChanges, store: ports.store,
      clock: systemClock, logger: silentLogger, admission: stack.intake.admission, lpwanApplications: ports.lpwanApplications,
    });
    stack.base = `http://127.0.0.1:${stack.#server.port}`;
    return stack;
  }

  async close(): Promise<void> {
    await this.#server.close();
    this.rates.stop();
    await this.intake.close();
    await this.engine.stop();
    await this.#ports.close();
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
