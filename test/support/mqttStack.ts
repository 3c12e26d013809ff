/**
 * The embedded stack behind an MQTT edge, for the mqtt-*.test.ts suites: PGlite registry, local log
 * in a temp dir, the service's intake (app/buildIntake.ts), optionally its engine into chDB
 * (app/buildEngine.ts), and the embedded MQTT edge on a free
 * loopback port. mqtt.js clients connect to `url`.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { createChdbStore } from '../../adapters/chdb/createChdbStore.ts';
import { createLocalLog, type LocalLog } from '../../adapters/local-log/LocalLog.ts';
import { createMqttEdge, type MqttEdge, type MqttEdgeOptions } from '../../adapters/mqtt/gateway/createMqttEdge.ts';
import { createPgliteRegistry } from '../../adapters/pglite/createPgliteRegistry.ts';
import { systemClock, type Clock } from '../../engine/kernel/clock.ts';
import { decodeEnvelope } from '../../engine/uplink/envelope.ts';
import type { ProducerRecord, RecordPosition } from '../../engine/ports/log.ts';
import { registryDirectory, type Registry } from '../../engine/ports/registry.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { UplinkIngest } from '../../engine/uplink/UplinkIngest.ts';
import type { UplinkPipeline } from '../../engine/uplink/pipeline/UplinkPipeline.ts';
import { buildEngine, type Engine } from '../../app/buildEngine.ts';
import { buildIntake, type Intake } from '../../app/buildIntake.ts';
import { Topics, type DeadLetter, type UplinkEnvelope } from '../../schemas/messages.ts';
import { MemoryRejections } from './edgeHarness.ts';
import { tempDir } from './tmp.ts';

export interface SeededDevice {
  deviceId: string;
  token: string;
  assetIds: Record<string, string>;
}

export interface StackOptions {
  pipeline?: boolean;
  clock?: Clock;
  edge?: Partial<MqttEdgeOptions>;
}

export class MqttStack {
  registry!: Registry;
  log!: LocalLog;
  intake!: Intake;
  ingest!: UplinkIngest;
  engine: Engine | undefined;
  edge!: MqttEdge;
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

  static async start(options: StackOptions = {}): Promise<MqttStack> {
    const s = new MqttStack();
    const clock = options.clock ?? systemClock;
    s.registry = await createPgliteRegistry();
    s.log = createLocalLog({ dir: `${s.#tmp.dir}/log` });
    await s.log.ensureTopics([{ name: Topics.uplinks, partitions: 2 }, { name: Topics.deadLetters, partitions: 1 }, { name: Topics.commands, partitions: 2 }]);
    const log = s.log;
    const appended = s.appended;
    s.intake = buildIntake({
      clock,
      rejections: s.rejections,
      onDeadLetters: (letters) => { s.deadLetters.push(...letters); },
      log: {
        async append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
          const positions = await log.append(topic, records);
          if (topic === Topics.uplinks) for (const r of records) appended.push(decodeEnvelope(r.value));
          return positions;
        },
      },
    });
    s.ingest = s.intake.ingest;
    s.edge = await createMqttEdge({ registry: s.registry, admission: s.intake.admission, clock, port: 0, host: '127.0.0.1', ...options.edge });
    s.url = `mqtt://127.0.0.1:${s.edge.port}`;
    if (options.pipeline) {
      s.store = createChdbStore({ dir: `${s.#tmp.dir}/chdb` });
      await s.store.init();
      s.engine = buildEngine({
        log, store: s.store, rejections: s.rejections, directory: registryDirectory(s.registry), clock: systemClock,
        settings: { commitIntervalMs: 20, batchRows: 500, batchDelayMs: 10 },
        onDeadLetters: (letters) => { s.deadLetters.push(...letters); },
        onStored: (stored) => s.edge.publishStates(stored),
      });
      s.pipeline = s.engine.pipeline;
      await s.engine.start();
    }
    const user = await s.registry.createUser({ name: 'mqtt user' });
    s.userId = user.entity.id;
    s.userToken = user.token;
    s.groundId = (await s.registry.createGround({ name: 'mqtt ground', userId: s.userId })).id;
    return s;
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
    await Promise.all(this.#clients.map((c) => c.endAsync(true).catch(() => undefined)));
    await this.engine?.stop();
    await this.edge.close();
    await this.intake.close();
    await this.log.close();
    await this.store?.close();
    await this.registry.close();
    this.#tmp.remove();
  }
}

/** SUBACK return codes for the filters (mqtt.js rejects when any is a failure; the codes are still wanted). */
export async function subackCodes(client: MqttClient, filters: string | string[], qos: 0 | 1): Promise<number[]> {
  try {
    return (await client.subscribeAsync(filters, { qos })).map((g) => g.qos);
  } catch (error) {
    const packet = (error as { packet?: { granted?: number[] } }).packet;
    if (packet?.granted === undefined) throw error;
    return packet.granted;
  }
}
