/**
 * The MQTT edge (DESIGN.md §2, spec §4.1–4.3): an Aedes broker inside the process. Devices connect
 * with username = device token (the password is not checked, as AllThingsTalk's SDKs send the token
 * twice); user tokens may connect to follow feeds. Decisions are engine/access/mqttTopics.ts; this file
 * wires them into Aedes' hooks.
 *
 * Publish path: topic ACL → payload check → UplinkIngest.append (durable in `uplinks`) → only then
 * does Aedes write the QoS 1 PUBACK. MQTT 3.1.1 has no negative PUBACK ([MQTT-3.3.5-2]: ack or
 * close), so a refused publish is acknowledged and dropped, its reason logged and recorded in the
 * device's rejections; after `maxRefusals` refusals the connection is closed. Uplinks are never
 * routed to subscribers: their topic is rewritten to a sink nobody may subscribe to.
 */
import { createServer, type Server } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { Aedes, type Client, type PublishPacket, type Subscription } from 'aedes';
import type { StateRow } from '../../schemas/messages.ts';
import { silentLogger } from '../../engine/kernel/logger.ts';
import { toFleetError } from '../../engine/kernel/errors.ts';
import type { Principal } from '../../engine/ports/registry.ts';
import { authorizeSubscription, authorizeUplink, feedTopic, parseFilter, uplinkContentType, type Refusal } from '../../engine/access/mqttTopics.ts';
import type { CommandTransport } from '../../engine/ports/commandTransport.ts';
import { AedesCommandTransport } from './AedesCommandTransport.ts';
import { RegistryLookups } from '../../engine/access/RegistryLookups.ts';
import type { MqttEdgeOptions } from './MqttEdgeOptions.ts';

export type { MqttEdgeOptions } from './MqttEdgeOptions.ts';

/** Where accepted uplinks are routed instead of their own topic; no filter a client may hold matches it. */
const SINK_TOPIC = '$SYS/fleetstream/uplink';

export interface MqttEdgeStats {
  accepted: number;
  refused: number;
  disconnected: number;
  /** Connections refused at CONNECT (unknown or partner token, registry unavailable). */
  connectionsRefused?: number;
  /** Clients connected now (read when asked). */
  readonly connected?: number;
}

export interface MqttEdge {
  /** The port listened on. */
  readonly port: number;
  readonly stats: MqttEdgeStats;
  /** Command delivery to connected devices (engine/commands). */
  readonly commands: CommandTransport;
  /** Publishes stored states as `{value, at}` on their feed topics (UplinkPipeline onStored). */
  publishStates(rows: readonly StateRow[]): void;
  close(): Promise<void>;
}

interface Connection {
  principal: Principal;
  refusals: number;
  /** Publishes of one connection are handled one after the other, so they reach the log in order. */
  chain: Promise<void>;
}

const AUTH_BAD_CREDENTIALS = 4;

export async function createMqttEdge(options: MqttEdgeOptions): Promise<MqttEdge> {
  const logger = options.logger ?? silentLogger;
  const maxPayload = options.maxPayloadBytes ?? 64 * 1024;
  const maxRefusals = options.maxRefusals ?? 10;
  const access = new RegistryLookups({ registry: options.registry, clock: options.clock, cacheTtlMs: options.cacheTtlMs ?? 2000 });
  const connections = new WeakMap<Client, Connection>();
  let broker: Awaited<ReturnType<typeof Aedes.createBroker>> | undefined;
  const stats: MqttEdgeStats = {
    accepted: 0, refused: 0, disconnected: 0, connectionsRefused: 0,
    get connected() { return broker?.connectedClients ?? 0; },
  };

  /**
   * A refusal of a device's publish or subscription is recorded as admission records its own, and
   * before it is answered, so a client that got its PUBACK/SUBACK finds it under its rejections.
   */
  const record = async (principal: Principal, refusal: Refusal, body: Uint8Array): Promise<void> => {
    if (principal.scope !== 'device') return;
    const submission = { channel: 'mqtt' as const, contentType: 'json' as const, deviceId: principal.subjectId, body };
    await options.admission.refuse(submission, { code: refusal.code, reason: refusal.reason })
      .catch((error: unknown) => logger.error('mqtt: recording a refusal failed', { error: toFleetError(error) }));
  };

  /** Counts a refusal; true when the connection has used up its allowance and must be closed. */
  const countRefusal = (client: Client, conn: Connection, refusal: Refusal, what: string): boolean => {
    stats.refused++;
    conn.refusals++;
    logger.warn('mqtt: refused', { clientId: client.id, scope: conn.principal.scope, subject: conn.principal.subjectId, what, code: refusal.code, reason: refusal.reason });
    if (conn.refusals > maxRefusals) {
      stats.disconnected++;
      return true;
    }
    return false;
  };

  /** A refusal the channel decided itself: recorded, then counted. */
  const refuse = async (client: Client, conn: Connection, refusal: Refusal, what: string, body = new Uint8Array(0)): Promise<boolean> => {
    await record(conn.principal, refusal, body);
    return countRefusal(client, conn, refusal, what);
  };

  const handlePublish = async (client: Client, conn: Connection, packet: PublishPacket): Promise<Error | null> => {
    const topic = packet.topic;
    const body = packet.payload instanceof Uint8Array ? packet.payload : Buffer.from(packet.payload);
    // Whatever the outcome, the message goes nowhere but the sink.
    packet.topic = SINK_TOPIC;
    packet.retain = false;
    const { principal } = conn;
    let device = principal.scope === 'device' ? await access.device(principal.subjectId) : undefined;
    let decision = authorizeUplink(principal, topic, device);
    if (!decision.ok && device !== undefined && (decision.code === 'UNKNOWN_ASSET' || decision.code === 'FORBIDDEN')) {
      // The asset may have been created after the cached copy was read.
      device = await access.device(device.id, true);
      decision = authorizeUplink(principal, topic, device);
    }
    if (!decision.ok) return await refuse(client, conn, decision, `publish ${topic}`) ? new Error(decision.reason) : null;
    const target = decision.value;
    const payload = uplinkContentType(target, body, maxPayload);
    if (!payload.ok) {
      const closing = await refuse(client, conn, payload, `publish ${topic}`);
      return closing ? new Error(payload.reason) : null;
    }
    let outcome;
    try {
      outcome = await options.admission.admit(device!, { channel: 'mqtt', contentType: payload.value, deviceId: target.deviceId, asset: target.asset, body: new Uint8Array(body) });
    } catch (error) {
      // Not acknowledged: closing makes the client resend its unacknowledged QoS 1 messages later.
      const failure = toFleetError(error, 'UNAVAILABLE');
      logger.warn('mqtt: uplink not accepted by the log; closing the connection', { clientId: client.id, code: failure.code });
      stats.disconnected++;
      return failure;
    }
    if (outcome.status === 'refused') {
      // Admission recorded it; here it only counts towards the connection's allowance.
      const first = outcome.rejections[0];
      const closing = countRefusal(client, conn, { ok: false, code: first.code, reason: first.reason }, `publish ${topic}`);
      return closing ? new Error(first.reason) : null;
    }
    stats.accepted++;
    return null;
  };

  const handleSubscribe = async (client: Client, conn: Connection, sub: Subscription): Promise<Subscription | null | Error> => {
    const { principal } = conn;
    const subject = parseFilter(sub.topic);
    let device;
    if (subject !== undefined && principal.scope !== 'partner') {
      if (subject.kind === 'device') {
        // A device token never learns whether another device exists.
        if (principal.scope === 'user' || subject.deviceId === principal.subjectId) device = await access.device(subject.deviceId);
      } else if (principal.scope === 'device') {
        device = await access.device(principal.subjectId);
        if (device !== undefined && !device.assets.some((a) => a.id === subject.assetId)) device = await access.device(principal.subjectId, true);
      } else {
        device = await access.deviceOfAsset(subject.assetId);
      }
    }
    const member = principal.scope === 'user' && device !== undefined ? await access.isMember(device.groundId, principal.subjectId) : false;
    const decision = authorizeSubscription(principal, sub.topic, device, member);
    if (decision.ok) return sub;
    return await refuse(client, conn, decision, `subscribe ${sub.topic}`) ? new Error(decision.reason) : null;
  };

  broker = await Aedes.createBroker({
    // Aedes' default would queue without bound for a client that authenticates slowly.
    queueLimit: 64,
    authenticate(client, username, _password, done) {
      access.principal(username).then((principal) => {
        if (principal === undefined || principal.scope === 'partner') {
          stats.connectionsRefused!++;
          const error = Object.assign(new Error('bad token'), { returnCode: AUTH_BAD_CREDENTIALS });
          logger.info('mqtt: connection refused', { clientId: client.id, reason: principal === undefined ? 'unknown token' : 'partner token' });
          done(error as never, false);
          return;
        }
        connections.set(client, { principal, refusals: 0, chain: Promise.resolve() });
        done(null, true);
      }, (error: unknown) => {
        stats.connectionsRefused!++;
        logger.error('mqtt: authentication failed', { error: toFleetError(error) });
        done(Object.assign(new Error('server unavailable'), { returnCode: 3 }) as never, false);
      });
    },
    authorizePublish(client, packet, done) {
      // Our own publishes (feeds, commands) come without a client.
      if (client === null) return done(null);
      const conn = connections.get(client);
      if (conn === undefined) return done(new Error('not authenticated'));
      const run = conn.chain.then(() => handlePublish(client, conn, packet));
      conn.chain = run.then(() => undefined, () => undefined);
      run.then((error) => done(error), (error: unknown) => {
        logger.error('mqtt: publish handling failed', { error: toFleetError(error) });
        done(error instanceof Error ? error : new Error(String(error)));
      });
    },
    authorizeSubscribe(client, sub, done) {
      const conn = connections.get(client);
      if (conn === undefined) return done(new Error('not authenticated'));
      handleSubscribe(client, conn, sub).then((result) => {
        if (result instanceof Error) done(result);
        else done(null, result);
      }, (error: unknown) => {
        logger.error('mqtt: subscribe handling failed', { error: toFleetError(error) });
        done(null, null);
      });
    },
  });

  const transport = new AedesCommandTransport({
    broker, clock: options.clock, ackTimeoutMs: options.ackTimeoutMs ?? 10_000,
    deviceOf: (client) => {
      const p = connections.get(client)?.principal;
      return p?.scope === 'device' ? p.subjectId : undefined;
    },
  });

  const onConnection = broker.handle as (socket: import('node:net').Socket) => void;
  const server: Server = options.tls === undefined
    ? createServer(onConnection)
    : createTlsServer({ cert: options.tls.cert as never, key: options.tls.key as never }, onConnection);
  const port = options.port ?? (options.tls === undefined ? 1883 : 8883);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, options.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;

  return {
    port: boundPort,
    stats,
    commands: transport,
    publishStates(rows) {
      for (const row of rows) {
        const payload = Buffer.from(JSON.stringify({ value: row.value, at: new Date(row.ts).toISOString() }));
        broker.publish({ cmd: 'publish', topic: feedTopic(row.deviceId, row.asset), payload, qos: 0, retain: false, dup: false }, () => undefined);
      }
    },
    async close() {
      transport.close();
      // The broker first: it ends every client connection, which lets the server close.
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
