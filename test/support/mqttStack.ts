/**
 * The embedded stack behind an MQTT edge, for the mqtt-*.test.ts suites, composed as the service
 * composes it: the ports from app/openPorts.ts (an in-memory PGlite registry made to publish its
 * changes, the process's one registry lookup cache and change subscription, the local log in a temp
 * dir), the service's intake (app/buildIntake.ts), the embedded MQTT edge (app/buildEdges.ts) on a
 * free loopback port, told every registry change, and optionally the engine (app/buildEngine.ts)
 * into chDB: one store for every stack of the process (chDB allows one data dir per process);
 * without the engine, a store in memory. mqtt.js clients connect to `url`.
 */
import mqtt, { type MqttClient } from 'mqtt';
import type { MqttEdge, MqttEdgeOptions } from '../../adapters/mqtt/gateway/createMqttEdge.ts';
import { createPgliteRegistry } from '../../adapters/pglite/createPgliteRegistry.ts';
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import { silentLogger } from '../../engine/kernel/logger.ts';
import { decodeEnvelope } from '../../engine/uplink/envelope.ts';
import type { Log, ProducerRecord, RecordPosition } from '../../engine/ports/log.ts';
import { registryDirectory, type Registry } from '../../engine/ports/registry.ts';
import type { RegistryChanges } from '../../engine/ports/registryChanges.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { UplinkIngest } from '../../engine/uplink/UplinkIngest.ts';
import type { UplinkPipeline } from '../../engine/uplink/pipeline/UplinkPipeline.ts';
import { actorsFollowing, buildEngine, type Engine } from '../../app/buildEngine.ts';
import { startEmbeddedMqttEdge } from '../../app/buildEdges.ts';
import { followGroundRates, type FollowedRates } from '../../app/groundRates.ts';
import { buildIntake, type Intake } from '../../app/buildIntake.ts';
import { openPorts, type Ports } from '../../app/openPorts.ts';
import type { DeadLetter, UplinkEnvelope } from '../../schemas/messages.ts';
import { MemoryRejections, memoryServiceStore } from './memoryServiceStore.ts';
import { loopbackConfig } from './loopbackConfig.ts';
import { acquireChdbStore, releaseChdbStore } from './sharedChdbStore.ts';
import { tempDir } from './tmp.ts';

export interface SeededDevice {
  deviceId: string;
  token: string;
  assetIds: Record<string, string>;
}

export interface StackOptions {
  pipeline?: boolean;
  clock?: Clock;
  /**
   * The embedded edge's bounds; `cacheTtlMs` is the setting registryCacheTtlMs, and `changes` the
   * registry changes the stack's registry publishes on and its process hears (the caller closes them).
   */
  edge?: Partial<Omit<MqttEdgeOptions, 'changes'>> & { changes?: RegistryChanges };
}

export class MqttStack {
  /** Publishes every change it makes, as the service's registry does. */
  registry!: Registry;
  log!: Log;
  ports!: Ports;
  intake!: Intake;
  /** The grounds' states per second, as an edge of the service keeps them (app/groundRates.ts). */
  rates!: FollowedRates;
  ingest!: UplinkIngest;
  engine: Engine | undefined;
  edge!: MqttEdge;
  /** The process's chDB store, when the stack runs the engine. */
  store: StateStore | undefined;
  pipeline: UplinkPipeline | undefined;
  readonly rejections = new MemoryRejections();
  readonly appended: UplinkEnvelope[] = [];
  readonly deadLetters: DeadLetter[] = [];
  userId = '';
  userToken = '';
  groundId = '';
  url = '';
  readonly #tmp = tempDir('mqtt');
  readonly #clients: MqttClient[] = [];
  readonly #closers: Array<() => Promise<unknown> | unknown> = [];

  static async start(options: StackOptions = {}): Promise<MqttStack> {
    const s = new MqttStack();
    try {
      await s.#start(options);
    } catch (error) {
      await s.stop();
      throw error;
    }
    return s;
  }

  async #start(options: StackOptions): Promise<void> {
    const clock = options.clock ?? systemClock;
    const { changes, cacheTtlMs, ...bounds } = options.edge ?? {};
    const config = loopbackConfig(`${this.#tmp.dir}/data`, { registryCacheTtlMs: cacheTtlMs });
    const raw = await createPgliteRegistry();
    this.#closers.push(() => raw.close());
    let store = memoryServiceStore({ rejections: this.rejections });
    if (options.pipeline) {
      store = this.store = await acquireChdbStore();
      this.#closers.push(() => releaseChdbStore());
    }
    const ports = this.ports = await openPorts({ config, clock, logger: silentLogger, given: { registry: raw, changes, store } });
    this.#closers.push(() => ports.close());
    this.registry = ports.registry;
    this.log = ports.log;
    const rates = this.rates = followGroundRates(ports, clock);
    await rates.start();
    this.#closers.push(() => rates.stop());
    this.intake = buildIntake({
      clock, rejections: this.rejections, topics: ports.names, logger: silentLogger,
      onDeadLetters: (letters) => { this.deadLetters.push(...letters); },
      log: this.#counting(ports),
      quota: rates.rates,
    });
    this.#closers.push(() => this.intake.close());
    this.ingest = this.intake.ingest;
    const edge = this.edge = await startEmbeddedMqttEdge({
      config, registry: ports.registry, lookups: ports.lookups, admission: this.intake.admission, clock, logger: silentLogger, embedded: bounds,
    });
    this.#closers.push(() => edge.close());
    // Connections of a revoked token, a deleted device or a user who left the ground close.
    ports.registryChanges.add((change) => edge.apply(change));
    this.url = `mqtt://127.0.0.1:${edge.port}`;
    if (options.pipeline) await this.#startEngine(ports);
    const user = await this.registry.createUser({ name: 'mqtt user' });
    this.userId = user.entity.id;
    this.userToken = user.token;
    this.groundId = (await this.registry.createGround({ name: 'mqtt ground', userId: this.userId })).id;
  }

  /** The log as the intake sees it: what it appends to `uplinks` is kept in `appended` once durable. */
  #counting(ports: Ports): Pick<Log, 'append'> {
    const { log, names } = ports;
    const appended = this.appended;
    return {
      async append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
        const positions = await log.append(topic, records);
        if (topic === names.uplinks) for (const r of records) appended.push(decodeEnvelope(r.value));
        return positions;
      },
    };
  }

  async #startEngine(ports: Ports): Promise<void> {
    const engine = this.engine = buildEngine({
      log: ports.log, store: ports.store, rejections: this.rejections, directory: registryDirectory(ports.registry), clock: systemClock,
      names: ports.names, settings: { commitIntervalMs: 20, batchRows: 500, batchDelayMs: 10 },
      onDeadLetters: (letters) => { this.deadLetters.push(...letters); },
      onStored: (stored) => this.edge.publishStates(stored),
    });
    this.pipeline = engine.pipeline;
    // Profiles changed while the stack runs reach its device actors, as in the service.
    ports.registryChanges.add(actorsFollowing(engine.pipeline));
    await engine.start();
    // Stopped first (closers run in reverse): it stores what the edge accepted.
    this.#closers.push(() => engine.stop());
  }

  async device(name: string, assets: { name: string; is?: 'sensor' | 'actuator' | 'virtual'; profile?: Record<string, unknown> }[]): Promise<SeededDevice> {
    const created = await this.registry.createDevice({
      groundId: this.groundId, name,
      assets: assets.map((a) => ({ name: a.name, is: a.is ?? 'sensor', profile: a.profile ?? {} })),
    });
    const assetIds: Record<string, string> = {};
    for (const a of created.device.assets) assetIds[a.name] = a.id;
    return { deviceId: created.device.id, token: created.token, assetIds };
  }

  /** A connected mqtt.js client (closed by stop()); username = password = token, as the SDKs do. */
  async connect(token: string, extra: mqtt.IClientOptions = {}): Promise<MqttClient> {
    const client = await mqtt.connectAsync(this.url, { username: token, password: token, reconnectPeriod: 0, connectTimeout: 5000, ...extra });
    this.#clients.push(client);
    return client;
  }

  async stop(): Promise<void> {
    await Promise.all(this.#clients.splice(0).map((c) => c.endAsync(true).catch(() => undefined)));
    for (const close of this.#closers.splice(0).reverse()) await close();
    this.#tmp.remove();
  }
}

/** SUBACK return codes for the filters (mqtt.js rejects when any is a failure; the codes are still wanted). */
/** The reason code a QoS 1 publish is answered with (mqtt.js rejects on ≥ 0x80; 0 when accepted). */
export async function pubackCode(client: MqttClient, topic: string, payload: Buffer, properties?: mqtt.IClientPublishOptions['properties']): Promise<number> {
  try {
    await client.publishAsync(topic, payload, { qos: 1, properties });
    return 0;
  } catch (error) {
    const code = (error as { code?: number }).code;
    if (typeof code !== 'number') throw error;
    return code;
  }
}

export async function subackCodes(client: MqttClient, filters: string | string[], qos: 0 | 1): Promise<number[]> {
  try {
    return (await client.subscribeAsync(filters, { qos })).map((g) => g.qos);
  } catch (error) {
    const packet = (error as { packet?: { granted?: number[] } }).packet;
    if (packet?.granted === undefined) throw error;
    return packet.granted;
  }
}
