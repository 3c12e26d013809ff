/**
 * The two MQTT edges as the contract suites (test/contracts/mqttEdge.contract.ts,
 * commandTransport.contract.ts) see them: the embedded gateway (createMqttEdge, devices log in with
 * their token) and external broker mode on a Mosquitto of the world's own whose ACL plays the
 * broker's part (a device logs in with its id as user name and may use its own topics only, as
 * docs/mqtt.md asks of the operator). Both run the uplink pipeline into chDB and command actors on
 * topic `commands`. A third world reaches the embedded gateway through the command relay, as a
 * command owner in another process does.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { systemClock } from '../../engine/kernel/clock.ts';
import { CommandActors } from '../../engine/actors/CommandActors.ts';
import { Connectivity } from '../../engine/actors/Connectivity.ts';
import { CommandPipeline } from '../../engine/commands/CommandPipeline.ts';
import { DeliveryRelay } from '../../engine/commands/DeliveryRelay.ts';
import { RelayedTransport } from '../../engine/commands/RelayedTransport.ts';
import type { CommandTransport } from '../../engine/ports/commandTransport.ts';
import { registryDirectory, type Registry } from '../../engine/ports/registry.ts';
import type { StateStore } from '../../engine/ports/store.ts';
import { Topics, type UplinkEnvelope } from '../../schemas/messages.ts';
import type { MemoryRejections } from './edgeHarness.ts';
import { ExternalStack } from './externalMqttStack.ts';
import { MosquittoProcess } from './mosquittoProcess.ts';
import { MqttStack, type SeededDevice } from './mqttStack.ts';
import { waitFor } from './tmp.ts';

export type AssetSpec = { name: string; is?: 'sensor' | 'actuator'; profile?: Record<string, unknown> };

/** The sensors of device `thermo` in the MQTT edge suites: one of each value type a topic shape carries. */
export const THERMO_ASSETS: AssetSpec[] = [
  { name: 'temperature', profile: { type: 'number' } },
  { name: 'on', profile: { type: 'boolean' } },
  { name: 'label', profile: { type: 'string' } },
];

export interface MqttEdgeWorld {
  readonly registry: Registry;
  readonly store: StateStore;
  /** The devices' rejections, as admission and the edge record them. */
  readonly rejections: MemoryRejections;
  /** Uplinks appended to topic `uplinks`, in order. */
  readonly appended: readonly UplinkEnvelope[];
  /** MQTT protocol versions devices may use with this edge (4 = 3.1.1, 5). */
  readonly protocolVersions: readonly (4 | 5)[];
  /** What `delivered` waits for: the device's PUBACK, or the broker's (which then owns delivery). */
  readonly acknowledgedBy: 'device' | 'broker';
  /** The edge's command transport, with its ack timeout (ms). */
  readonly transport: CommandTransport;
  /**
   * Resolves once the transport knows that the device listens on a command topic: at once for a
   * transport that looks at the connections itself; the relayed one learns it from the edge's
   * presence record.
   */
  reachable?(deviceId: string): Promise<void>;
  readonly ackTimeoutMs: number;
  device(name: string, assets: AssetSpec[]): Promise<SeededDevice>;
  /**
   * A client speaking for `device`, logged in as the edge wants (closed by stop()); `onMessage`
   * listens from before the CONNACK (a resumed session may deliver at once).
   */
  connect(device: SeededDevice, extra?: IClientOptions, onMessage?: (topic: string, payload: Buffer) => void): Promise<MqttClient>;
  /** mosquitto_pub / mosquitto_sub arguments that log in as `device` (host, port, credentials). */
  cliArgs(device: SeededDevice): string[];
  /** Appends a command record to topic `commands`; returns its id. */
  command(deviceId: string, asset: string, value: unknown, at?: string): Promise<string>;
  commandStatus(deviceId: string, id: string): string | undefined;
  /**
   * From now until the returned function is called, deliveries to `client` get no acknowledgement
   * (the device withholds its PUBACK, or the broker stands still).
   */
  withholdAcks(client: MqttClient): () => void;
  stop(): Promise<void>;
}

const ACK_TIMEOUT_MS = 600;
let named = 0;
/** Device names are unique in a ground; the suites reuse theirs. */
const unique = (name: string) => `${name}-${++named}`;

class Commands {
  readonly actors: CommandActors;
  readonly pipeline: CommandPipeline;
  readonly log: ExternalStack['log'];
  #n = 0;
  constructor(log: ExternalStack['log'], registry: Registry, transport: CommandTransport, edges?: RelayedTransport) {
    this.log = log;
    this.actors = new CommandActors({ clock: systemClock, transport, retryBaseMs: 100, retryMaxMs: 1000 });
    this.pipeline = new CommandPipeline({ log, actors: this.actors, directory: registryDirectory(registry), clock: systemClock, commitIntervalMs: 50, edges });
  }
  async issue(deviceId: string, asset: string, value: unknown, at?: string): Promise<string> {
    const id = `cmd-${process.pid}-${++this.#n}-${Date.now()}`;
    const record = { id, deviceId, asset, value, issuer: 'app:contract', issuedAt: Date.now(), ...(at === undefined ? {} : { at }) };
    await this.log.append(Topics.commands, [{ key: deviceId, value: new TextEncoder().encode(JSON.stringify(record)) }]);
    return id;
  }
  status(deviceId: string, id: string): string | undefined {
    return this.actors.recent(deviceId).find((v) => v.id === id)?.status;
  }
  async stop(): Promise<void> {
    await this.pipeline.stop();
    this.actors.stop();
  }
}

/** Connects, with `onMessage` in place before the CONNACK. */
function connectTo(url: string, options: IClientOptions, onMessage: ((topic: string, payload: Buffer) => void) | undefined, clients: MqttClient[]): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options });
    clients.push(client);
    if (onMessage !== undefined) client.on('message', onMessage);
    client.once('connect', () => { client.off('error', reject); resolve(client); });
    client.once('error', reject);
  });
}

/** A device client that stops acknowledging: mqtt.js writes the PUBACK once handleMessage calls back. */
export function withholdDeviceAcks(client: MqttClient): () => void {
  const original = client.handleMessage;
  const held: (() => void)[] = [];
  client.handleMessage = (packet, callback) => { if (packet.qos > 0) held.push(() => callback()); else callback(); };
  return () => {
    client.handleMessage = original;
    for (const h of held.splice(0)) h();
  };
}

export async function embeddedWorld(): Promise<MqttEdgeWorld> {
  const s = await MqttStack.start({ pipeline: true, edge: { ackTimeoutMs: ACK_TIMEOUT_MS, maxRefusals: 1000 } });
  return gatewayWorld(s, s.edge.commands);
}

/**
 * A world on the embedded gateway of `s` whose command actors deliver through `transport`
 * (`relayed`: that transport is the relay's, fed presence and answers by the command pipeline).
 */
async function gatewayWorld(s: MqttStack, transport: CommandTransport, relayed?: { transport: RelayedTransport; reachable(deviceId: string): Promise<void>; stop(): Promise<void> }): Promise<MqttEdgeWorld> {
  const commands = new Commands(s.log, s.registry, transport, relayed?.transport);
  await commands.pipeline.start();
  const clients: MqttClient[] = [];
  return {
    registry: s.registry, store: s.store!, rejections: s.rejections, appended: s.appended,
    protocolVersions: [4], acknowledgedBy: 'device', transport, ackTimeoutMs: ACK_TIMEOUT_MS,
    ...(relayed === undefined ? {} : { reachable: relayed.reachable }),
    device: (name, assets) => s.device(unique(name), assets),
    connect: (device, extra = {}, onMessage) => connectTo(s.url, { username: device.token, password: device.token, ...extra }, onMessage, clients),
    cliArgs: (device) => ['-h', '127.0.0.1', '-p', String(s.edge.port), '-u', device.token, '-P', device.token],
    command: (deviceId, asset, value, at) => commands.issue(deviceId, asset, value, at),
    commandStatus: (deviceId, id) => commands.status(deviceId, id),
    withholdAcks: withholdDeviceAcks,
    async stop() {
      await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
      await commands.stop();
      await relayed?.stop();
      await s.stop();
    },
  };
}

/**
 * The embedded gateway reached as a device's command owner in another process reaches it: through
 * a RelayedTransport, requests on topic `command-deliveries`, the edge's DeliveryRelay, and its
 * answers and presence on topic `commands` (docs/scaling.md).
 */
export async function relayedWorld(): Promise<MqttEdgeWorld> {
  const s = await MqttStack.start({ pipeline: true, edge: { ackTimeoutMs: ACK_TIMEOUT_MS, maxRefusals: 1000 } });
  const connectivity = new Connectivity();
  const transport = new RelayedTransport({
    log: s.log, clock: systemClock, topic: Topics.commandDeliveries, connectivity, tracked: true,
    answerTimeoutMs: ACK_TIMEOUT_MS + 2000, partitionCount: () => s.log.partitionCount(Topics.commands),
  });
  const relay = new DeliveryRelay({
    log: s.log, clock: systemClock, edge: 'contract-edge', transport: s.edge.commands, shared: false, commitIntervalMs: 50,
    topics: { commands: Topics.commands, deliveries: Topics.commandDeliveries }, group: 'contract-deliveries',
  });
  await relay.start();
  return gatewayWorld(s, transport, {
    transport,
    reachable: (deviceId) => waitFor(() => connectivity.of(deviceId) !== undefined, 5000, `presence of ${deviceId}`),
    async stop() {
      transport.close();
      await relay.stop();
    },
  });
}

export async function externalWorld(): Promise<MqttEdgeWorld> {
  // The broker authenticates and authorises (docs/mqtt.md): Fleetstream reads and writes all,
  // a device (user name = its id) only its own topics.
  const broker = await MosquittoProcess.start({
    acl: ['pattern readwrite device/%u/#', 'user fleetstream', 'topic readwrite #', 'topic readwrite $share/#'],
  });
  const s = await ExternalStack.start({ url: `mqtt://fleetstream@127.0.0.1:${broker.port}` });
  const instance = await s.instance({ ackTimeoutMs: ACK_TIMEOUT_MS, connections: 4 });
  const commands = new Commands(s.log, s.registry, instance.mqtt.commands);
  await commands.pipeline.start();
  const clients: MqttClient[] = [];
  return {
    registry: s.registry, store: s.store, rejections: s.rejections, appended: instance.appended,
    protocolVersions: [4, 5], acknowledgedBy: 'broker', transport: instance.mqtt.commands, ackTimeoutMs: ACK_TIMEOUT_MS,
    async device(name, assets) {
      const device = await s.device(unique(name), assets);
      // Asset ids name no device in the topic; the operator's ACL lists them per device.
      await broker.allow([`user ${device.deviceId}`, ...Object.values(device.assetIds).flatMap((id) => [`topic write asset/${id}/state`, `topic read asset/${id}/command`])]);
      return device;
    },
    connect: (device, extra = {}, onMessage) => connectTo(broker.url, { username: device.deviceId, protocolVersion: 5, ...extra }, onMessage, clients),
    cliArgs: (device) => ['-h', '127.0.0.1', '-p', String(broker.port), '-u', device.deviceId],
    command: (deviceId, asset, value, at) => commands.issue(deviceId, asset, value, at),
    commandStatus: (deviceId, id) => commands.status(deviceId, id),
    withholdAcks() {
      broker.pause();
      return () => broker.resume();
    },
    async stop() {
      broker.resume();
      await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
      await commands.stop();
      await s.stop();
      await broker.stop();
    },
  };
}
