/**
 * Live streams over a WebSocket at `GET /live` (docs/live.md, the `ws` server in noServer mode on
 * the HTTP edge's Node server). Client frames are JSON text: `auth` first (within `authTimeoutMs`),
 * then `subscribe` / `unsubscribe`; server frames are events, `error` with a stable code,
 * `overflow` and `reset`. Authorisation is the HTTP API's (EdgeAccess): a device token subscribes
 * to its own device, a user token to its grounds' devices and grounds.
 *
 * Hostile clients: frames over `maxPayloadBytes` close the socket (1009, by `ws`), anything before
 * `auth` or a refused token closes it with 1008, malformed frames get an `error` frame and after
 * `maxErrors` of them a 1008 close, as do more than 64 frames waiting to be handled; at most
 * `maxSubscriptions` per connection; a slow reader is sent
 * `overflow` and closed with 1013 once its send buffer passes `maxBufferedBytes`.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { LiveSocketConnection, type LiveSocketOptions } from './LiveSocketConnection.ts';

export type { LiveSocketOptions } from './LiveSocketConnection.ts';

export interface LiveSocket {
  /** The Node server's `upgrade` handler: `/live` becomes a WebSocket, other paths get 404. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): Promise<void>;
}

const CLOSE_GOING_AWAY = 1001;

export function createLiveSocket(options: LiveSocketOptions): LiveSocket {
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayloadBytes ?? 4096, perMessageDeflate: false });
  wss.on('connection', (ws: WebSocket, release: () => void, socket: Duplex) => {
    new LiveSocketConnection(ws, socket, release, options).listen();
  });

  return {
    upgrade(request, socket, head) {
      const path = (request.url ?? '').split('?')[0];
      if (path !== '/live') {
        socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        return;
      }
      let release: () => void;
      try {
        release = options.connections.take();
      } catch {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nretry-after: 5\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        return;
      }
      socket.on('error', () => undefined);
      wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, release, socket));
    },
    close: () => new Promise<void>((resolve) => {
      for (const client of wss.clients) client.close(CLOSE_GOING_AWAY, 'closing');
      // Clients that do not answer the close are cut.
      const cut = options.clock.setTimeout(() => { for (const client of wss.clients) client.terminate(); }, 1_000);
      wss.close(() => { cut.cancel(); resolve(); });
    }),
  };
}
