/**
 * The MQTT port of an embedded primary with edge workers (app/embeddedWorkers.ts). MQTT state lives
 * with a client id — its session, its subscriptions, the connection a newer one takes over — so
 * every connection of one client id must reach the same worker. The primary accepts each
 * connection, reads its first packet far enough to know the client id (bounded: at most
 * MAX_HEAD_BYTES, within the connect timeout), and hands the socket with what it read to the worker
 * that hash picks. What it cannot read (no CONNECT, a malformed one, an empty client id, a slow
 * client) goes to the next worker in turn, whose edge answers it as it answers any connection.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { partitionFor } from '../engine/ports/log.ts';

/** CONNECT's fixed and variable headers and a client id fit in far less; a longer head is not waited for. */
const MAX_HEAD_BYTES = 4096;

export interface MqttHandoff {
  readonly port: number;
  close(): Promise<void>;
}

export interface MqttHandoffOptions {
  host: string;
  port: number;
  /** How many workers there are; `handTo` gets an index below it. */
  workers(): number;
  /** Hands the socket and the bytes read from it to worker `index`; false when that worker is not there. */
  handTo(index: number, socket: Socket, head: Buffer): boolean;
  connectTimeoutMs: number;
}

/** The client id of a CONNECT at the start of `head`; undefined while more bytes are needed or when it is none. */
export function clientIdOf(head: Buffer): string | undefined | null {
  let pos = 0;
  const need = (n: number) => pos + n <= head.length;
  if (!need(1)) return undefined;
  if (head[pos++] !== 0x10) return null;
  // Remaining length: up to 4 bytes of 7 bits.
  for (let i = 0; ; i++) {
    if (!need(1)) return undefined;
    const byte = head[pos++];
    if ((byte & 0x80) === 0) break;
    if (i === 3) return null;
  }
  if (!need(2)) return undefined;
  const nameLength = head.readUInt16BE(pos);
  pos += 2 + nameLength;
  if (!need(4)) return undefined;
  const level = head[pos];
  pos += 4; // level, flags, keep alive
  if (level === 5) {
    let length = 0;
    for (let shift = 0; ; shift += 7) {
      if (!need(1)) return undefined;
      const byte = head[pos++];
      length += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) break;
      if (shift === 21) return null;
    }
    pos += length;
  }
  if (!need(2)) return undefined;
  const idLength = head.readUInt16BE(pos);
  pos += 2;
  if (!need(idLength)) return undefined;
  return idLength === 0 ? null : head.toString('utf8', pos, pos + idLength);
}

/**
 * Stops reading the socket where the bytes arrive, not only its 'data' events. A socket sent to a
 * worker leaves when the channel has no other handle in flight (node's child_process queues it
 * until the worker has acknowledged the one before: HTTP connections of the cluster's port and
 * other MQTT ones), and whatever this process read from it meanwhile would stay in this process's
 * buffer and be lost: a client that sends SUBSCRIBE or PUBLISH right after CONNECT, as MQTT allows,
 * lost them when many connected at once. Unread, they stay in the kernel for the worker. pause()
 * alone stops only the 'data' events: the stream goes on reading into its buffer.
 */
function stopReading(socket: Socket): void {
  socket.pause();
  // The stream would start reading again the next time it wants more (its _read): it gets none.
  socket._read = () => {};
  const handle = (socket as unknown as { _handle?: { reading?: boolean; readStop?(): number } | null })._handle;
  if (handle?.readStop === undefined || handle.reading === false) return;
  handle.reading = false;
  handle.readStop();
}

export function startMqttHandoff(options: MqttHandoffOptions): Promise<MqttHandoff> {
  let turn = 0;
  const hand = (socket: Socket, head: Buffer, clientId: string | null | undefined) => {
    socket.removeAllListeners('data');
    stopReading(socket);
    const count = options.workers();
    const first = clientId ? partitionFor(clientId, count) : turn++ % count;
    // The worker it maps to may be restarting: the next one takes it (its session starts afresh).
    for (let i = 0; i < count; i++) if (options.handTo((first + i) % count, socket, head)) return;
    socket.destroy();
  };
  /** Connections whose client id is being read (handed-over ones are the workers'). */
  const reading = new Set<Socket>();
  const server: Server = createServer({ pauseOnConnect: false }, (socket) => {
    let head: Buffer = Buffer.alloc(0);
    reading.add(socket);
    socket.once('close', () => reading.delete(socket));
    const timer = setTimeout(() => {
      reading.delete(socket);
      hand(socket, head, null);
    }, options.connectTimeoutMs);
    socket.on('error', () => {
      clearTimeout(timer);
      socket.destroy();
    });
    socket.on('data', (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const clientId = clientIdOf(head);
      if (clientId === undefined && head.length < MAX_HEAD_BYTES) return;
      clearTimeout(timer);
      reading.delete(socket);
      hand(socket, head, clientId);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address !== null ? address.port : options.port,
        // Not waiting for the server's close callback: it would wait for the sockets sent to workers.
        async close() {
          server.close();
          for (const socket of reading) socket.destroy();
          reading.clear();
        },
      });
    });
  });
}
