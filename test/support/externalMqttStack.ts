/**
 * External broker mode against a real broker (Mosquitto on 127.0.0.1:1883 unless MQTT_URL_TEST
 * says otherwise): the service's ports in a temp dir (app/openPorts.ts: PGlite registry, local log,
 * chDB, the one registry lookup cache and change subscription), its engine into chDB
 * (app/buildEngine.ts), and any number of Fleetstream instances (app/buildEdges.ts
 * startExternalMqtt, each with the service's intake, app/buildIntake.ts) in one shared
 * subscription group unique to the run, so other users of the broker never take this run's uplinks.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { createConnection } from 'node:net';
import type { ExternalMqtt, ExternalMqttOptions } from '../../adapters/mqtt/external/createExternalMqtt.ts';
import { systemClock } from '../../engine/kernel/clock.ts';
import { silentLogger } from '../../engine/kernel/logger.ts';
import { decodeEnvelope } from '../../engine/uplink/envelope.ts';
import { FleetError } from '../../engine/kernel/errors.ts';
import { newId } from '../../engine/kernel/ids.ts';
import type { Log, ProducerRecord, RecordPosition } from '../../engine/ports/log.ts';
import { registryDirectory, type Registry } from '../../engine/ports/registry.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import type { UplinkIngest } from '../../engine/uplink/UplinkIngest.ts';
import { actorsFollowing, buildEngine, type Engine } from '../../app/buildEngine.ts';
import { startExternalMqtt, type ExternalMqttBounds } from '../../app/buildEdges.ts';
import { buildIntake, type Intake } from '../../app/buildIntake.ts';
import { openPorts, type Ports } from '../../app/openPorts.ts';
import { prepareDataDir } from '../../app/prepareDataDir.ts';
import type { UplinkPipeline } from '../../engine/uplink/pipeline/UplinkPipeline.ts';
import type { DeviceActors } from '../../engine/actors/DeviceActors.ts';
import type { Config } from '../../schemas/config.ts';
import type { DeadLetter, UplinkEnvelope } from '../../schemas/messages.ts';
import { MemoryRejections } from './edgeHarness.ts';
import { loopbackConfig } from './loopbackConfig.ts';
import type { SeededDevice } from './mqttStack.ts';
import { tempDir } from './tmp.ts';

export const BROKER_URL = process.env.MQTT_URL_TEST ?? 'mqtt://127.0.0.1:1883';

/** Whether the test broker answers (a TCP connect), so suites can say why they do not run. */
export async function brokerReachable(url = BROKER_URL): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname, port: Number(port || 1883) });
    socket.setTimeout(2000);
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => { socket.destroy(); resolve(false); });
  });
}

export interface Instance {
  mqtt: ExternalMqtt;
  /** Envelopes this instance appended to `uplinks`. */
  appended: UplinkEnvelope[];
  intake: Intake;
  ingest: UplinkIngest;
}

/** What an instance's configuration says, and the bounds of its client of the broker. */
export type InstanceOptions = Partial<ExternalMqttBounds & Pick<ExternalMqttOptions, 'shareGroup' | 'clientIdPrefix' | 'sessionExpirySeconds' | 'cacheTtlMs'>>;

export class ExternalStack {
  registry!: Registry;
  log!: Log;
  store!: StateStore;
  ports!: Ports;
  engine!: Engine;
  pipeline!: UplinkPipeline<DeviceActors>;
  readonly rejections = new MemoryRejections();
  /** Dead letters the instances recorded, also those of no device. */
  readonly deadLetters: DeadLetter[] = [];
  readonly instances: Instance[] = [];
  readonly group = `fstest-${process.pid}-${newId().slice(0, 8)}`;
  groundId = '';
  readonly #tmp = tempDir('mqtt-external');
  #config!: Config;
  readonly #clients: MqttClient[] = [];

  /** The broker this stack's instances and clients use. */
  url = BROKER_URL;

  static async start(options: { url?: string } = {}): Promise<ExternalStack> {
    const s = new ExternalStack();
    s.url = options.url ?? BROKER_URL;
    const config = s.#config = loopbackConfig(`${s.#tmp.dir}/data`);
    prepareDataDir(config.dataDir, silentLogger);
    s.ports = await openPorts({ config, clock: systemClock, logger: silentLogger });
    s.registry = s.ports.registry;
    s.log = s.ports.log;
    s.store = s.ports.store;
    s.engine = buildEngine({
      log: s.log, store: s.store, rejections: s.rejections, directory: registryDirectory(s.registry), clock: systemClock, names: s.ports.names,
      settings: { commitIntervalMs: 20, batchRows: 500, batchDelayMs: 10 },
      onStored: (stored) => { for (const i of s.instances) i.mqtt.publishStates(stored); },
    });
    s.pipeline = s.engine.pipeline;
    await s.engine.start();
    s.ports.registryChanges.add(actorsFollowing(s.pipeline));
    const user = await s.registry.createUser({ name: 'external user' });
    s.groundId = (await s.registry.createGround({ name: 'external ground', userId: user.entity.id })).id;
    return s;
  }

  /**
   * A Fleetstream instance in this run's group (`extra` sets what the configuration would: its
   * share group, client id prefix, session expiry and cache lifetime; and the client's bounds);
   * `failAppends` makes its first appends fail as an unavailable log would.
   */
  async instance(extra: InstanceOptions = {}, failAppends = 0): Promise<Instance> {
    const { shareGroup, clientIdPrefix, sessionExpirySeconds, cacheTtlMs, ...bounds } = extra;
    const config: Config = {
      ...this.#config,
      mqtt: { ...this.#config.mqtt, url: this.url, shareGroup: shareGroup ?? this.group, clientId: clientIdPrefix, sessionExpirySeconds },
      registryCacheTtlMs: cacheTtlMs ?? this.#config.registryCacheTtlMs,
    };
    const appended: UplinkEnvelope[] = [];
    const log = this.log;
    const { uplinks } = this.ports.names;
    let failures = failAppends;
    const intake = buildIntake({
      clock: systemClock,
      rejections: this.rejections,
      topics: this.ports.names,
      logger: silentLogger,
      onDeadLetters: (letters) => { this.deadLetters.push(...letters); },
      log: {
        async append(topic: string, records: ProducerRecord[]): Promise<RecordPosition[]> {
          if (failures > 0) {
            failures--;
            throw new FleetError('UNAVAILABLE', 'log unavailable');
          }
          const positions = await log.append(topic, records);
          if (topic === uplinks) for (const r of records) appended.push(decodeEnvelope(r.value));
          return positions;
        },
      },
    });
    const instance: Instance = {
      appended, intake, ingest: intake.ingest,
      mqtt: await startExternalMqtt({
        config, registry: this.registry, lookups: this.ports.lookups, admission: intake.admission, clock: systemClock, logger: silentLogger,
        external: { retryBaseMs: 20, offlineRetryMs: 200, ...bounds },
      }),
    };
    this.instances.push(instance);
    return instance;
  }

  async device(name: string, assets: { name: string; is?: 'sensor' | 'actuator'; profile?: Record<string, unknown> }[]): Promise<SeededDevice> {
    const created = await this.registry.createDevice({
      groundId: this.groundId, name,
      assets: assets.map((a) => ({ name: a.name, is: a.is ?? 'sensor', profile: a.profile ?? {} })),
    });
    const assetIds: Record<string, string> = {};
    for (const a of created.device.assets) assetIds[a.name] = a.id;
    return { deviceId: created.device.id, token: created.token, assetIds };
  }

  /** A plain client of the broker (a device, as the broker would have authenticated it). */
  async client(extra: IClientOptions = {}): Promise<MqttClient> {
    const client = await mqtt.connectAsync(this.url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5000, ...extra });
    this.#clients.push(client);
    return client;
  }

  async stop(): Promise<void> {
    await Promise.all(this.#clients.map((c) => c.endAsync(true).catch(() => undefined)));
    for (const i of this.instances) {
      await i.mqtt.close();
      await i.intake.close();
    }
    await this.engine.stop();
    await this.ports.close();
    this.#tmp.remove();
  }
}
