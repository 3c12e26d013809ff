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
import type { Clock } from '../../engine/kernel/clock.ts';
import { FleetError, toFleetError } from '../../engine/kernel/errors.ts';
import type { HubEvent, LiveFilter } from '../../engine/live/LiveHub.ts';
import { LiveSubscription, type LiveCloseReason, type LiveFormat, type LiveTransport } from '../../engine/live/LiveSubscription.ts';
import type { Principal } from '../../engine/ports/registry.ts';
import { ID_PATTERN } from '../../schemas/registry.ts';
import { hashToken } from '../../engine/access/tokens.ts';
import type { EdgeAccess } from './EdgeAccess.ts';
import { kindsOf, type LiveConnections, type LiveSource } from './liveRoutes.ts';

export interface LiveSocketOptions {
  hub: LiveSource;
  access: Pick<EdgeAccess, 'authenticate' | 'device' | 'ground'>;
  clock: Clock;
  connections: LiveConnections;
  /** Largest client frame, bytes. Default 4 096. */
  maxPayloadBytes?: number;
  /** Time a new connection has to send `auth`, ms. Default 5 000. */
  authTimeoutMs?: number;
  /** Subscriptions per connection. Default 32. */
  maxSubscriptions?: number;
  /** Malformed or refused frames tolerated before the connection is closed. Default 10. */
  maxErrors?: number;
  /** Send-buffer bytes before a slow client is dropped. Default 1 MiB. */
  maxBufferedBytes?: number;
}

export interface LiveSocket {
  /** The Node server's `upgrade` handler: `/live` becomes a WebSocket, other paths get 404. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): Promise<void>;
}

const CLOSE_POLICY = 1008;
/** Client frames received and not handled yet, per connection. */
const MAX_QUEUED_FRAMES = 64;
const CLOSE_TRY_AGAIN = 1013;
const CLOSE_GOING_AWAY = 1001;
const ID = new RegExp(ID_PATTERN);

// Bytes, encoded once per event for every subscriber (`ws` would encode a string for each send).
const RESET = Buffer.from('{"type":"reset"}');
const OVERFLOW = Buffer.from('{"type":"overflow"}');
const WS_FORMAT: LiveFormat<Buffer> = {
  event: (e: HubEvent) => Buffer.from(`{"type":"${e.kind}","id":${JSON.stringify(e.id)},"data":${e.json}}`),
  reset: () => RESET,
  overflow: () => OVERFLOW,
};
/** Text messages (a Buffer would be sent as binary otherwise). */
const TEXT = { binary: false };

export function createLiveSocket(options: LiveSocketOptions): LiveSocket {
  const maxSubscriptions = options.maxSubscriptions ?? 32;
  const maxErrors = options.maxErrors ?? 10;
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayloadBytes ?? 4096, perMessageDeflate: false });

  wss.on('connection', (ws: WebSocket, release: () => void, socket: Duplex) => {
    let principal: Principal | undefined;
    let tokenHash = '';
    let errors = 0;
    let closed = false;
    const subscriptions = new Map<string, { subscription: LiveSubscription<Buffer>; unsubscribe(): void }>();
    const send = (frame: object) => { if (!closed) ws.send(JSON.stringify(frame)); };
    const fail = (error: unknown) => {
      const fleet = toFleetError(error);
      send({ type: 'error', code: fleet.code, detail: fleet.status >= 500 && fleet.code === 'INTERNAL' ? 'internal error' : fleet.message });
      if (++errors >= maxErrors) ws.close(CLOSE_POLICY, 'too many errors');
    };
    const transport: LiveTransport<Buffer> = {
      // Each event stays a message of its own (docs/live.md); the socket (the upgrade handler's, ws
      // writes its frames to it) is corked meanwhile so the messages leave in one write, as SSE
      // joins its frames.
      write: (frames) => {
        if (closed) return;
        socket.cork();
        for (const frame of frames) ws.send(frame, TEXT);
        socket.uncork();
      },
      buffered: () => ws.bufferedAmount,
      end: (reason: LiveCloseReason) => {
        if (reason === 'overflow') {
          ws.close(CLOSE_TRY_AGAIN, 'overflow');
          // A client that does not read would never complete the closing handshake.
          const cut = options.clock.setTimeout(() => ws.terminate(), 2_000);
          ws.once('close', () => cut.cancel());
        } else {
          ws.close(reason === 'forbidden' ? CLOSE_POLICY : CLOSE_GOING_AWAY, reason);
        }
      },
    };
    const authTimer = options.clock.setTimeout(() => {
      if (principal === undefined) { send({ type: 'error', code: 'UNAUTHORIZED', detail: 'no auth frame in time' }); ws.close(CLOSE_POLICY, 'auth timeout'); }
    }, options.authTimeoutMs ?? 5_000);

    ws.on('close', () => {
      closed = true;
      authTimer.cancel();
      for (const { subscription, unsubscribe } of subscriptions.values()) { subscription.detach(); unsubscribe(); }
      subscriptions.clear();
      release();
    });
    ws.on('error', () => undefined);

    // Frames are handled one at a time, in order: a subscribe's lookups finish before the next frame.
    let chain = Promise.resolve();
    let queued = 0;
    ws.on('message', (raw, isBinary) => {
      // Frames wait for the lookups of the ones before: a client may not pile them up meanwhile.
      if (++queued > MAX_QUEUED_FRAMES) {
        send({ type: 'error', code: 'RATE_LIMITED', detail: `more than ${MAX_QUEUED_FRAMES} frames waiting` });
        ws.close(CLOSE_POLICY, 'too many frames');
        return;
      }
      chain = chain.then(() => handle(raw.toString(), isBinary)).catch(fail).finally(() => { queued--; });
    });

    async function handle(text: string, isBinary: boolean): Promise<void> {
      if (closed) return;
      let frame: Record<string, unknown>;
      try {
        if (isBinary) throw new FleetError('BAD_REQUEST', 'frames are JSON text');
        const parsed: unknown = JSON.parse(text);
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new FleetError('MALFORMED_JSON', 'a frame is a JSON object');
        frame = parsed as Record<string, unknown>;
      } catch (error) {
        if (principal === undefined) { send({ type: 'error', code: 'UNAUTHORIZED', detail: 'the first frame must be {"type":"auth","token":…}' }); ws.close(CLOSE_POLICY, 'auth first'); return; }
        throw error instanceof FleetError ? error : new FleetError('MALFORMED_JSON', 'a frame is a JSON object');
      }
      if (principal === undefined) {
        if (frame.type !== 'auth' || typeof frame.token !== 'string') {
          send({ type: 'error', code: 'UNAUTHORIZED', detail: 'the first frame must be {"type":"auth","token":…}' });
          ws.close(CLOSE_POLICY, 'auth first');
          return;
        }
        try {
          principal = (await options.access.authenticate(`Bearer ${frame.token}`)).principal;
          tokenHash = hashToken(frame.token);
        } catch (error) {
          send({ type: 'error', code: 'UNAUTHORIZED', detail: toFleetError(error).message });
          ws.close(CLOSE_POLICY, 'unauthorized');
          return;
        }
        authTimer.cancel();
        send({ type: 'ready' });
        return;
      }
      if (frame.type === 'subscribe') return subscribe(principal, frame);
      if (frame.type === 'unsubscribe') {
        const key = keyOf(frame);
        const held = subscriptions.get(key);
        if (held === undefined) throw new FleetError('NOT_FOUND', `no subscription to ${key}`);
        held.subscription.detach();
        held.unsubscribe();
        subscriptions.delete(key);
        return;
      }
      if (frame.type === 'auth') throw new FleetError('CONFLICT', 'already authenticated');
      throw new FleetError('BAD_REQUEST', 'type must be auth, subscribe or unsubscribe');
    }

    async function subscribe(who: Principal, frame: Record<string, unknown>): Promise<void> {
      const key = keyOf(frame);
      if (subscriptions.has(key)) throw new FleetError('CONFLICT', `already subscribed to ${key}`);
      if (subscriptions.size >= maxSubscriptions) throw new FleetError('RATE_LIMITED', `at most ${maxSubscriptions} subscriptions per connection`);
      if (frame.kinds !== undefined && !Array.isArray(frame.kinds)) throw new FleetError('VALIDATION_FAILED', 'kinds must be an array');
      const kinds = kindsOf(frame.kinds as unknown[] | undefined, 'kinds');
      const lastEventId = frame.lastEventId;
      if (lastEventId !== undefined && typeof lastEventId !== 'string') throw new FleetError('VALIDATION_FAILED', 'lastEventId must be a string');
      let filter: LiveFilter;
      let groundId: string;
      if (typeof frame.device === 'string') {
        const device = await options.access.device(who, frame.device, 'read');
        filter = { deviceId: device.id, kinds };
        groundId = device.groundId;
      } else {
        groundId = (await options.access.ground(who, frame.ground as string)).id;
        filter = { groundId, kinds };
      }
      if (closed) return;
      const subscription = new LiveSubscription({ transport, format: WS_FORMAT, maxBufferedBytes: options.maxBufferedBytes });
      send({ type: 'subscribed', [filter.deviceId !== undefined ? 'device' : 'ground']: filter.deviceId ?? filter.groundId });
      const unsubscribe = options.hub.subscribe(filter, subscription, lastEventId, { subjectId: who.subjectId, tokenHash, groundId });
      subscriptions.set(key, { subscription, unsubscribe });
    }
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

/** `device:<id>` or `ground:<id>` of a subscribe/unsubscribe frame; ids shaped as registry ids. */
function keyOf(frame: Record<string, unknown>): string {
  const device = frame.device;
  const ground = frame.ground;
  if ((device === undefined) === (ground === undefined)) throw new FleetError('VALIDATION_FAILED', 'name exactly one of device and ground');
  const id = device ?? ground;
  if (typeof id !== 'string' || !ID.test(id)) throw new FleetError('BAD_REQUEST', 'device and ground are registry ids');
  return `${device !== undefined ? 'device' : 'ground'}:${id}`;
}
