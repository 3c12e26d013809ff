/**
 * External broker mode keeps up with the broker and says when the broker drops (a Mosquitto of the
 * test's own, with small queue limits and a 1 s $SYS interval): a connection takes up to Receive
 * Maximum uplinks at once and acknowledges each only once it is durable; a broker that drops
 * acknowledged messages is logged and counted; a CONNACK that rules out durable uplinks refuses
 * start.
 */
import { createServer, type Socket } from 'node:net';
import { suite, unless } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import mqtt from 'mqtt';
import { createExternalMqtt, type ExternalMqtt } from '../../../adapters/mqtt/external/createExternalMqtt.ts';
import { systemClock } from '../../../engine/kernel/clock.ts';
import { FleetError } from '../../../engine/kernel/errors.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';
import type { AdmissionOutcome, UplinkAdmissionPort } from '../../../engine/ports/uplinkAdmission.ts';
import type { Registry } from '../../../engine/ports/registry.ts';
import type { UplinkSubmission } from '../../../engine/uplink/UplinkIngest.ts';
import { mosquittoMissing, MosquittoProcess } from '../../support/mosquittoProcess.ts';
import { waitFor } from '../../support/tmp.ts';

const DEVICE = { id: 'flowdevice', name: 'flow', groundId: 'g', assets: [{ id: 'flowasset', name: 't', is: 'sensor', profile: { type: 'number' } }] };
const registry = {
  authenticate: async () => undefined,
  memberRole: async () => undefined,
  getDevice: async (id: string) => (id === DEVICE.id ? DEVICE : undefined),
  getAssetById: async () => undefined,
} as unknown as Pick<Registry, 'authenticate' | 'getDevice' | 'getAssetById' | 'memberRole'>;

/** Admission whose appends wait until `release()`; records what it was handed. */
class HeldAdmission implements UplinkAdmissionPort {
  readonly admitted: string[] = [];
  readonly durable: string[] = [];
  #waiting: (() => void)[] = [];
  #open = false;
  async admit(_device: unknown, submission: UplinkSubmission): Promise<AdmissionOutcome> {
    const body = new TextDecoder().decode(submission.body);
    this.admitted.push(body);
    if (!this.#open) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.durable.push(body);
    return { status: 'accepted', uplinkId: 'u', receivedAt: 0, dropped: [] };
  }
  admitThen(device: unknown, submission: UplinkSubmission, done: (error: unknown, outcome?: AdmissionOutcome) => void): void {
    this.admit(device, submission).then((outcome) => done(undefined, outcome), done);
  }
  async refuse(): Promise<AdmissionOutcome> {
    return { status: 'refused', uplinkId: 'u', receivedAt: 0, rejections: [] };
  }
  release(): void {
    this.#open = true;
    for (const w of this.#waiting.splice(0)) w();
  }
}

function recordingLogger(): Logger & { lines: { level: string; message: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => { lines.push({ level, message, fields }); };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as never;
}

unless('mqtt-external-flow', mosquittoMissing(), () => {
  const flow = suite('external broker: flow control against a broker with small queues');
  let broker: MosquittoProcess;
  const opened: ExternalMqtt[] = [];
  const clients: mqtt.MqttClient[] = [];
  flow.before(async () => {
    // Queues far below the burst: what the broker cannot hand over at once it drops.
    broker = await MosquittoProcess.start({ settings: ['max_queued_messages 20', 'sys_interval 1'] });
  });
  flow.after.each(async () => {
    await Promise.all(clients.splice(0).map((c) => c.endAsync(true)));
    await Promise.all(opened.splice(0).map((m) => m.close()));
  });
  flow.after(async () => broker.stop());

  const device = async () => {
    const c = await mqtt.connectAsync(broker.url, { protocolVersion: 5, reconnectPeriod: 0 });
    clients.push(c);
    return c;
  };

  /** One connection of share group `shareGroup` into an admission that holds what it takes, and a device of the broker. */
  const heldOver = async (receiveMaximum: number, shareGroup: string) => {
    const admission = new HeldAdmission();
    const logger = recordingLogger();
    const m = await createExternalMqtt({ url: broker.url, registry, admission, clock: systemClock, connections: 1, receiveMaximum, shareGroup, logger });
    opened.push(m);
    return { admission, logger, m, d: await device() };
  };

  flow('a burst larger than the broker\'s queue reaches Fleetstream whole; every PUBACK waits for durability', async () => {
    const { admission, logger, m, d } = await heldOver(300, 'flow1');
    const burst = 250;
    for (let i = 0; i < burst; i++) await d.publishAsync(`device/${DEVICE.id}/asset/t/state`, `{"value":${i}}`, { qos: 1 });
    // One connection, nothing durable yet: all 250 are in Fleetstream's hands, none acknowledged.
    await waitFor(() => admission.admitted.length === burst, 10_000, `${burst} admitted while none is durable (${admission.admitted.length})`);
    assert.is(admission.durable.length, 0);
    admission.release();
    await waitFor(() => admission.durable.length === burst, 10_000, 'all durable');
    // Acknowledged: the broker does not redeliver them after a reconnect, and dropped none.
    await new Promise((r) => setTimeout(r, 2500));
    assert.is(admission.admitted.length, burst, 'each taken once');
    assert.is(m.stats.brokerDropped, 0, 'the broker dropped nothing');
    assert.is(m.stats.dropped, 0);
    assert.match(m.stats.brokerVersion ?? '', /mosquitto/);
    assert.ok(logger.lines.some((l) => l.level === 'warn' && /max_queued_messages/.test(l.message)), 'the Mosquitto settings warning at start');
  });

  flow('past Receive Maximum the broker holds back; when its queue overflows the drop is logged and counted', async () => {
    const { admission, logger, m, d } = await heldOver(10, 'flow2');
    for (let i = 0; i < 100; i++) await d.publishAsync(`device/${DEVICE.id}/asset/t/state`, `{"value":${i}}`, { qos: 1 });
    await new Promise((r) => setTimeout(r, 300));
    assert.is(admission.admitted.length, 10, 'no more than Receive Maximum unacknowledged at once');
    // 100 sent, 10 in flight, 20 queued: the broker dropped the rest and says so in $SYS.
    await waitFor(() => m.stats.brokerDropped >= 70, 5000, `drops counted (${m.stats.brokerDropped})`);
    assert.ok(logger.lines.some((l) => l.level === 'error' && /dropped/.test(l.message)), 'logged as an error');
    admission.release();
    await waitFor(() => admission.durable.length === 30, 5000, 'what the broker kept arrives');
  });

  flow.run();
});

// ---------------------------------------------------------------- CONNACK checks (scripted broker)
const connack = suite('external broker: CONNACK properties that rule out durable uplinks');

/** A TCP server answering every CONNECT with an MQTT 5 CONNACK carrying `properties` (bytes). */
async function scriptedBroker(properties: number[]): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('data', () => socket.write(Buffer.from([0x20, 3 + properties.length, 0x00, 0x00, properties.length, ...properties])));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `mqtt://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: async () => { for (const s of sockets) s.destroy(); await new Promise((r) => server.close(r)); },
  };
}

for (const [name, bytes, pattern] of [
  ['Shared Subscription Available = 0', [0x2a, 0x00], /Shared Subscription Available/],
  ['Maximum QoS = 0', [0x24, 0x00], /Maximum QoS/],
] as const) {
  connack(`${name} refuses start with UNAVAILABLE, not retriable`, async () => {
    const b = await scriptedBroker([...bytes]);
    try {
      const error = await createExternalMqtt({ url: b.url, registry, admission: new HeldAdmission(), clock: systemClock, connections: 1, reconnectPeriodMs: 60_000 })
        .then(() => undefined, (e: unknown) => e);
      assert.instance(error, FleetError);
      assert.is((error as FleetError).code, 'UNAVAILABLE');
      assert.is((error as FleetError).retriable, false);
      assert.match((error as FleetError).message, pattern);
    } finally {
      await b.close();
    }
  });
}

connack.run();
