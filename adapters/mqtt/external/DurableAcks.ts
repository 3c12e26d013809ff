/**
 * PUBACKs of one subscriber connection sent when the uplink is durable, while the connection reads
 * on (external broker mode).
 *
 * mqtt.js takes a connection's packets one at a time: the next PUBLISH is read only once the
 * PUBACK of the previous one is written, and that PUBACK follows `handleMessage`'s callback. Holding
 * the callback until the log append is durable therefore allowed one uplink in flight per
 * connection, so the broker's per-client queue (Mosquitto: max_queued_messages 1000) filled under
 * load and the broker dropped what did not fit, after the devices had its PUBACK. Here the
 * callback is called at once and the PUBACK mqtt.js then writes is held until the uplink's work
 * settles: up to `limit` uplinks of a connection are appended together (and share a log write), and
 * the broker, told the same limit as MQTT 5 Receive Maximum in CONNECT, sends no more than that
 * unacknowledged. Past the limit the callback waits, which stops reading the socket (TCP
 * backpressure) instead of queueing in memory.
 *
 * mqtt.js (5.x) offers no public hook between "message handled" and "PUBACK written", so this wraps
 * the client's `_sendPacket`; `attach` refuses a client without one, and test/adapters/mqtt/mqtt-external.test.ts
 * checks that the PUBACK waits for durability, so an mqtt.js change that breaks this is seen.
 * A PUBACK held when the connection closes is not sent on the next one: the broker redelivers
 * that uplink to a resumed session (at least once) and forgets it with a clean one.
 */
import type { IPublishPacket, MqttClient, Packet } from 'mqtt';

type SendPacket = (packet: Packet, cb?: (error?: Error) => void, ...rest: unknown[]) => void;

export class DurableAcks {
  readonly #limit: number;
  /** Uplinks whose PUBACK waits, by message id, on the current connection. */
  readonly #held = new Map<number, Promise<void>>();
  /** Callbacks of handleMessage waiting for room under the limit. */
  readonly #waiting: (() => void)[] = [];
  readonly #send: SendPacket;
  readonly #client: MqttClient;
  /** Bumped when the connection closes: held PUBACKs of an older connection are not sent. */
  #connection = 0;
  #corked = false;

  private constructor(client: MqttClient, limit: number) {
    this.#client = client;
    this.#limit = limit;
    const internal = client as unknown as { _sendPacket: SendPacket };
    this.#send = internal._sendPacket.bind(client);
    internal._sendPacket = (packet, cb, ...rest) => {
      if (packet.cmd !== 'puback') return this.#send(packet, cb, ...rest);
      if (!this.#client.connected) {
        // mqtt.js would store it and send it on the next connection, where that message id may
        // name another uplink; the broker redelivers an unacknowledged uplink to a resumed session.
        cb?.();
        return;
      }
      const work = packet.messageId === undefined ? undefined : this.#held.get(packet.messageId);
      if (work === undefined) return this.#send(packet, cb, ...rest);
      const connection = this.#connection;
      // mqtt.js reads the next packet once this callback runs.
      cb?.();
      work.finally(() => {
        if (this.#held.get(packet.messageId!) === work) this.#held.delete(packet.messageId!);
        if (connection === this.#connection && this.#client.connected) this.#write(packet);
        this.#release();
      });
    };
    client.on('close', () => {
      this.#connection++;
      this.#held.clear();
      this.#release();
    });
  }

  /** Wraps `client` (an mqtt.js 5 client, before it connects); `limit` is its Receive Maximum. */
  static attach(client: MqttClient, limit: number): DurableAcks {
    if (typeof (client as unknown as { _sendPacket?: unknown })._sendPacket !== 'function') {
      throw new TypeError('DurableAcks: this mqtt.js version has no _sendPacket; PUBACKs could not wait for durability');
    }
    return new DurableAcks(client, limit);
  }

  /** Uplinks whose PUBACK is held now. */
  get held(): number {
    return this.#held.size;
  }

  /**
   * For handleMessage: the PUBACK of QoS 1 `packet` waits for `work`; `callback` (mqtt.js reads on)
   * runs now, or once fewer than `limit` PUBACKs are held.
   */
  hold(packet: IPublishPacket, work: Promise<void>, callback: () => void): void {
    this.#held.set(packet.messageId!, work.then(() => undefined, () => undefined));
    // Held uplinks whose callback already ran count against the limit; those waiting do not yet.
    if (this.#held.size - this.#waiting.length <= this.#limit) callback();
    else this.#waiting.push(callback);
  }

  /**
   * One log write makes many uplinks durable at once: their PUBACKs leave in one socket write
   * (corked until the end of this tick) instead of one each.
   */
  #write(packet: Packet): void {
    const stream = this.#client.stream;
    if (!this.#corked && stream !== undefined) {
      this.#corked = true;
      stream.cork();
      process.nextTick(() => {
        this.#corked = false;
        stream.uncork();
      });
    }
    this.#send(packet);
  }

  #release(): void {
    while (this.#waiting.length > 0 && this.#held.size - this.#waiting.length < this.#limit) this.#waiting.shift()!();
  }
}
